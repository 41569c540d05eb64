"""Reductions over axes: sum, prod, max, min, argmax, argmin.

max, min, argmax and argmin of an empty axis have no identity: their type
rules raise `ShapeError` (shapes are concrete, so this is a staging-time error
at the user's line, as NumPy's ValueError would be at run time).
"""
from __future__ import annotations

import numpy as np

from ..core import Const
from ..types import I64, TensorType
from . import TABLE, Row, check
from ._util import c, keepdims_shape


def _axes_type(name, t, axes):
    check(all(0 <= a < t.ndim for a in axes), f"'{name}': axes {axes} out of range for {t}")
    return tuple(d for i, d in enumerate(t.shape) if i not in axes)


_NO_IDENTITY = ("max", "min", "argmax", "argmin")


def _check_nonempty(name, t, axes):
    if name in _NO_IDENTITY and any(t.shape[a] == 0 for a in axes):
        check(False, f"zero-size array to reduction operation {name} which has no identity "
                     f"(reducing {t} over axes {tuple(axes)})",
              hint=f"{name} of an empty array is undefined; check the size first (x.size / x.shape are known "
                   "while staging), or reduce an array that is never empty")


def _red_type(name, int_out=False):
    def type_(ts, axes):
        (t,) = ts
        shape = _axes_type(name, t, axes)
        _check_nonempty(name, t, axes)
        dt = "i64" if int_out else ("i64" if t.dtype == "bool" and name in ("sum", "prod") else t.dtype)
        return (TensorType(dt, shape),)
    return type_


def _cost_in(ts, outs, **p):
    return ts[0].size


def _expand(b, v, x, axes):
    """Broadcast a reduced value back to the shape of x."""
    kd = keepdims_shape(x.type.shape, axes)
    if v.type.shape == () and kd != ():
        return b.broadcast_to(v, shape=tuple(x.type.shape))
    if tuple(v.type.shape) != kd:
        v = b.reshape(v, shape=kd)
    if kd != tuple(x.type.shape):
        v = b.broadcast_to(v, shape=tuple(x.type.shape))
    return v


def _np_red(fn):
    def impl(x, axes):
        r = fn(x, axis=tuple(axes)) if axes else np.asarray(x).copy()
        return r
    return impl


# sum
TABLE.add(Row(
    "sum", _red_type("sum"), _np_red(np.sum),
    jvp=lambda b, a, t, o, axes: [b.sum(t[0], axes=axes) if axes else t[0]],
    vjp=lambda b, a, o, ct, need, axes: [_expand(b, ct[0], a[0], axes)],
    cost=_cost_in,
))


def _prod_partials(b, x, out, axes):
    """d prod / d x_i = prod of the others, exact with zeros (note [prod-zeros]):
    no zero -> out / x_i; one zero -> the product of the non-zeros at that
    element and 0 elsewhere; two or more zeros -> 0."""
    zero = b.eq(x, c(x, 0.0))
    nzeros = b.sum(b.cast(zero, dtype="i64"), axes=axes)
    others = b.prod(b.where(zero, c(x, 1.0), x), axes=axes)
    safe = b.where(zero, c(x, 1.0), x)
    none = _expand(b, b.eq(nzeros, Const(0, I64)), x, axes)
    one = b.and_(_expand(b, b.eq(nzeros, Const(1, I64)), x, axes), zero)
    at_zero = b.where(one, _expand(b, others, x, axes), c(x, 0.0))
    return b.where(none, b.div(_expand(b, out, x, axes), safe), at_zero)


def _prod_jvp(b, a, t, o, axes):
    return [b.sum(b.mul(t[0], _prod_partials(b, a[0], o[0], axes)), axes=axes)]


def _prod_vjp(b, a, o, ct, need, axes):
    return [b.mul(_expand(b, ct[0], a[0], axes), _prod_partials(b, a[0], o[0], axes))]


TABLE.add(Row("prod", _red_type("prod"), _np_red(np.prod), _prod_jvp, _prod_vjp, _cost_in))


def _extremum(name, fn):
    def mask(b, x, out, axes):
        m = b.cast(b.eq(x, _expand(b, out, x, axes)), dtype=x.type.dtype)
        cnt = b.sum(m, axes=axes)
        return m, cnt

    def jvp(b, a, t, o, axes):
        m, cnt = mask(b, a[0], o[0], axes)
        return [b.div(b.sum(b.mul(t[0], m), axes=axes), cnt)]

    def vjp(b, a, o, ct, need, axes):
        m, cnt = mask(b, a[0], o[0], axes)
        return [b.mul(m, _expand(b, b.div(ct[0], cnt), a[0], axes))]

    TABLE.add(Row(name, _red_type(name), _np_red(fn), jvp, vjp, _cost_in,
                  doc="ties share the derivative evenly"))


_extremum("max", np.max)
_extremum("min", np.min)


def _arg_type(ts, axis, name="argmax"):
    (t,) = ts
    check(0 <= axis < t.ndim, f"axis {axis} out of range for {t}")
    _check_nonempty(name, t, (axis,))
    return (TensorType("i64", tuple(d for i, d in enumerate(t.shape) if i != axis)),)


def _argsort_type(ts):
    (t,) = ts
    check(t.ndim >= 1 and t.dtype in ("f64", "f32", "i64", "bool"), f"argsort of {t}")
    return (TensorType("i64", t.shape),)


# argsort along the last axis (a stable sort: ties keep their order, as
# kind="stable"); the frontend moves other axes last. Integer result: no derivative.
TABLE.add(Row("argsort", _argsort_type, lambda x: np.argsort(x, axis=-1, kind="stable"),
              cost=lambda ts, outs: int(ts[0].size * max(1, int(np.log2(max(ts[0].shape[-1], 2))))),
              zero_deriv=True))


for _n, _f in (("argmax", np.argmax), ("argmin", np.argmin)):
    TABLE.add(Row(_n, (lambda n: lambda ts, axis: _arg_type(ts, axis, n))(_n),
                  (lambda f: lambda x, axis: f(x, axis=axis))(_f),
                  cost=_cost_in, zero_deriv=True))
