"""Small helpers shared by derivative rules (all emit through a builder)."""
from __future__ import annotations

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
