"""Reductions, scans, histograms and scatters with an associative operator:
`pb.reduce`, `pb.associative_scan`, `pb.hist`, `pb.scatter`, and the named
operators `pb.add`, `pb.mul`, `pb.min`, `pb.max` (note [reducers]).

Contract (the reference semantics; outside staged code each function runs
eagerly on NumPy values exactly so, and staged code computes the same):

- `reduce(op, ne, *xs)`: ``acc = ne; for i in range(n): acc = op(acc, x[i])``
  over the leading axis; several arrays make `ne`, `acc` and each operand of
  `op` tuples (one entry per array). Empty arrays give `ne`.
- `associative_scan(op, ne, *xs)`: the inclusive scan: entry i is the fold
  of `ne`, x[0], ..., x[i] (not JAX's carry-style `lax.scan`).
- `hist(op, ne, num_bins, indices, values)`: bin b starts at `ne` and folds
  in, in order, every value whose index is b; an index outside
  [0, num_bins), negatives included, is ignored. `values` may be a tuple of
  arrays for a tuple operator.
- `scatter(dest, indices, values)`: a copy of `dest` with ``out[i[j]] =
  values[j]``; indices outside [0, len(dest)), negatives included, are
  ignored; an in-range index that occurs twice is a located `PullbackError`
  (checked by sorting, O(m log m)).
- `op` must be associative with neutral element `ne` (pullback does not check
  this); it takes and returns elements (rows, for arrays of rank > 1) of the
  arrays' dtype. Whatever its spelling (`pb.add`, `operator.add`, `np.add`,
  ``lambda a, b: a + b``, `max`, `np.maximum`, ...), an operator that
  computes one `+`, `*`, min or max gets that operator's derivative rules.
"""
from __future__ import annotations

import sys

import numpy as np

from .errors import PullbackError, ShapeError

__all__ = ["add", "associative_scan", "hist", "max", "min", "mul", "reduce", "scatter"]


# -- named operators ----------------------------------------------------------------------

def add(a, b):
    """The `+` operator (`np.add`), for `pb.reduce` and friends."""
    return np.add(a, b)


def mul(a, b):
    """The `*` operator (`np.multiply`)."""
    return np.multiply(a, b)


def min(a, b):
    """The elementwise minimum (`np.minimum`: NaN propagates)."""
    return np.minimum(a, b)


def max(a, b):
    """The elementwise maximum (`np.maximum`: NaN propagates)."""
    return np.maximum(a, b)


# -- eager reference semantics -------------------------------------------------------------

def _caller_loc():
    """The user's line calling into pullback (eager errors name it)."""
    from .ir.core import SrcLoc

    f = sys._getframe(1)
    while f is not None and (f.f_globals.get("__name__") or "").startswith("pullback"):
        f = f.f_back
    if f is None:
        return None
    import linecache

    return SrcLoc(f.f_code.co_filename, f.f_lineno, linecache.getline(f.f_code.co_filename, f.f_lineno))


def _eager_arrays(xs, what):
    arrs = [np.asarray(x) for x in xs]
    if not arrs:
        raise PullbackError(f"{what}: no arrays given", loc=_caller_loc(), hint=f"write {what}(op, ne, xs)")
    if any(a.ndim == 0 for a in arrs):
        raise ShapeError(f"{what}: expected arrays to combine along their leading axis, got a scalar",
                         loc=_caller_loc(), hint="pass arrays (np.asarray(...))")
    ns = {a.shape[0] for a in arrs}
    if len(ns) != 1:
        raise ShapeError(f"{what}: the arrays have leading dimensions {sorted(ns)}", loc=_caller_loc(),
                         hint="every array needs the same length along the combined axis")
    return arrs, ns.pop()


def _cast(v, like):
    return np.asarray(v, dtype=like.dtype) if np.ndim(v) or like.ndim > 1 else like.dtype.type(v)


def _eager_ne(ne, arrs, what):
    if len(arrs) == 1:
        return _cast(ne, arrs[0])
    if not isinstance(ne, (tuple, list)) or len(ne) != len(arrs):
        raise PullbackError(f"{what}: with {len(arrs)} arrays the neutral element must be a tuple of "
                            f"{len(arrs)} values", loc=_caller_loc())
    return tuple(_cast(v, a) for v, a in zip(ne, arrs))


def _elem(arrs, j):
    return arrs[0][j] if len(arrs) == 1 else tuple(a[j] for a in arrs)


def _eager_reduce(op, ne, *xs):
    arrs, n = _eager_arrays(xs, "pb.reduce")
    acc = _eager_ne(ne, arrs, "pb.reduce")
    for j in range(n):
        acc = op(acc, _elem(arrs, j))
    return acc


def _eager_scan(op, ne, *xs):
    arrs, n = _eager_arrays(xs, "pb.associative_scan")
    acc = _eager_ne(ne, arrs, "pb.associative_scan")
    outs = [np.zeros_like(a) for a in arrs]
    for j in range(n):
        acc = op(acc, _elem(arrs, j))
        for o, v in zip(outs, acc if len(arrs) > 1 else (acc,)):
            o[j] = v
    return outs[0] if len(arrs) == 1 else tuple(outs)


def _eager_hist(op, ne, num_bins, indices, values):
    k = len(values) if isinstance(values, (tuple, list)) else 1
    arrs, m = _eager_arrays(list(values) if k > 1 else [values], "pb.hist")
    idx = np.asarray(indices)
    if idx.ndim != 1 or idx.shape[0] != m or not np.issubdtype(idx.dtype, np.integer):
        raise ShapeError(f"pb.hist: need one integer index per value, got indices of shape {idx.shape} "
                         f"and dtype {idx.dtype} for {m} values", loc=_caller_loc())
    nb = int(num_bins)
    ne = _eager_ne(ne, arrs, "pb.hist")
    nes = ne if k > 1 else (ne,)
    bins = [np.array(np.broadcast_to(v, (nb,) + a.shape[1:]), dtype=a.dtype) for v, a in zip(nes, arrs)]
    for j in range(m):
        i = int(idx[j])
        if 0 <= i < nb:
            old = tuple(bn[i] for bn in bins) if k > 1 else bins[0][i]
            new = op(old, _elem(arrs, j))
            for bn, v in zip(bins, new if k > 1 else (new,)):
                bn[i] = v
    return bins[0] if k == 1 else tuple(bins)


def _eager_scatter(dest, indices, values):
    from .ir.prims.combine import first_duplicate

    out = np.array(dest, copy=True)
    if out.ndim == 0:
        raise ShapeError("pb.scatter: the destination must be an array", loc=_caller_loc())
    idx = np.asarray(indices)
    if idx.ndim != 1 or not (np.issubdtype(idx.dtype, np.integer) or idx.size == 0):
        raise ShapeError(f"pb.scatter: the indices must be a vector of integers, got shape {idx.shape} and "
                         f"dtype {idx.dtype}", loc=_caller_loc())
    idx = idx.astype(np.int64)
    n = out.shape[0]
    dup = first_duplicate(idx, n)
    if dup is not None:
        from .backends.checks import duplicate_error

        raise duplicate_error(_caller_loc(), dup, n)
    vals = np.broadcast_to(np.asarray(values), (idx.shape[0],) + out.shape[1:])
    keep = (idx >= 0) & (idx < n)
    out[idx[keep]] = vals[keep]
    return out


# -- public API ---------------------------------------------------------------------------

def reduce(op, ne, *xs):
    """Fold the arrays `xs` along their leading axis with the associative `op`,
    starting at the neutral element `ne` (tuples of them for several arrays)."""
    return _eager_reduce(op, ne, *xs)


def associative_scan(op, ne, *xs):
    """The inclusive scan of `xs` with the associative `op` and neutral element `ne`."""
    return _eager_scan(op, ne, *xs)


def hist(op, ne, num_bins, indices, values):
    """Reduce-by-index: `num_bins` bins starting at `ne`, `values[j]` folded into bin
    `indices[j]` with `op`; indices outside [0, num_bins) are ignored."""
    return _eager_hist(op, ne, num_bins, indices, values)


def scatter(dest, indices, values):
    """A copy of `dest` with `values[j]` written at `indices[j]` (out-of-range indices
    ignored; a duplicate in-range index is an error)."""
    return _eager_scatter(dest, indices, values)


for _f in (reduce, associative_scan, hist):
    _f.__pullback_stages_functions__ = True  # staged whenever `op` reads traced values (frontend.calls)


def _register():
    from .frontend import ops
    from .frontend import reducers as fr
    from .frontend.numpy_api import _TAKE_SEQUENCES, FUNCS, _as_array

    # a tuple neutral element stays a tuple; the arrays may be lists, as in NumPy
    _TAKE_SEQUENCES.update((reduce, associative_scan))
    FUNCS[reduce] = lambda st, op, ne, *xs: fr.stage_reduce(st, op, ne, [_as_array(st, x) for x in xs])
    FUNCS[associative_scan] = lambda st, op, ne, *xs: fr.stage_scan(st, op, ne, [_as_array(st, x) for x in xs])
    FUNCS[hist] = lambda st, op, ne, num_bins, indices, values: fr.stage_hist(st, op, ne, num_bins, indices, values)
    FUNCS[scatter] = lambda st, dest, indices, values: fr.stage_scatter(st, dest, indices, values)
    def binary(prim):
        return lambda st, a, b: ops.binary(st, prim, a, b)

    for f, prim in ((add, "add"), (mul, "mul"), (min, "minimum"), (max, "maximum")):
        FUNCS[f] = binary(prim)


_register()
