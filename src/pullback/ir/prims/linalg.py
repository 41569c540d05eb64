"""Dense products and linear solves with NumPy's stacking semantics: `matmul`,
`solve`, `slogdet`, and the helpers the decomposition rules of `decomp` share.

Contract:

- ``matmul(a, b)``: `np.matmul`. Operands of rank 1 are promoted (a row on the
  left, a column on the right) and the promoted axis dropped from the result;
  the leading (batch) axes of operands of rank > 2 broadcast. Ranks <= 2 keep
  the BLAS form on every backend; stacked operands loop over the batch
  (backends/libcalls/linalg.py).
- ``solve(a, b)``: ``a`` is ``(..., n, n)``; ``b`` is ``(n,)`` with a 2-D ``a``
  (a vector right-hand side), or ``(..., n, k)`` (its batch axes broadcast
  against ``a``'s). A stacked ``a`` with a vector ``b`` is reshaped by the
  frontend (NumPy's vector case) before it reaches the primitive.
- ``slogdet(a)``: ``(sign, log|det|)`` of ``(..., n, n)``, each of shape ``(...)``.

Every rule is written once for stacked operands from `matmul`, `mT` (swap the
last two axes), `solve` and broadcasting elementwise operations, so the rules
of stacked inputs are the 2-D rules applied per matrix. inv(A) = solve(A, I) and
det(A) = sign * exp(logabsdet) are frontend compositions.
"""
from __future__ import annotations

import numpy as np

from ..types import TensorType, promote
from . import TABLE, Row, check
from ._util import unbroadcast


# -- helpers shared with `decomp` -------------------------------------------------------

def batch_shape(t) -> tuple:
    return tuple(t.shape[:-2])


def nbatch(t) -> int:
    return int(np.prod(batch_shape(t), dtype=np.int64))


def mT(bd, x):
    """x with its last two axes swapped."""
    nd = x.type.ndim
    return bd.transpose(x, perm=tuple(range(nd - 2)) + (nd - 1, nd - 2))


def const_like(x, value):
    """A constant array with the dtype of atom `x`."""
    from ..core import Const

    value = np.asarray(value)
    return Const(value.astype(np.float32 if x.type.dtype == "f32" else np.float64),
                 TensorType(x.type.dtype, value.shape))


def eye_like(x, n):
    return const_like(x, np.eye(n))


def as_row(bd, v):
    """(..., k) -> (..., 1, k)."""
    s = tuple(v.type.shape)
    return bd.reshape(v, shape=s[:-1] + (1, s[-1]))


def as_col(bd, v):
    """(..., k) -> (..., k, 1)."""
    s = tuple(v.type.shape)
    return bd.reshape(v, shape=s + (1,))


def diag_part(bd, m):
    """The diagonal of each (..., k, k) matrix, shape (..., k)."""
    k = m.type.shape[-1]
    return bd.sum(bd.mul(m, eye_like(m, k)), axes=(m.type.ndim - 1,))


def diag_embed(bd, v):
    """(..., k) -> (..., k, k) with v on the diagonal."""
    k = v.type.shape[-1]
    return bd.mul(as_row(bd, v), eye_like(v, k))


def add_all(bd, terms):
    terms = [t for t in terms if t is not None]
    if not terms:
        return None
    out = terms[0]
    for t in terms[1:]:
        out = bd.add(out, t)
    return out


def square_float(t, what):
    check(t.ndim >= 2 and t.shape[-1] == t.shape[-2] and t.is_float,
          f"{what} needs a square float matrix or a stack of them, got {t}",
          hint=f"np.linalg.{what}(A) with A of shape (..., n, n)")


# -- matmul ---------------------------------------------------------------------------------

def _promoted(a, b):
    """Shapes of the operands as stacks of matrices (rank-1 operands promoted)."""
    sa = tuple(a.shape) if a.ndim >= 2 else (1,) + tuple(a.shape)
    sb = tuple(b.shape) if b.ndim >= 2 else tuple(b.shape) + (1,)
    return sa, sb


def _mm_type(ts):
    a, b = ts
    check(a.ndim >= 1 and b.ndim >= 1, f"matmul operands must not be scalars, got {a} and {b}",
          hint="use * for scalar multiplication")
    sa, sb = _promoted(a, b)
    check(sa[-1] == sb[-2], f"matmul: inner dimensions differ: {a.shape} @ {b.shape}",
          hint="the last dimension of the left operand must equal the second-to-last (or only) one of the right")
    try:
        batch = tuple(np.broadcast_shapes(sa[:-2], sb[:-2]))
    except ValueError:
        batch = None
    check(batch is not None, f"matmul: the stacked (batch) dimensions of {a.shape} and {b.shape} do not broadcast",
          hint="the leading dimensions of the operands must broadcast as in NumPy")
    shape = batch + ((sa[-2],) if a.ndim >= 2 else ()) + ((sb[-1],) if b.ndim >= 2 else ())
    return (TensorType(promote(a.dtype, b.dtype), shape),)


def _mm_cost(ts, outs):
    a, b = ts
    sa, _ = _promoted(a, b)
    return 2 * max(outs[0].size, 1) * sa[-1]


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


def _mm_vjp_2d(bd, a, b_, g, need):
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


def _fold_batch(bd, x, lead):
    """(batch..., r, c) -> (r, prod(batch) * c) when `lead` is "rows", or
    (prod(batch) * r, c) when it is "cols": the batch folded into one side of
    a 2-D product, so a stacked-by-unstacked product's cotangent is one BLAS call."""
    s = tuple(x.type.shape)
    nb = int(np.prod(s[:-2], dtype=np.int64))
    if lead == "cols":
        return bd.reshape(x, shape=(nb * s[-2], s[-1]))
    nd = len(s)
    xt = bd.transpose(x, perm=(nd - 2,) + tuple(range(nd - 2)) + (nd - 1,))
    return bd.reshape(xt, shape=(s[-2], nb * s[-1]))


def _mm_vjp(bd, args, outs, cts, need):
    a, b_ = args
    (g,) = cts
    ra, rb = a.type.ndim, b_.type.ndim
    if ra <= 2 and rb <= 2:
        return _mm_vjp_2d(bd, a, b_, g, need)
    # stacked: promote rank-1 operands, then the 2-D rules per matrix; a cotangent
    # is summed over the batch axes its operand was broadcast along
    sa, sb = _promoted(a.type, b_.type)
    a2 = a if ra >= 2 else bd.reshape(a, shape=sa)
    b2 = b_ if rb >= 2 else bd.reshape(b_, shape=sb)
    batch = tuple(np.broadcast_shapes(sa[:-2], sb[:-2]))
    g2 = bd.reshape(g, shape=batch + (sa[-2], sb[-1])) if (ra == 1 or rb == 1) else g
    ga = gb = None
    if need[0]:
        if len(sa) == 2 and tuple(sb[:-2]) == batch:   # unstacked a, stacked b: one 2-D product
            ga = bd.matmul(_fold_batch(bd, g2, "rows"), mT(bd, _fold_batch(bd, b2, "rows")))
        else:
            ga = unbroadcast(bd, bd.matmul(g2, mT(bd, b2)), TensorType(g.type.dtype, sa))
        if ra == 1:
            ga = bd.reshape(ga, shape=tuple(a.type.shape))
        if ga.type.dtype != a.type.dtype and a.type.is_float:
            ga = bd.cast(ga, dtype=a.type.dtype)
    if need[1]:
        if len(sb) == 2 and tuple(sa[:-2]) == batch:   # stacked a, unstacked b: one 2-D product
            gb = bd.matmul(mT(bd, _fold_batch(bd, a2, "cols")), _fold_batch(bd, g2, "cols"))
        else:
            gb = unbroadcast(bd, bd.matmul(mT(bd, a2), g2), TensorType(g.type.dtype, sb))
        if rb == 1:
            gb = bd.reshape(gb, shape=tuple(b_.type.shape))
        if gb.type.dtype != b_.type.dtype and b_.type.is_float:
            gb = bd.cast(gb, dtype=b_.type.dtype)
    return [ga, gb]


TABLE.add(Row("matmul", _mm_type, np.matmul, _mm_jvp, _mm_vjp, _mm_cost))


# -- solve and slogdet: the linear algebra the rest is built from (issue 10) ----------

def _solve_type(ts):
    a, b = ts
    square_float(a, "solve")
    n = a.shape[-1]
    if b.ndim == 1:
        check(a.ndim == 2 and b.shape[0] == n,
              f"solve: the right-hand side {b} does not match {a}",
              hint="a vector right-hand side goes with one matrix; for a stack, pass b of shape (..., n, 1)")
        return (TensorType(promote(a.dtype, b.dtype), b.shape),)
    check(b.ndim >= 2 and b.shape[-2] == n, f"solve: the right-hand side {b} does not match {a}",
          hint="b has shape (n,) or (..., n, k)")
    try:
        batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    except ValueError:
        batch = None
    check(batch is not None, f"solve: the stacked dimensions of {a} and {b} do not broadcast")
    return (TensorType(promote(a.dtype, b.dtype), batch + tuple(b.shape[-2:])),)


def _solve_cost(ts, outs):
    a = ts[0]
    n = a.shape[-1]
    k = 1 if outs[0].ndim == 1 else outs[0].shape[-1]
    nb = max(outs[0].size // max(n * k, 1), 1)
    return int(nb * (2 * n ** 3 // 3 + 2 * n * n * k))


def _solve_jvp(bd, args, tans, outs):
    """dX = A^-1 (dB - dA X)."""
    a, _ = args
    ta, tb = tans
    (x,) = outs
    rhs = tb
    if ta is not None:
        dax = bd.matmul(ta, x)
        rhs = bd.neg(dax) if rhs is None else bd.sub(rhs, dax)
    if rhs is not None and tuple(rhs.type.shape) != tuple(x.type.shape):
        rhs = bd.broadcast_to(rhs, shape=tuple(x.type.shape))
    return [None if rhs is None else bd.emit("solve", a, rhs)]


def _solve_vjp(bd, args, outs, cts, need):
    """G = A^-T ct; B's cotangent is G, A's is -G X^T (each summed over broadcast batch axes)."""
    a, b_ = args
    (x,) = outs
    (g,) = cts
    gx = bd.emit("solve", mT(bd, a), g)
    ga = None
    if need[0]:
        ga = bd.neg(_outer(bd, gx, x) if x.type.ndim == 1 else bd.matmul(gx, mT(bd, x)))
        ga = unbroadcast(bd, ga, a.type)
    return [ga, unbroadcast(bd, gx, b_.type) if need[1] else None]


TABLE.add(Row("solve", _solve_type, np.linalg.solve, _solve_jvp, _solve_vjp, _solve_cost))


def _slogdet_type(ts):
    (a,) = ts
    square_float(a, "slogdet")
    out = TensorType(a.dtype, batch_shape(a))
    return (out, out)


def _slogdet_impl(a):
    s, ld = np.linalg.slogdet(a)
    return s, ld


def inv_t(bd, a):
    """A^-T for each matrix of the stack, as solve(A^T, I)."""
    return bd.emit("solve", mT(bd, a), eye_like(a, a.type.shape[-1]))


def _slogdet_jvp(bd, args, tans, outs):
    """d log|det A| = tr(A^-1 dA) = sum(A^-T * dA); the sign is piecewise constant."""
    (a,) = args
    (ta,) = tans
    if ta is None:
        return [None, None]
    nd = a.type.ndim
    return [None, bd.sum(bd.mul(inv_t(bd, a), ta), axes=(nd - 2, nd - 1))]


def _slogdet_vjp(bd, args, outs, cts, need):
    (a,) = args
    _, g = cts
    if g is None or not need[0]:
        return [None]
    if a.type.ndim > 2:
        g = bd.reshape(g, shape=tuple(g.type.shape) + (1, 1))
    return [bd.mul(inv_t(bd, a), g)]


TABLE.add(Row("slogdet", _slogdet_type, _slogdet_impl, _slogdet_jvp, _slogdet_vjp,
              lambda ts, outs: int(max(nbatch(ts[0]), 1) * 2 * ts[0].shape[-1] ** 3 // 3), multi=True))
