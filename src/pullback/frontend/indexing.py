"""Indexing of traced arrays: basic indexing and slicing (static and dynamic
slices), integer-array gathers, mixed indexing, boolean masks, and the
functional updates of assignments to them (`x[key] = v`, `x[key] += v`).

Contract: `getitem(st, x, key)` is `x[key]` and `setitem(st, x, key, v, mode)`
the array `x` with `x[key]` set to (mode 'set') or incremented by (mode 'add')
`v`, as `Traced` values (re-exported by `ops`). A slice with a traced start
and a static length (`x[i:i+k]`, `x[i+a:i+b]`) is an ``("ds", k)`` spec entry
(note [dynamic-slices]): `static_difference` proves the length static from the
offsets `ops.binary` records for traced integer `add`/`sub` with constants
(`_note_offset`; by the atom's identity, since trial stagings of a loop body
reuse names; `copy_offset` for a renamed value). A length that is not static
is a `ConcreteNeeded` naming the slice. Boolean masks: `x[m]` with a traced
mask is a `masks.Masked` selection; with a concrete mask of x's shape (or its
leading dims) a static gather; `x[m] = v` / `x[m] op= v` lower to `where`.
`index_trick(st, np.r_ or np.c_, key)` is `np.r_[...]`/`np.c_[...]` with traced
items (arrays, scalars, slices with static bounds).
"""
from __future__ import annotations

import operator

import numpy as np

from ..errors import ShapeError, StagingError, UnsupportedSyntaxError
from ..ir.core import Const
from ..ir.types import TensorType
from .ops import (array, as_traced, atom, binary, broadcast_to, cast, check_numeric, emit, reshape, static_int,
                  transpose)
from . import masks
from .values import ConcreteNeeded, Traced

# -- integer offsets: which traced integers differ by a static amount (dynamic slices) --

def _offset_of(st, a):
    """(base atom or None, static offset): `a` is base + offset (None: a constant)."""
    if isinstance(a, Const):
        try:
            return None, int(a.value)
        except (TypeError, ValueError):
            return a, 0
    hit = getattr(st, "_pb_offsets", {}).get(id(a))
    return hit[1] if hit is not None and hit[0] is a else (a, 0)


def copy_offset(st, old, new):
    """`new` is `old` renamed (the same value)."""
    hit = getattr(st, "_pb_offsets", {}).get(id(old))
    if hit is not None and hit[0] is old:
        st._pb_offsets[id(new)] = (new, hit[1])


def _note_offset(st, r, op, a, b):
    (ba, oa), (bb, ob) = _offset_of(st, a), _offset_of(st, b)
    if op == "add":
        if ba is None:
            hit = (bb, oa + ob)
        elif bb is None:
            hit = (ba, oa + ob)
        else:
            return
    elif bb is None:
        hit = (ba, oa - ob)
    elif ba is not None and ba == bb:
        hit = (None, oa - ob)
    else:
        return
    if not hasattr(st, "_pb_offsets"):
        st._pb_offsets = {}  # id(atom) -> (atom, (base, offset)), by identity: trial stagings reuse names
    st._pb_offsets[id(r)] = (r, hit)


def static_difference(st, hi, lo):
    """`hi - lo` when staging can prove it static (`i + 3` and `i`; both concrete), else None."""
    def form(v):
        if isinstance(v, Traced):
            if v.ndim or v.type.dtype != "i64":
                return None
            return _offset_of(st, v.atom)
        try:
            return None, operator.index(v)
        except TypeError:
            return None
    fh, fl = form(hi), form(lo)
    if fh is None or fl is None:
        return None
    if (fh[0] is None) != (fl[0] is None):
        return None
    if fh[0] is not None and not masks._same_value(st, fh[0], fl[0]):  # `int(t)` written twice is one value
        return None
    return fh[1] - fl[1]



# -- indexing ---------------------------------------------------------------------

def _is_index_array(k) -> bool:
    if isinstance(k, Traced):
        return k.ndim > 0
    if isinstance(k, np.ndarray):
        return True
    if isinstance(k, list):
        return True
    return False


def _expand_key(key, ndim):
    if not isinstance(key, tuple):
        key = (key,)
    n_ell = sum(1 for k in key if k is Ellipsis)
    if n_ell > 1:
        raise StagingError("an index can only have a single ellipsis ('...')")
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    if used > ndim:
        raise ShapeError(f"too many indices for an array of rank {ndim}: {used} were given")
    out = []
    for k in key:
        if k is Ellipsis:
            out.extend([slice(None)] * (ndim - used))
        else:
            out.append(k)
    return out


def _known(v):
    """A traced integer constant as a Python int; anything else unchanged."""
    if isinstance(v, Traced) and isinstance(v.atom, Const) and v.ndim == 0 and v.type.dtype == "i64":
        return int(v.atom.value)
    return v


def _traced_slice(k) -> bool:
    return any(isinstance(_known(p), Traced) for p in (k.start, k.stop, k.step))


def _slice_text(k) -> str:
    def part(p, name):
        if p is None:
            return ""
        return name if isinstance(_known(p), Traced) else str(p)
    return f"[{part(k.start, 'a')}:{part(k.stop, 'b')}" + ("" if k.step is None else f":{part(k.step, 'c')}") + "]"


_DYN_HINT = ("write the slice as x[i:i+k] (or x[i+a:i+b]) with k (a, b) static: a Python int or a shape; "
             "for a prefix or suffix, mask instead: np.where(np.arange(len(x)) < i, x, 0) for x[:i]")


def _dyn_slice_entry(st, k, d):
    """(("ds", length), start atom) for a slice with a traced start and a static length."""
    start, stop, step = (_known(p) for p in (k.start, k.stop, k.step))
    if step is not None and (isinstance(step, Traced) or step != 1):
        raise ConcreteNeeded(f"a slice {_slice_text(k)} with a traced bound and a step is not supported: its step "
                             "must be 1", hint=_DYN_HINT)
    lo = 0 if start is None else start
    hi = d if stop is None else stop
    n = static_difference(st, hi, lo)
    if n is None:
        raise ConcreteNeeded(f"the length of the slice {_slice_text(k)} (stop - start) must be known at staging "
                             "time, but it depends on traced data", hint=_DYN_HINT)
    if not isinstance(lo, Traced):  # both ends are the same traced value plus offsets: x[i-i:...] is rare
        raise ConcreteNeeded(f"the slice {_slice_text(k)} has a static start but a traced stop", hint=_DYN_HINT)
    if lo.type.dtype != "i64":
        raise StagingError(f"slice bounds must be integers, got a traced {lo.type}",
                           hint="convert with int(...) or .astype(int)")
    if not 0 <= n <= d:
        raise ShapeError(f"the slice {_slice_text(k)} has length {n}, which does not fit an axis of size {d}",
                         hint="a slice with a traced start has the static length stop - start, between 0 and the "
                              "axis size")
    return ("ds", n), lo.atom


def _slice_entry(k, d):
    k = slice(*(_known(p) for p in (k.start, k.stop, k.step)))
    start, stop, step = k.indices(d)
    if len(range(start, stop, step)) == 0:
        return ("s", 0, 0, 1)
    if stop < 0:
        stop = None
    return ("s", start, stop, step)


_BOOL_INDEX = ("a boolean scalar index is not supported: NumPy reads x[True] as a mask "
               "(it adds an axis), not as position 1")
_BOOL_INDEX_HINT = "to use it as a position, convert it first: x[int(b)]"


def _int_index(st, k, d):
    """An atom for an integer index into a dimension of size d."""
    if isinstance(k, Traced):
        if k.ndim != 0:
            raise StagingError("array index must be a scalar")
        if k.type.dtype == "bool":
            raise UnsupportedSyntaxError(_BOOL_INDEX, hint=_BOOL_INDEX_HINT)
        if k.type.dtype != "i64":
            raise StagingError(f"array indices must be integers, got a traced {k.type}",
                               hint="convert with int(...) or .astype(int)")
        return k.atom
    if isinstance(k, (bool, np.bool_)):
        raise UnsupportedSyntaxError(_BOOL_INDEX, hint=_BOOL_INDEX_HINT)
    k = static_int(k, "an index")
    if not -d <= k < d:
        raise ShapeError(f"index {k} is out of bounds for a dimension of size {d}",
                         hint=f"valid indices are {-d}..{d - 1}")
    return Const(k % d, TensorType("i64"))


def _index_array_atom(st, k):
    if isinstance(k, list) and any(isinstance(x, Traced) for x in k):
        return cast(st, array(st, k), "i64").atom
    if isinstance(k, list):
        k = np.asarray(k)
    if isinstance(k, np.ndarray):
        if k.dtype == np.bool_:
            raise StagingError("boolean mask indexing produces a data-dependent shape",
                               hint="use np.where(mask, x, 0) instead")
        return Const(k.astype(np.int64), TensorType("i64", k.shape))
    if k.type.dtype != "i64":
        raise StagingError(f"index arrays must be integers, got {k.type}",
                           hint="boolean masks are not supported: use np.where(mask, x, 0)")
    return k.atom


def _plan(st, x: Traced, key):
    """(spec, index atoms, output shape incl. new axes, has_newaxis, take info)."""
    ents = _expand_key(key, x.ndim)
    adv = [i for i, k in enumerate(ents) if _is_index_array(k)]
    if len(adv) > 1 and adv == list(range(len(adv))) and all(
            isinstance(k, slice) and k == slice(None) for k in ents[len(adv):]):
        # x[i0, i1, ...] with integer arrays on the leading dims: a gather on the flattened dims
        shape = x.shape
        lin = None
        for j in adv:
            ij = _index_array_atom(st, ents[j])
            stride = int(np.prod(shape[j + 1:len(adv)], dtype=np.int64))
            term = Traced(ij) if stride == 1 else emit(st, "mul", ij, Const(stride, TensorType("i64")))
            lin = term if lin is None else binary(st, "add", lin, term)
        flat = reshape(st, x, (int(np.prod(shape[:len(adv)], dtype=np.int64)),) + tuple(shape[len(adv):]))
        return None, None, None, False, (0, lin.atom, flat)
    if adv:
        if len(adv) > 1 or any(not (isinstance(k, slice) and k == slice(None)) for i, k in enumerate(ents) if i != adv[0]):
            raise UnsupportedSyntaxError("integer-array indexing is supported only as x[idx] or x[:, idx] (all other "
                                         "entries full slices), or, for reading, one index array mixed with "
                                         "integers and slices (x[3, 2:, [1, 3]])",
                                         hint="use np.take or index in two steps")
        return None, None, None, False, (adv[0], _index_array_atom(st, ents[adv[0]]), x)
    spec, args, out_shape = [], [], []
    dim = 0
    newaxis = False
    for k in ents:
        if k is None:
            out_shape.append(1)
            newaxis = True
            continue
        d = x.shape[dim]
        if isinstance(k, slice) and _traced_slice(k):
            e, start = _dyn_slice_entry(st, k, d)
            spec.append(e)
            args.append(start)
            out_shape.append(e[1])
        elif isinstance(k, slice):
            e = _slice_entry(k, d)
            spec.append(e)
            out_shape.append(len(range(*slice(e[1], e[2], e[3]).indices(d))))
        else:
            spec.append(("d",))
            args.append(_int_index(st, k, d))
        dim += 1
    out_shape.extend(x.shape[dim:])
    while spec and spec[-1][0] == "s" and spec[-1][1:] == (0, x.shape[len(spec) - 1], 1):
        spec.pop()
    return tuple(spec), args, tuple(out_shape), newaxis, None


def _mixed_read(st, x: Traced, key):
    """`x[3, 2:, [1, 3]]`: one integer-index array among integers and slices, read
    with NumPy's rule. The integers and the array are the advanced indices; their
    (the array's) dimensions stand where the first of them stands when they are
    adjacent, and in front otherwise. Lowered to the basic indexing (the array's
    axis kept whole), a `take` along that axis, and a transpose. None if `key` is
    not of this form."""
    ents = _expand_key(key, x.ndim)
    arrays = [i for i, k in enumerate(ents) if _is_index_array(k)]
    if len(arrays) != 1 or any(k is None for k in ents):
        return None
    j = arrays[0]
    rest = [k for i, k in enumerate(ents) if i != j]
    if all(isinstance(k, slice) and k == slice(None) for k in rest):
        return None  # x[idx] / x[:, idx]: the plain `take`
    if not all(isinstance(k, slice) or _is_int_index(k) for k in rest):
        return None
    advanced = [i for i, k in enumerate(ents) if i == j or not isinstance(k, slice)]
    axis = sum(1 for k in ents[:j] if isinstance(k, slice))
    y = getitem(st, x, tuple(slice(None) if i == j else k for i, k in enumerate(ents)))
    idx = _index_array_atom(st, ents[j])
    r = emit(st, "take", y.atom, idx, axis=axis)
    if advanced != list(range(advanced[0], advanced[-1] + 1)) and axis > 0:  # separated: in front
        n = idx.type.ndim
        perm = tuple(range(axis, axis + n)) + tuple(range(axis)) + tuple(range(axis + n, r.ndim))
        r = transpose(st, r, perm)
    return r


def _is_int_index(k) -> bool:
    return isinstance(k, (int, np.integer)) and not isinstance(k, bool) or (
        isinstance(k, Traced) and k.ndim == 0 and k.type.dtype == "i64")


def getitem(st, x, key):
    x = x if isinstance(x, Traced) else as_traced(st, x)
    m = _mask_key(key)
    if m is not None:
        return masks.select(st, x, m)
    if x.ndim == 0 and key != () and key is not Ellipsis:
        raise ShapeError("cannot index a scalar", hint="scalars have no dimensions to index")
    mixed = _mixed_read(st, x, key)
    if mixed is not None:
        return mixed
    spec, args, out_shape, newaxis, take = _plan(st, x, key)
    if take is not None:
        axis, idx, src = take
        return emit(st, "take", src.atom, idx, axis=axis)
    r = emit(st, "index", x.atom, *args, spec=spec) if spec else x
    if newaxis:
        r = reshape(st, r, out_shape)
    return r


def _mask_key(key):
    """The boolean mask of `x[m]` (or `x[m,]`), else None."""
    if isinstance(key, tuple) and len(key) == 1:
        key = key[0]
    return key if masks.is_mask(key) else None


def setitem(st, x, key, value, mode="set"):
    """The array `x` with `x[key]` set to (mode 'set') or incremented by (mode 'add') `value`."""
    x = x if isinstance(x, Traced) else as_traced(st, x)
    check_numeric(value, "assigned value")
    if isinstance(value, (list, tuple)):
        value = np.asarray(value)
    m = _mask_key(key)
    if m is not None:
        return masks.assign(st, x, m, value, mode)
    spec, args, out_shape, newaxis, take = _plan(st, x, key)
    v = atom(st, value, x.type.dtype)
    if take is not None:
        axis, idx, src = take
        if src is not x:
            raise UnsupportedSyntaxError("assigning through several integer index arrays is not supported",
                                         hint="use a loop with scalar indices")
        if mode != "add" and axis == 0 and idx.type.ndim == 1 and idx.type.shape[0] <= 1000:
            # x[idx] = v: one row update per index, in order (the last write wins, as in NumPy)
            n = idx.type.shape[0]
            vt = broadcast_to(st, Traced(v), (n,) + x.shape[1:])
            out = x
            for k in range(n):
                ik = emit(st, "index", idx, Const(k, TensorType("i64")), spec=(("d",),))
                vk = emit(st, "index", vt.atom, Const(k, TensorType("i64")), spec=(("d",),))
                out = emit(st, "index_update", out.atom, vk.atom, ik.atom, spec=(("d",),), mode="set")
            return out
        if mode != "add":
            raise UnsupportedSyntaxError("assigning through an integer index array is not supported",
                                         hint="use `x[idx] += v` (accumulates), or a loop with scalar indices")
        want = x.shape[:axis] + idx.type.shape + x.shape[axis + 1:]
        if v.type.shape != want:
            v = broadcast_to(st, Traced(v), want).atom
        return emit(st, "take_add", x.atom, idx, v, axis=axis)
    if newaxis:
        raise UnsupportedSyntaxError("np.newaxis in an assignment target is not supported")
    return emit(st, "index_update", x.atom, v, *args, spec=spec, mode=mode)


# -- np.r_ / np.c_ ---------------------------------------------------------------------------

def is_index_trick(obj) -> bool:
    """`np.r_` / `np.c_` (NumPy's `index_tricks` concatenators, used as `np.r_[a, b]`)."""
    return obj is np.r_ or obj is np.c_


def index_trick(st, obj, key):
    """`np.r_[...]` / `np.c_[...]` with traced items: arrays, scalars and slices with static
    bounds (`np.r_[0:3]` is `np.arange(0, 3)`). np.r_ joins them along axis 0 (a scalar is a
    1-element array); np.c_ along the last axis, a 1-D array or scalar becoming a column."""
    what = "np.c_" if obj is np.c_ else "np.r_"
    parts = []
    for it in key if isinstance(key, tuple) else (key,):
        if isinstance(it, str):
            raise UnsupportedSyntaxError(f"{what}[...] with a directive string ({it!r}) is not supported",
                                         hint="use np.concatenate / np.stack with an axis")
        if isinstance(it, slice):
            if _traced_slice(it):
                raise ConcreteNeeded(f"{what}[a:b] with a traced bound: its length must be known at staging time",
                                     hint="use static bounds, or np.arange with static arguments")
            if isinstance(it.step, complex):
                raise UnsupportedSyntaxError(f"{what}[a:b:nj] (a linspace) is not supported",
                                             hint="use np.linspace(a, b, n)")
            it = np.arange(0 if it.start is None else it.start, it.stop, 1 if it.step is None else it.step)
        v = it if isinstance(it, (Traced, np.ndarray)) else as_traced(st, it)
        if isinstance(v, Traced) and v.ndim and not isinstance(it, Traced):
            v = it
        nd = np.ndim(v)
        if obj is np.c_ and nd < 2:
            v = reshape(st, v, (int(np.size(v)), 1)) if isinstance(v, Traced) else np.reshape(v, (-1, 1))
        elif nd == 0:
            v = reshape(st, v, (1,)) if isinstance(v, Traced) else np.reshape(v, (1,))
        parts.append(v)
    from .ops import concatenate
    return concatenate(st, parts, axis=-1 if obj is np.c_ else 0)
