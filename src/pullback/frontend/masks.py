"""Boolean-mask selections `x[m]` with a traced mask (issue 10, note [bool-masks]).

Contract: `select(st, x, m)` is `x[m]` for a boolean mask `m` of x's shape or
of its leading dimensions (NumPy's rule). A concrete mask gives a static
gather (any use is fine). A traced mask selects a data-dependent number of
elements, which staging cannot shape; the result is a `Masked` selection, a
`Traced` whose `atom` is refused with a located error naming the construct and
saying what to write instead (`np.where(m, x, 0)`). The operations that accept
it lower it to `where`-style code with static shapes:

- elementwise arithmetic, comparisons and casts (`ops.binary`, `ops.unary`,
  `ops.cast`, hence NumPy's ufuncs) of selections with the same mask and of
  scalars (or arrays broadcasting against one selected row) give a selection;
- reductions (`ops.reduce`, `ops.mean`: `np.sum`/`mean`/`max`/`min`/`prod` and
  the methods) over the selected axis: the reduction of
  `where(m, x, identity)`; `np.max`/`np.min` of an empty float selection is
  NaN (NumPy raises), `np.mean` of one is NaN (as NumPy's, with its warning);
- `len`, `np.count_nonzero`, `np.any`, `np.all` (`lookup_masked`);
- assignments (`assign`): `x[m] = v`, `x[m] += v`, `x[m] *= v`, with v a
  scalar, a selection with the same mask (`x[m] = y[m]`), or (for a mask of
  leading dimensions) a row; with a concrete mask also an array of the
  selected length. `where(m, new, x)`; derivatives follow from `where`'s.
"""
from __future__ import annotations

import builtins

import numpy as np

from ..errors import ShapeError, UnsupportedSyntaxError
from ..ir.core import Const
from ..ir.types import TensorType
from . import ops
from .values import Traced, is_weak, leaf_type

_USES = ("np.sum/np.mean/np.max/np.min/np.prod/np.any/np.all/np.count_nonzero/len and the methods .sum() .mean() "
         ".max() .min() .prod(), elementwise arithmetic and NumPy functions feeding them, and assignments "
         "x[m] = v, x[m] += v, x[m] *= v")
_HINT = ("keep the array's shape and mask it instead: np.where(m, x, 0) (then reduce it, e.g. "
         "np.sum(np.where(m, x, 0)), or np.sum(m) for the count)")


class Masked(Traced):
    """`base[mask]` for a traced boolean `mask` of shape ``base.shape[:mask.ndim]``:
    a selection of shape ``(count,) + base.shape[mask.ndim:]``."""

    __slots__ = ("base", "mask", "loc")

    def __init__(self, base: Traced, mask: Traced, loc=None):  # not Traced.__init__, which would set `atom`
        self.base, self.mask, self.loc = base, mask, loc

    @property
    def atom(self):
        made = ""
        if self.loc is not None:
            text = getattr(self.loc, "text", "") or ""
            made = f" (the selection made at line {self.loc.line}" + (f": {text.strip()}" if text else "") + ")"
        raise UnsupportedSyntaxError(
            f"x[m] with a traced boolean mask m selects a number of elements known only at run time{made}; it is "
            "used here in a way that needs its shape (returned, indexed, passed to a function, ...); pullback "
            f"supports masked selections in {_USES}", hint=_HINT)

    @property
    def rest(self) -> tuple:
        return tuple(self.base.shape[self.mask.ndim:])

    def __repr__(self):
        return f"Masked({self.base!r}[{self.mask!r}])"


def is_mask(key) -> bool:
    if isinstance(key, Traced) and not isinstance(key, Masked):
        return key.ndim > 0 and key.type.dtype == "bool"
    if isinstance(key, np.ndarray):
        return key.ndim > 0 and key.dtype == np.bool_
    return isinstance(key, list) and bool(key) and all(isinstance(k, (bool, np.bool_)) for k in key)


def _check_shape(x, mshape):
    xs = tuple(x.shape)
    if len(mshape) > len(xs) or xs[:len(mshape)] != tuple(mshape):
        raise ShapeError(f"a boolean mask of shape {tuple(mshape)} does not match the array of shape {xs}",
                         hint="the mask has the array's shape, or that of its leading dimensions")


def select(st, x, m):
    """`x[m]` (see module doc)."""
    x = x if isinstance(x, Traced) else ops.as_traced(st, x)
    if isinstance(m, list):
        m = np.asarray(m, dtype=bool)
    if isinstance(m, Traced) and isinstance(m.atom, Const):
        m = np.asarray(m.atom.value, dtype=bool)
    _check_shape(x, np.shape(m))
    if isinstance(m, np.ndarray):  # static: a gather of the selected (rows)
        rest = tuple(x.shape[m.ndim:])
        flat = ops.reshape(st, x, (int(m.size),) + rest)
        idx = Const(np.flatnonzero(m).astype(np.int64), TensorType("i64", (int(np.count_nonzero(m)),)))
        return ops.emit(st, "take", flat.atom, idx, axis=0)
    return Masked(x, m, st.loc)


# -- elementwise -----------------------------------------------------------------------

def _operand(st, v, sel: Masked, what):
    """The value `v` of an elementwise operation with selection `sel`, as an operand of `sel.base`."""
    if isinstance(v, Masked):
        if not _same_value(st, v.mask.atom, sel.mask.atom) or tuple(v.base.shape) != tuple(sel.base.shape):
            raise UnsupportedSyntaxError(f"{what} of selections x[m] and y[k] with different masks (or arrays of "
                                         "different shapes): their shapes are only known at run time",
                                         hint="use one mask for both, or np.where(m, x, 0) on the whole arrays")
        return v.base
    t = leaf_type(v)
    rest = sel.rest
    if t.ndim == 0:
        return v
    if t.ndim <= len(rest) + 1 and (t.ndim <= len(rest) or t.shape[0] == 1):
        shape = tuple(t.shape[1:]) if t.ndim == len(rest) + 1 else tuple(t.shape)
        try:
            ok = tuple(np.broadcast_shapes(shape, rest)) == rest
        except ValueError:
            ok = False
        if ok:
            if shape != tuple(t.shape):
                v = ops.reshape(st, v, shape) if isinstance(v, Traced) else np.reshape(v, shape)
            return v
    raise UnsupportedSyntaxError(f"{what} of a selection x[m] (traced mask) with an array of shape {t.shape}: "
                                 "the selection's length is only known at run time", hint=_HINT)


def _same_value(st, a, b, depth=0) -> bool:
    """Whether atoms `a` and `b` are equal by construction: the same atom, equal constants, or
    the results of the same primitive on such atoms in the current body (`x > 0` written twice)."""
    if a is b or a == b:
        return True
    if depth > 8 or isinstance(a, Const) or isinstance(b, Const):
        return False
    da, db = _definition(st, a), _definition(st, b)
    if da is None or db is None or da.op != db.op or da.params != db.params or len(da.args) != len(db.args):
        return False
    return all(_same_value(st, x, y, depth + 1) for x, y in zip(da.args, db.args))


def _definition(st, v):
    from ..ir.core import Prim
    for s in reversed(st.b.stmts[-64:]):
        if s.pat == (v,):
            return s.exp if isinstance(s.exp, Prim) else None
    return None


def elementwise(st, fn, *args, what="an operation"):
    """fn(st, *bases) as a selection (args: selections with one mask, scalars, rows)."""
    sel = next(a for a in args if isinstance(a, Masked))
    r = fn(st, *[_operand(st, a, sel, what) for a in args])
    if tuple(r.shape) != tuple(sel.base.shape):
        raise UnsupportedSyntaxError(f"{what} of a selection x[m] changes its shape", hint=_HINT)
    return Masked(r, sel.mask, sel.loc)


# -- reductions --------------------------------------------------------------------------

def _wide_mask(st, sel: Masked) -> Traced:
    """The mask with trailing unit axes, broadcasting against `sel.base`."""
    m = sel.mask
    return ops.reshape(st, m, tuple(m.shape) + (1,) * len(sel.rest)) if sel.rest else m


def count(st, sel: Masked) -> Traced:
    """The number of selected elements (rows, for a mask of leading dimensions): len(x[m])."""
    return ops.reduce(st, "sum", ops.cast(st, sel.mask, "i64"))


def _identity(op, dtype):
    if op == "sum":
        return 0
    if op == "prod":
        return 1
    big = op == "min"
    if dtype in ("f64", "f32"):
        return float("inf") if big else float("-inf")
    if dtype == "bool":
        return big
    info = np.iinfo(np.int64)
    return int(info.max if big else info.min)


def _axes(sel: Masked, axis):
    """(selection axes, base axes) of a reduction over `axis` of the selection."""
    nd = 1 + len(sel.rest)
    ax = ops.norm_axes(axis, nd)
    k = sel.mask.ndim
    base = tuple(range(k)) if 0 in ax else ()
    return ax, base + tuple(k + a - 1 for a in ax if a > 0)


def _kept(sel: Masked, ax):
    return tuple(1 if a in ax else d for a, d in enumerate((1,) + sel.rest))


def reduce(st, op, sel: Masked, axis=None, keepdims=False, dtype=None) -> Traced:
    ax, baxes = _axes(sel, axis)
    if 0 not in ax:  # over selected rows' own axes: still a selection
        return Masked(ops.reduce(st, op, sel.base, baxes, keepdims, dtype), sel.mask, sel.loc)
    base = sel.base
    fill = ops.where(st, _wide_mask(st, sel), base, _identity(op, base.type.dtype))
    if fill.type.dtype != base.type.dtype:
        fill = ops.cast(st, fill, base.type.dtype)
    r = ops.reduce(st, op, fill, baxes, False, dtype)
    if op in ("max", "min") and r.type.is_float:  # no identity: NaN for an empty selection
        r = ops.where(st, ops.binary(st, "gt", count(st, sel), 0), r, float("nan"))
    if keepdims:
        r = ops.reshape(st, r, _kept(sel, ax))
    return r


def mean(st, sel: Masked, axis=None, keepdims=False) -> Traced:
    ax, baxes = _axes(sel, axis)
    if 0 not in ax:
        return Masked(ops.mean(st, sel.base, baxes, keepdims), sel.mask, sel.loc)
    base = sel.base if sel.base.type.is_float else ops.cast(st, sel.base, "f64")
    s = reduce(st, "sum", Masked(base, sel.mask), axis, keepdims)
    per = int(np.prod([d for a, d in enumerate(sel.rest, 1) if a in ax], dtype=np.int64))
    n = ops.cast(st, count(st, sel), base.type.dtype)
    if per != 1:
        n = ops.binary(st, "mul", n, float(per))
    return ops.binary(st, "div", s, n)


def _nonzero(st, sel: Masked) -> Traced:
    b = sel.base if sel.base.type.dtype == "bool" else ops.binary(st, "ne", sel.base, 0)
    return ops.binary(st, "and", _wide_mask(st, sel), b)


def count_nonzero(st, a, axis=None, *, keepdims=False):
    if isinstance(a, Masked):
        if axis is not None or keepdims:
            raise UnsupportedSyntaxError("np.count_nonzero of a selection x[m] with an axis", hint=_HINT)
        return ops.reduce(st, "sum", ops.cast(st, _nonzero(st, a), "i64"))
    a = a if isinstance(a, Traced) else ops.as_traced(st, a)
    nz = a if a.type.dtype == "bool" else ops.binary(st, "ne", a, 0)
    return ops.reduce(st, "sum", ops.cast(st, nz, "i64"), axis, keepdims)


def _any_all(is_any):
    def h(st, a, axis=None, keepdims=False):
        if axis is not None or keepdims:
            raise UnsupportedSyntaxError(f"np.{'any' if is_any else 'all'} of a selection x[m] with an axis",
                                         hint=_HINT)
        n = count_nonzero(st, a)
        if is_any:
            return ops.binary(st, "gt", n, 0)
        total = ops.binary(st, "mul", count(st, a), int(np.prod(a.rest, dtype=np.int64)))
        return ops.binary(st, "eq", n, total)
    return h


def _len(st, a):
    return count(st, a)


# functions whose handler sees a selection as its first argument (numpy_api.lookup)
_FUNCS = {builtins.len: _len, np.count_nonzero: count_nonzero, np.any: _any_all(True), np.all: _any_all(False)}


def lookup_masked(fn, h):
    """`fn`'s handler `h`, routed to this module for a selection as the first argument; for
    np.count_nonzero (no handler of its own) the handler here."""
    try:
        mine = _FUNCS.get(fn)
    except TypeError:
        return h
    if mine is None:
        return h
    if h is None:
        return mine
    return lambda st, *a, **k: mine(st, *a, **k) if a and isinstance(a[0], Masked) else h(st, *a, **k)


# -- assignments --------------------------------------------------------------------------

def assign(st, x: Traced, m, value, mode):
    """`x[m] = value` (mode 'set') or `x[m] += value` (mode 'add'), as `where`."""
    if isinstance(m, list):
        m = np.asarray(m, dtype=bool)
    _check_shape(x, np.shape(m))
    concrete = isinstance(m, np.ndarray)
    mt = ops.as_traced(st, m) if concrete else m
    sel = Masked(x, mt)
    if concrete and not isinstance(value, Masked) and leaf_type(value).ndim > 0 and \
            leaf_type(value).shape[0] == int(np.count_nonzero(m)) and leaf_type(value).shape[0] != 1:
        v = _scatter(st, x, m, value)  # x[m] = values, one per selected element (row)
    else:
        v = _operand(st, value, sel, "an assignment x[m] = v")
    if mode == "add":
        v = ops.binary(st, "add", x, v)
    out = ops.where(st, _wide_mask(st, sel), v, x)
    if tuple(out.shape) != tuple(x.shape):
        raise UnsupportedSyntaxError("the value assigned to x[m] does not fit the selection", hint=_HINT)
    return out if out.type.dtype == x.type.dtype else ops.cast(st, out, x.type.dtype)


def _scatter(st, x, m: np.ndarray, value):
    """An array of x's shape holding `value`'s rows at the selected positions (static mask)."""
    rest = tuple(x.shape[m.ndim:])
    n = int(np.count_nonzero(m))
    dt = x.type.dtype if is_weak(value) or not isinstance(value, Traced) else value.type.dtype
    v = ops.broadcast_to(st, ops.as_traced(st, value, dt), (n,) + rest)
    zeros = ops.full(st, (int(m.size),) + rest, 0, dtype=v.type.dtype)
    idx = Const(np.flatnonzero(m).astype(np.int64), TensorType("i64", (n,)))
    flat = ops.emit(st, "take_add", zeros.atom, idx, v.atom, axis=0)
    return ops.reshape(st, flat, tuple(x.shape))


__all__ = ["Masked", "assign", "count", "count_nonzero", "elementwise", "is_mask", "lookup_masked", "mean",
           "reduce", "select"]
