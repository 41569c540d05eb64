"""Sorting and order statistics (issue 10): `sort`, `argsort`, `partition`,
`median`, `quantile`, `percentile`, and the `.argsort()` method.

Contract: importing this module registers the handlers in `numpy_api.FUNCS`.
Everything is built on the `argsort` primitive (a stable sort along the last
axis, no derivative): `sort` gathers the elements in that order with `take`,
so its gradient follows the permutation (each element's adjoint goes back to
where it came from), and the order statistics interpolate between sorted
elements with static weights (NumPy's default "linear" method), so their
gradient flows only through the selected elements. `q`, `kth` and axes must
be static.
"""
from __future__ import annotations

import numpy as np

from ..errors import StagingError
from ..ir.core import Const
from ..ir.types import TensorType
from . import ops
from .numpy_api import METHODS, _reg
from .values import Traced


def _t(st, x) -> Traced:
    return x if isinstance(x, Traced) else ops.as_traced(st, x)


def _last(st, x, axis):
    """(x with `axis` moved last, the permutation that moves it back)."""
    ax = ops.norm_axis(axis, x.ndim)
    perm = tuple(d for d in range(x.ndim) if d != ax) + (ax,)
    back = tuple(int(i) for i in np.argsort(perm))
    return (ops.transpose(st, x, perm) if ax != x.ndim - 1 else x), (back if ax != x.ndim - 1 else None)


def _sorted_last(st, x):
    """`x` sorted along its last axis, and the permutation (int64, same shape)."""
    idx = ops.emit(st, "argsort", x.atom)
    n = x.shape[-1]
    rows = int(np.prod(x.shape[:-1], dtype=np.int64))
    if x.ndim == 1:
        return ops.emit(st, "take", x.atom, idx.atom, axis=0), idx
    offs = Const((np.arange(rows, dtype=np.int64) * n).reshape(x.shape[:-1] + (1,)),
                 TensorType("i64", x.shape[:-1] + (1,)))
    flat_idx = ops.reshape(st, ops.binary(st, "add", idx, Traced(offs)), (-1,))
    flat = ops.emit(st, "take", ops.reshape(st, x, (-1,)).atom, flat_idx.atom, axis=0)
    return ops.reshape(st, flat, x.shape), idx


def _flat_or(st, x, axis):
    return (ops.reshape(st, x, (-1,)), -1) if axis is None else (x, axis)


def _along(st, a, axis, order, what, last_fn):
    """`last_fn` applied along `axis` (None: the flattened array), axes moved back."""
    if order is not None:
        raise StagingError(f"np.{what} with order= (structured arrays) is not supported")
    x, axis = _flat_or(st, _t(st, a), axis)
    xt, back = _last(st, x, axis)
    r = last_fn(xt)
    return ops.transpose(st, r, back) if back else r


@_reg(np.sort)
def _sort(st, a, axis=-1, kind=None, order=None):
    return _along(st, a, axis, order, "sort", lambda xt: _sorted_last(st, xt)[0])


@_reg(np.argsort)
def _argsort(st, a, axis=-1, kind=None, order=None):
    return _along(st, a, axis, order, "argsort", lambda xt: ops.emit(st, "argsort", xt.atom))


@_reg(np.partition)
def _partition(st, a, kth, axis=-1, kind=None, order=None):
    """A full sort is a valid partition (NumPy leaves the order within the parts unspecified)."""
    return _sort(st, a, axis)


METHODS["argsort"] = lambda st, x, axis=-1, kind=None, order=None: _argsort(st, x, axis, kind, order)


def _quantile(st, a, q, axis, keepdims, method="linear"):
    if method != "linear":
        raise StagingError(f"quantile method {method!r} is not supported", hint="use the default method='linear'")
    qs = np.asarray(q, dtype=np.float64)
    if isinstance(q, Traced) or np.any(qs < 0) or np.any(qs > 1):
        raise StagingError("quantiles must be static numbers in [0, 1] (percentiles in [0, 100])")
    x = _t(st, a)
    if not x.type.is_float:
        x = ops.cast(st, x, "f64")
    axes = tuple(range(x.ndim)) if axis is None else ops.norm_axes(axis, x.ndim)
    keep = [d for d in range(x.ndim) if d not in axes]
    xt = ops.transpose(st, x, tuple(keep) + axes)
    xt = ops.reshape(st, xt, tuple(x.shape[d] for d in keep) + (-1,))
    s, _ = _sorted_last(st, xt)
    n = s.shape[-1]
    outs = []
    for qv in qs.reshape(-1):
        pos = qv * (n - 1)
        lo, hi = int(np.floor(pos)), int(np.ceil(pos))
        a_lo = ops.getitem(st, s, (Ellipsis, lo))
        if hi == lo:
            outs.append(a_lo)
            continue
        a_hi = ops.getitem(st, s, (Ellipsis, hi))
        outs.append(ops.binary(st, "add", a_lo, ops.binary(st, "mul", ops.binary(st, "sub", a_hi, a_lo), pos - lo)))
    r = outs[0] if qs.ndim == 0 else ops.reshape(st, ops.stack(st, outs, 0), qs.shape + outs[0].shape)
    if keepdims:
        shape = tuple(1 if d in axes else x.shape[d] for d in range(x.ndim))
        r = ops.reshape(st, r, qs.shape + shape)
    return r


@_reg(np.quantile)
def _np_quantile(st, a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    return _quantile(st, a, q, axis, keepdims, method)


@_reg(np.percentile)
def _np_percentile(st, a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    return _quantile(st, a, np.asarray(q, dtype=np.float64) / 100.0, axis, keepdims, method)


@_reg(np.median)
def _median(st, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return _quantile(st, a, 0.5, axis, keepdims)
