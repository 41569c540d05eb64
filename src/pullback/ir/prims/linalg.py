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
