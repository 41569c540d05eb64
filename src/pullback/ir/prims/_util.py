"""Small helpers shared by derivative rules (all emit through a builder)."""
from __future__ import annotations

import numpy as np

from ..core import Const
from ..types import TensorType


def c(x, value):
    """A scalar constant with the dtype of atom `x` (weakly typed, as Python literals)."""
    return Const(value, TensorType(x.type.dtype))


def addz(b, x, y):
    """x + y where either may be None (symbolic zero)."""
    if x is None:
        return y
    if y is None:
        return x
    return b.add(x, y)


def mulz(b, x, y):
    if x is None or y is None:
        return None
    return b.mul(x, y)


def _safe_const(x) -> bool:
    """A scalar constant that is finite and non-zero: a product with it needs no guard."""
    if not isinstance(x, Const) or getattr(x.type, "shape", None) != ():
        return False
    try:
        v = complex(x.value)
    except (TypeError, ValueError):
        return False
    return v != 0 and np.isfinite(v)


def _zero_like(x):
    return Const(0.0 if x.type.is_float else 0, TensorType(x.type.dtype))


def smul(b, a, d):
    """The strong product a * d of a derivative rule (note [edge-numerics]): an
    exact zero in either factor gives an exact zero, even when the other factor
    is inf or NaN (`0 * inf` is 0 here, not NaN). None is a symbolic zero.

    Emitted as ``where(isnan(a * d) & ((a == 0) | (d == 0)), 0, a * d)``: the
    guard only replaces a NaN, so wherever the plain product is a number the
    strong product is the same expression and differentiates the same way
    (a guard on ``a == 0`` alone would drop the derivative of a factor that is
    zero at a point but not constant, e.g. in a Hessian). A factor that is a
    finite non-zero scalar constant needs no guard."""
    if a is None or d is None:
        return None
    r = b.mul(a, d)
    if not r.type.is_float or _safe_const(a) or _safe_const(d):
        return r
    zero = b.or_(b.eq(a, _zero_like(a)), b.eq(d, _zero_like(d)))
    return b.where(b.and_(b.isnan(r), zero), _zero_like(r), r)


def bcast(b, x, shape):
    if x is None or tuple(x.type.shape) == tuple(shape):
        return x
    return b.broadcast_to(x, shape=tuple(shape))


def unbroadcast(b, ct, type: TensorType):
    """Sum a cotangent of a broadcast result back to the operand's shape."""
    if ct is None:
        return None
    shape = tuple(type.shape)
    cshape = tuple(ct.type.shape)
    if cshape == shape:
        out = ct
    else:
        lead = len(cshape) - len(shape)
        axes = tuple(range(lead)) + tuple(
            lead + i for i, d in enumerate(shape) if d == 1 and cshape[lead + i] != 1
        )
        out = b.sum(ct, axes=axes) if axes else ct
        if tuple(out.type.shape) != shape:
            out = b.reshape(out, shape=shape)
    if out.type.dtype != type.dtype and type.is_float:
        out = b.cast(out, dtype=type.dtype)
    return out


def keepdims_shape(shape, axes):
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def size(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n
