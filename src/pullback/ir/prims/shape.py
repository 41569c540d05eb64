"""Shape primitives: reshape, transpose, broadcast_to, concatenate, iota, full.

Shapes a primitive creates are checked (`check_shape`): non-negative integer
extents, at most `MAX_NDIM` dimensions and fewer than 2**62 bytes, so a bad or
absurd shape is a `ShapeError` at the user's line, not a NumPy error at run time.
"""
from __future__ import annotations

import math

import numpy as np

from ..types import TensorType, np_dtype, promote
from . import TABLE, Row, check
from ._util import size, unbroadcast


MAX_NDIM = 32  # NumPy's functions support up to 32 dimensions
MAX_BYTES = 2 ** 62


def check_shape(shape, what="an array") -> None:
    """A shape `what` may have: non-negative ints, rank <= MAX_NDIM, fewer than MAX_BYTES bytes."""
    shape = tuple(shape)
    check(all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in shape),
          f"the shape {shape} of {what} must contain integers")
    check(all(d >= 0 for d in shape), f"negative dimensions are not allowed (shape {shape} of {what})",
          hint="array extents are counts: use a size of 0 or more")
    check(len(shape) <= MAX_NDIM, f"{what} would have {len(shape)} dimensions; at most {MAX_NDIM} are supported")
    check(math.prod(int(d) for d in shape) * 8 < MAX_BYTES, f"the shape {shape} of {what} is too large",
          hint="no machine holds an array that size; check the shape computation")


def _zero_cost(ts, outs, **p):
    return 0


def _copy_cost(ts, outs, **p):
    return outs[0].size


def _reshape_type(ts, shape):
    (t,) = ts
    check_shape(shape, "the reshaped array")
    check(size(shape) == t.size, f"cannot reshape {t} to {tuple(shape)}",
          hint="the new shape must have the same number of elements")
    return (t.with_shape(shape),)


TABLE.add(Row(
    "reshape", _reshape_type, lambda x, shape: np.reshape(x, shape),
    jvp=lambda b, a, t, o, shape: [b.reshape(t[0], shape=shape)],
    vjp=lambda b, a, o, ct, need, shape: [b.reshape(ct[0], shape=tuple(a[0].type.shape))],
    cost=_zero_cost,
))


def _transpose_type(ts, perm):
    (t,) = ts
    check(sorted(perm) == list(range(t.ndim)), f"bad permutation {perm} for {t}")
    return (t.with_shape(tuple(t.shape[i] for i in perm)),)


def _inv(perm):
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)


TABLE.add(Row(
    "transpose", _transpose_type, lambda x, perm: np.transpose(x, perm),
    jvp=lambda b, a, t, o, perm: [b.transpose(t[0], perm=perm)],
    vjp=lambda b, a, o, ct, need, perm: [b.transpose(ct[0], perm=_inv(perm))],
    cost=_zero_cost,
))


def _bcast_type(ts, shape):
    (t,) = ts
    check_shape(shape, "the broadcast array")
    try:
        ok = tuple(np.broadcast_shapes(t.shape, tuple(shape))) == tuple(shape)
    except ValueError:
        ok = False
    check(ok, f"cannot broadcast {t} to shape {tuple(shape)}")
    return (t.with_shape(shape),)


TABLE.add(Row(
    "broadcast_to", _bcast_type, lambda x, shape: np.broadcast_to(x, shape),
    jvp=lambda b, a, t, o, shape: [b.broadcast_to(t[0], shape=shape)],
    vjp=lambda b, a, o, ct, need, shape: [unbroadcast(b, ct[0], a[0].type)],
    cost=_zero_cost,
))


def _concat_type(ts, axis):
    check(len(ts) >= 1, "concatenate needs at least one array")
    t0 = ts[0]
    check(t0.ndim > 0, "concatenate needs arrays, not scalars",
          hint="use np.stack or np.array([...]) to build an array from scalars")
    dt = t0.dtype
    for t in ts[1:]:
        check(t.ndim == t0.ndim and all(a == b for i, (a, b) in enumerate(zip(t.shape, t0.shape)) if i != axis),
              f"concatenate: shapes {[tuple(t.shape) for t in ts]} differ outside axis {axis}")
        dt = promote(dt, t.dtype)
    shape = list(t0.shape)
    shape[axis] = sum(t.shape[axis] for t in ts)
    return (TensorType(dt, tuple(shape)),)


def _concat_jvp(b, args, tans, outs, axis):
    if all(t is None for t in tans):
        return [None]
    parts = [t if t is not None else b.zeros(a.type.with_dtype(outs[0].type.dtype)) for a, t in zip(args, tans)]
    return [b.concatenate(*parts, axis=axis)]


def _concat_vjp(b, args, outs, cts, need, axis):
    res = []
    start = 0
    for a, nd in zip(args, need):
        n = a.type.shape[axis]
        if nd:
            spec = tuple(("s", start, start + n, 1) if i == axis else ("s", 0, d, 1)
                         for i, d in enumerate(outs[0].type.shape))
            res.append(b.index(cts[0], spec=spec))
        else:
            res.append(None)
        start += n
    return res


TABLE.add(Row("concatenate", _concat_type, lambda *xs, axis: np.concatenate(xs, axis=axis),
              _concat_jvp, _concat_vjp, _copy_cost))


def _iota_type(ts, n, dtype):
    check_shape((n,), "np.arange's result")
    return (TensorType(dtype, (n,)),)


TABLE.add(Row("iota", _iota_type, lambda n, dtype: np.arange(n, dtype=np_dtype(dtype)),
              cost=_copy_cost, zero_deriv=True))


def _full_type(ts, shape):
    (t,) = ts
    check(t.ndim == 0, f"full needs a scalar fill value, got {t}")
    check_shape(shape, "the new array")
    return (t.with_shape(shape),)


def _full_impl(v, shape):
    return np.full(shape, v, dtype=np.asarray(v).dtype)


TABLE.add(Row(
    "full", _full_type, _full_impl,
    jvp=lambda b, a, t, o, shape: [b.full(t[0], shape=shape)],
    vjp=lambda b, a, o, ct, need, shape: [b.sum(ct[0], axes=tuple(range(len(shape)))) if shape else ct[0]],
    cost=_copy_cost,
))
