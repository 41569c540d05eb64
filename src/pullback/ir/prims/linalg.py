"""matmul with NumPy semantics for operands of rank 1 or 2."""
from __future__ import annotations

import numpy as np

from ..types import TensorType, promote
from . import TABLE, Row, check


def _mm_type(ts):
    a, b = ts
    check(a.ndim in (1, 2) and b.ndim in (1, 2),
          f"matmul supports operands of rank 1 or 2, got {a} and {b}",
          hint="reshape batched operands, or loop over the batch")
    k1 = a.shape[-1]
    k2 = b.shape[0]
    check(k1 == k2, f"matmul: inner dimensions differ: {a.shape} @ {b.shape}",
          hint="the last dimension of the left operand must equal the first of the right one")
    shape = a.shape[:-1] + b.shape[1:]
    return (TensorType(promote(a.dtype, b.dtype), shape),)


def _mm_cost(ts, outs):
    return 2 * ts[0].size * (ts[1].size // ts[1].shape[0])


def _outer(b, u, v):
    return b.mul(b.reshape(u, shape=(u.type.shape[0], 1)), b.reshape(v, shape=(1, v.type.shape[0])))


def _mm_jvp(bd, args, tans, outs):
    a, b_ = args
    ta, tb = tans
    terms = []
    if ta is not None:
        terms.append(bd.matmul(ta, b_))
    if tb is not None:
        terms.append(bd.matmul(a, tb))
    return [terms[0] if len(terms) == 1 else bd.add(*terms)]


def _mm_vjp(bd, args, outs, cts, need):
    a, b_ = args
    (g,) = cts
    ga = gb = None
    ra, rb = a.type.ndim, b_.type.ndim
    if need[0]:
        if ra == 2 and rb == 2:
            ga = bd.matmul(g, bd.transpose(b_, perm=(1, 0)))
        elif ra == 1 and rb == 2:
            ga = bd.matmul(b_, g)
        elif ra == 2 and rb == 1:
            ga = _outer(bd, g, b_)
        else:
            ga = bd.mul(g, b_)
    if need[1]:
        if ra == 2 and rb == 2:
            gb = bd.matmul(bd.transpose(a, perm=(1, 0)), g)
        elif ra == 1 and rb == 2:
            gb = _outer(bd, a, g)
        elif ra == 2 and rb == 1:
            gb = bd.matmul(g, a)
        else:
            gb = bd.mul(g, a)
    return [ga, gb]


TABLE.add(Row("matmul", _mm_type, np.matmul, _mm_jvp, _mm_vjp, _mm_cost))


# -- solve and slogdet: the linear algebra the rest is built from (issue 10) ----------
# inv(A) = solve(A, I), det(A) = sign * exp(logabsdet): frontend compositions.

def _solve_type(ts):
    a, b = ts
    check(a.ndim == 2 and a.shape[0] == a.shape[1] and a.is_float,
          f"solve needs a square float matrix, got {a}", hint="np.linalg.solve(A, b) with A of shape (n, n)")
    check(b.ndim in (1, 2) and b.shape[0] == a.shape[0],
          f"solve: the right-hand side {b} does not match {a}", hint="b has shape (n,) or (n, k)")
    return (TensorType(promote(a.dtype, b.dtype), b.shape),)


def _solve_cost(ts, outs):
    n = ts[0].shape[0]
    k = ts[1].size // n
    return int(2 * n ** 3 // 3 + 2 * n * n * k)


def _solve_jvp(bd, args, tans, outs):
    """dX = A^-1 (dB - dA X)."""
    a, _ = args
    ta, tb = tans
    (x,) = outs
    rhs = tb
    if ta is not None:
        dax = bd.matmul(ta, x)
        rhs = bd.neg(dax) if rhs is None else bd.sub(rhs, dax)
    return [None if rhs is None else bd.emit("solve", a, rhs)]


def _solve_vjp(bd, args, outs, cts, need):
    """G = A^-T ct; B's cotangent is G, A's is -G X^T."""
    a, _ = args
    (x,) = outs
    (g,) = cts
    gb = bd.emit("solve", bd.transpose(a, perm=(1, 0)), g)
    ga = None
    if need[0]:
        ga = bd.neg(_outer(bd, gb, x) if x.type.ndim == 1 else bd.matmul(gb, bd.transpose(x, perm=(1, 0))))
    return [ga, gb if need[1] else None]


TABLE.add(Row("solve", _solve_type, np.linalg.solve, _solve_jvp, _solve_vjp, _solve_cost))


def _slogdet_type(ts):
    (a,) = ts
    check(a.ndim == 2 and a.shape[0] == a.shape[1] and a.is_float,
          f"slogdet needs a square float matrix, got {a}")
    return (TensorType(a.dtype, ()), TensorType(a.dtype, ()))


def _slogdet_impl(a):
    s, ld = np.linalg.slogdet(a)
    return s, ld


def _inv_t(bd, a):
    """A^-T, as solve(A^T, I)."""
    from ..core import Const

    n = a.type.shape[0]
    eye = Const(np.eye(n), TensorType(a.type.dtype, (n, n)))
    return bd.emit("solve", bd.transpose(a, perm=(1, 0)), eye)


def _slogdet_jvp(bd, args, tans, outs):
    """d log|det A| = tr(A^-1 dA) = sum(A^-T * dA); the sign is piecewise constant."""
    (a,) = args
    (ta,) = tans
    if ta is None:
        return [None, None]
    return [None, bd.sum(bd.mul(_inv_t(bd, a), ta), axes=(0, 1))]


def _slogdet_vjp(bd, args, outs, cts, need):
    (a,) = args
    _, g = cts
    if g is None or not need[0]:
        return [None]
    return [bd.mul(_inv_t(bd, a), g)]


TABLE.add(Row("slogdet", _slogdet_type, _slogdet_impl, _slogdet_jvp, _slogdet_vjp,
              lambda ts, outs: int(2 * ts[0].shape[0] ** 3 // 3), multi=True))
