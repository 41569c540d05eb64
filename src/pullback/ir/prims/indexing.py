"""Indexing: basic indexing/slicing (`index`, `index_update`) and gathers
(`take`, `take_add`).

`spec` describes one entry per leading dimension of the indexed array:
``("d",)`` consumes the next index argument (a scalar i64; the dimension is
dropped), ``("s", start, stop, step)`` is a static slice (the dimension is
kept) and ``("ds", k)`` is a dynamic slice: it consumes the next index
argument, the start i (a scalar i64), and keeps ``x[i:i+k]`` (k static, step
1; the dimension becomes k). A dynamic slice must fit: ``0 <= i <= n - k``
(never clamped, never wrapped; `DynSliceError`, an `IndexError`, otherwise,
located by `backends.checks`). Dimensions past the spec are taken whole. `index_update` writes `v`
into the selected region (``mode="set"``) or adds it there (``mode="add"``);
`v` broadcasts to the region's shape.
"""
from __future__ import annotations

import numpy as np

from . import TABLE, Row, check
from ._util import unbroadcast


def takes_index(s) -> bool:
    """Whether spec entry `s` consumes an index argument ("d" and "ds")."""
    return s[0] in ("d", "ds")


class DynSliceError(IndexError):
    """A dynamic slice ``x[i:i+k]`` that does not fit its axis (raised by the impls;
    `backends.checks.from_exception` turns it into the located error)."""

    def __init__(self, start, length, axis, size):
        super().__init__(f"slice start {start} with length {length} is out of bounds for axis {axis} with size {size}")
        self.start, self.length, self.axis, self.size = start, length, axis, size


def region_shape(shape, spec):
    out = []
    for d, s in zip(shape, spec):
        if s[0] == "s":
            out.append(len(range(*slice(s[1], s[2], s[3]).indices(d))))
        elif s[0] == "ds":
            out.append(s[1])
    out.extend(shape[len(spec):])
    return tuple(out)


def static_ranges(spec, idx, shape) -> list:
    """Per axis of an array of `shape`, the indices that `spec` with index
    arguments `idx` selects, as a range (None: not known statically)."""
    from ..core import Const

    spec = tuple(spec) + (("s", None, None, None),) * (len(shape) - len(spec))
    it, out = iter(idx), []
    for d, sp in zip(shape, spec):
        d = int(d)
        if sp[0] == "d":
            i = next(it)
            ok = isinstance(i, Const) and i.type.dtype == "i64" and -d <= int(i.value) < d
            out.append(range(int(i.value) % d, int(i.value) % d + 1) if ok else None)
        elif sp[0] == "ds":
            next(it)
            out.append(None)
        else:
            out.append(range(*slice(sp[1], sp[2], sp[3]).indices(d)))
    return out


def ranges_disjoint(ra: range, rb: range) -> bool:
    """Do two ranges of indices have no index in common?"""
    if not len(ra) or not len(rb) or max(ra) < min(rb) or max(rb) < min(ra):
        return True
    if ra.step in (1, -1) and rb.step in (1, -1):   # intervals that meet
        return False
    return len(ra) * len(rb) <= 1 << 16 and not set(ra) & set(rb)


def regions_disjoint(shape, spec_a, idx_a, spec_b, idx_b) -> bool:
    """Do two regions of an array of `shape` (spec and index arguments each)
    select no common element? Shown by one axis where both take different
    constant indices, or static slices (or a constant index and a slice) with
    no index in common; False when not shown."""
    return any(p is not None and q is not None and ranges_disjoint(p, q)
               for p, q in zip(static_ranges(spec_a, idx_a, shape), static_ranges(spec_b, idx_b, shape)))


def _check_spec(t, spec, idx_types):
    check(len(spec) <= t.ndim, f"too many indices ({len(spec)}) for array {t}")
    nd = sum(1 for s in spec if takes_index(s))
    check(nd == len(idx_types), "index: spec and index arguments disagree")
    for s, d in zip(spec, t.shape):
        check(s[0] in ("d", "s", "ds"), f"index: bad spec entry {s!r}")
        if s[0] == "ds":
            check(isinstance(s[1], int) and 0 <= s[1] <= d,
                  f"a dynamic slice of length {s[1]} does not fit an axis of size {d}")
    for it in idx_types:
        check(it.ndim == 0 and it.dtype in ("i64", "bool"),
              f"array indices must be integer scalars, got {it}",
              hint="use int(...) or .astype(int) for computed indices")


def np_index(spec, idx, shape=None):
    """The NumPy key of `spec` with index values `idx`; with `shape`, dynamic
    slices are checked to fit (`DynSliceError`)."""
    it = iter(idx)
    out = []
    for axis, s in enumerate(spec):
        if s[0] == "d":
            out.append(int(next(it)))
        elif s[0] == "ds":
            i = int(next(it))
            if shape is not None and not 0 <= i <= shape[axis] - s[1]:
                raise DynSliceError(i, s[1], axis, shape[axis])
            out.append(slice(i, i + s[1]))
        else:
            out.append(slice(s[1], s[2], s[3]))
    return tuple(out)


def _index_type(ts, spec):
    t, *its = ts
    _check_spec(t, spec, its)
    return (t.with_shape(region_shape(t.shape, spec)),)


def _index_impl(x, *idx, spec):
    x = np.asarray(x)
    r = x[np_index(spec, idx, x.shape)]
    return r.copy() if isinstance(r, np.ndarray) else r


def _index_jvp(b, args, tans, outs, spec):
    return [b.index(tans[0], *args[1:], spec=spec)]


def _index_vjp(b, args, outs, cts, need, spec):
    x = args[0]
    z = b.zeros(x.type.with_dtype(cts[0].type.dtype), name="zeros")
    return [b.index_update(z, cts[0], *args[1:], spec=spec, mode="add")] + [None] * (len(args) - 1)


TABLE.add(Row("index", _index_type, _index_impl, _index_jvp, _index_vjp,
              cost=lambda ts, outs, spec: 0))


def _update_type(ts, spec, mode):
    t, v, *its = ts
    _check_spec(t, spec, its)
    region = region_shape(t.shape, spec)
    try:
        ok = tuple(np.broadcast_shapes(v.shape, region)) == region
    except ValueError:
        ok = False
    check(ok, f"cannot assign a value of shape {v.shape} to a region of shape {region}",
          hint="the assigned value must broadcast to the indexed region")
    check(mode in ("set", "add"), f"bad update mode {mode}")
    return (t,)


def _update_impl(x, v, *idx, spec, mode):
    r = np.array(x, copy=True)
    ix = np_index(spec, idx, r.shape)
    if mode == "set":
        r[ix] = v
    else:
        r[ix] += v
    return r


def _update_jvp(b, args, tans, outs, spec, mode):
    x, v, *idx = args
    tx, tv = tans[0], tans[1]
    if tx is None and tv is None:
        return [None]
    if tx is None:
        tx = b.zeros(outs[0].type)
    if tv is None:
        if mode == "add":
            return [tx]
        tv = b.const(0.0, outs[0].type.dtype)
    return [b.index_update(tx, tv, *idx, spec=spec, mode=mode)]


def _update_vjp(b, args, outs, cts, need, spec, mode):
    x, v, *idx = args
    (ct,) = cts
    gx = gv = None
    if need[1]:  # read the region before it is cleared, so the clear can be done in place
        gv = unbroadcast(b, b.index(ct, *idx, spec=spec), v.type)
    if need[0]:
        gx = ct if mode == "add" else b.index_update(ct, b.const(0.0, ct.type.dtype), *idx, spec=spec, mode="set")
    return [gx, gv] + [None] * len(idx)


TABLE.add(Row("index_update", _update_type, _update_impl, _update_jvp, _update_vjp,
              cost=lambda ts, outs, spec, mode: ts[1].size))


def _take_type(ts, axis):
    t, it = ts
    check(it.dtype in ("i64",), f"gather indices must be integers, got {it}")
    check(0 <= axis < t.ndim, f"gather axis {axis} out of range for {t}")
    return (t.with_shape(t.shape[:axis] + it.shape + t.shape[axis + 1:]),)


TABLE.add(Row(
    "take", _take_type, lambda x, i, axis: np.take(x, i, axis=axis),
    jvp=lambda b, a, t, o, axis: [b.take(t[0], a[1], axis=axis)],
    vjp=lambda b, a, o, ct, need, axis: [
        b.take_add(b.zeros(a[0].type.with_dtype(ct[0].type.dtype)), a[1], ct[0], axis=axis), None],
    cost=lambda ts, outs, axis: outs[0].size,
))


def _take_add_type(ts, axis):
    t, it, v = ts
    (want,) = _take_type([t, it], axis)
    check(tuple(v.shape) == tuple(want.shape), f"take_add: values {v} do not match {want}")
    return (t,)


def _take_add_impl(x, i, v, axis):
    r = np.array(x, copy=True)
    np.add.at(r, (slice(None),) * axis + (i,), v)
    return r


def _take_add_jvp(b, a, t, o, axis):
    tx, tv = t[0], t[2]
    if tv is None:
        return [tx]
    if tx is None:
        tx = b.zeros(o[0].type)
    return [b.take_add(tx, a[1], tv, axis=axis)]


TABLE.add(Row(
    "take_add", _take_add_type, _take_add_impl, _take_add_jvp,
    vjp=lambda b, a, o, ct, need, axis: [ct[0], None, b.take(ct[0], a[1], axis=axis) if need[2] else None],
    cost=lambda ts, outs, axis: ts[2].size,
))
