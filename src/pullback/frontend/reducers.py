"""Staging of `pb.reduce`, `pb.associative_scan`, `pb.hist` and `pb.scatter`
(note [reducers]).

Contract:
- `stage_reduce(st, op, ne, xs)`, `stage_scan(st, op, ne, xs)`,
  `stage_hist(st, op, ne, num_bins, indices, values)`,
  `stage_scatter(st, dest, indices, values)`: `st` is the staging
  interpreter, the other arguments staging-time values; each returns the
  staged result (a `Traced`, or a tuple of them for a tuple operator) with
  the reference semantics of `pullback.reducers`.
- The operator is staged once on placeholders of the element types (a tuple
  of them when several arrays are combined) and recognised by what its body
  computes: one `add`/`mul`/`maximum`/`minimum` of its two parameters (either
  order) is that named operator, however it was spelt. Named operators lower
  to primitives with exact derivatives where one exists (reduce: `sum`;
  `prod`, whose rules count zeros; `argmax`/`argmin` and a gather, so only
  the first winner gets the adjoint; hist with `+`: `take_add`); everything
  else lowers to one sequential IR `Loop` whose body is the operator's body
  inlined (min/max as a select that keeps the earlier operand on ties), so
  every derivative comes from the loop machinery: correct in every mode and
  O(n).
- `pb.scatter` is a loop of `index_update`s (in place when the destination
  is dead, by the backends' ownership analysis), guarded by the
  `unique_indices` primitive (a duplicate in-range index is a located error).
- Bad arguments are located `PullbackError`s at the user's line.
"""
from __future__ import annotations

import numpy as np

from ..errors import PullbackError, ShapeError
from ..ir.core import Const, Let
from ..ir.traverse import rename_body
from ..ir.types import I64, TensorType
from .values import Traced, to_atom

_NAMED = {"add": "add", "mul": "mul", "maximum": "max", "minimum": "min"}


def _fname(fun) -> str:
    return getattr(fun, "__name__", None) or type(fun).__name__


class _Op:
    """A staged operator: `named` ("add", "mul", "max", "min" or None), else the
    Func to inline (`func`) with its captured leaves (`caps`)."""

    def __init__(self, named, func, caps, k):
        self.named, self.func, self.caps, self.k = named, func, caps, k

    def combine(self, b, accs, elems, loc=None):
        """Emit `op(accs, elems)` into builder `b`; returns the result atoms."""
        if self.named is not None:
            return [named_combine(b, self.named, accs[0], elems[0])]
        mapping = dict(zip(self.func.params, list(accs) + list(elems) + list(self.caps)))
        body = rename_body(self.func.body, b.supply, mapping)
        b.stmts.extend(Let(s.pat, s.exp, s.loc or loc) for s in body.stmts)
        return list(body.result)


def named_combine(b, named, a, x):
    """`a op x` for a named operator; min/max keep `a` (the earlier operand) on a
    tie, so a derivative never splits between equal values, and propagate NaN
    as np.minimum/np.maximum do."""
    if named in ("add", "mul"):
        return b.emit(named, a, x, name="acc")
    take = b.emit("gt" if named == "max" else "lt", x, a, name="wins")
    if x.type.is_float:
        take = b.emit("or", take, b.emit("isnan", x, name="nan"), name="wins")
    return b.emit("where", take, x, a, name="acc")


def _arrays(st, xs, what, loc):
    """Atoms of the arrays `xs` (each at least 1-D, one common leading length)."""
    atoms = []
    for x in xs:
        a = to_atom(st.b, x)
        t = a.type
        if not isinstance(t, TensorType) or t.ndim == 0:
            raise ShapeError(f"{what}: expected arrays to combine along their leading axis, got {t}", loc=loc,
                             hint="pass arrays (np.asarray(...)); a scalar has nothing to combine")
        atoms.append(a)
    if not atoms:
        raise PullbackError(f"{what}: no arrays given", loc=loc, hint=f"write {what}(op, ne, xs)")
    ns = {a.type.shape[0] for a in atoms}
    if len(ns) != 1:
        raise ShapeError(f"{what}: the arrays have leading dimensions {sorted(ns)}", loc=loc,
                         hint="every array needs the same length along the combined axis")
    return atoms


def _elem_types(atoms):
    return [TensorType(a.type.dtype, tuple(a.type.shape[1:])) for a in atoms]


def _neutral(st, ne, types, what, loc):
    """Atoms of the neutral element(s), one per element type, converted to it."""
    k = len(types)
    if k == 1:
        leaves = [ne]
    else:
        if not isinstance(ne, (tuple, list)) or len(ne) != k:
            raise PullbackError(f"{what}: with {k} arrays the neutral element must be a tuple of {k} values, "
                                f"got {type(ne).__name__}", loc=loc,
                                hint="give one neutral value per array, in the same order")
        leaves = list(ne)
    out = []
    for v, t in zip(leaves, types):
        if isinstance(v, (tuple, list)):
            raise PullbackError(f"{what}: the neutral element must be a number or an array, got a "
                                f"{type(v).__name__}", loc=loc, hint="pass np.asarray(...) for an array")
        a = to_atom(st.b, v, t.dtype)
        if tuple(a.type.shape) != tuple(t.shape):
            try:
                ok = tuple(np.broadcast_shapes(a.type.shape, t.shape)) == tuple(t.shape)
            except ValueError:
                ok = False
            if not ok:
                raise ShapeError(f"{what}: the neutral element has shape {a.type.shape} but the elements have "
                                 f"shape {t.shape}", loc=loc, hint="give a neutral element of the element's shape")
            a = st.b.emit("broadcast_to", a, shape=tuple(t.shape), name="ne")
        out.append(a)
    return out


def _pack(b, ts, k):
    return ts[0] if k == 1 else ts


def stage_op(st, op, types, what, loc) -> _Op:
    """Stage `op` on two operands of the element `types` (tuples when several)."""
    from .. import transforms
    from .calls import StagingContext

    if not callable(op):
        raise PullbackError(f"{what}: the operator is {type(op).__name__}, not a function", loc=loc,
                            hint="pass a function of two values, e.g. pb.add, pb.max or lambda a, b: a + b")
    ctx = StagingContext(st)
    b = st.b
    k = len(types)
    pa = [Traced(b.fresh("a", t)) for t in types]
    pb_ = [Traced(b.fresh("b", t)) for t in types]
    args = (pa[0], pb_[0]) if k == 1 else (tuple(pa), tuple(pb_))
    fname, leaves, _, out_tree, ret_types = transforms.stage_fn(ctx, op, args)
    got = [tuple(t.shape) + (t.dtype,) for t in ret_types]
    want = [tuple(t.shape) + (t.dtype,) for t in types]
    if got != want or (k > 1) != (out_tree.kind != "leaf"):
        shown = ", ".join(str(t) for t in ret_types) or "nothing"
        raise PullbackError(
            f"{what}: the operator '{_fname(op)}' must return {'a tuple of ' if k > 1 else ''}"
            f"{', '.join(str(t) for t in types)} (the element type), but it returns {shown}", loc=loc,
            hint="an associative operator combines two elements into one of the same type; give the neutral "
                 "element and the arrays that type (cast with .astype(...) if needed)")
    func = st.state.funcs[fname]
    caps = leaves[2 * k:]
    named = None
    if k == 1 and len(func.body.stmts) == 1:
        s = func.body.stmts[0]
        e = s.exp
        p0, p1 = func.params[0], func.params[1]
        if (getattr(e, "op", None) in _NAMED and set(e.args) == {p0, p1} and len(e.args) == 2
                and func.body.result == s.pat and p0 != p1):
            named = _NAMED[e.op]
    return _Op(named, func, caps, k)


def _index(b, x, j, name="x"):
    return b.emit("index", x, j, spec=(("d",),), name=name)


# -- reduce -------------------------------------------------------------------------------

def _operands(st, op, ne, xs, what):
    """(arrays, element types, neutral atoms, the staged operator, length) of a reduce or scan."""
    xs = _arrays(st, xs, what, st.loc)
    types = _elem_types(xs)
    nes = _neutral(st, ne, types, what, st.loc)
    return xs, types, nes, stage_op(st, op, types, what, st.loc), xs[0].type.shape[0]


def stage_reduce(st, op, ne, xs, what="pb.reduce"):
    loc = st.loc
    b = st.b
    xs, types, nes, o, n = _operands(st, op, ne, xs, what)
    k = len(xs)
    if n == 0:
        return _pack(b, [Traced(a) for a in nes], k)
    if o.named is not None and types[0].dtype in ("f64", "f32", "i64"):
        return Traced(_reduce_named(b, o.named, nes[0], xs[0]))
    sb = b.child()
    j = sb.fresh("j", I64)
    accs = [sb.fresh("acc", t) for t in types]
    elems = [_index(sb, x, j) for x in xs]
    new = o.combine(sb, accs, elems, loc)
    outs = b.for_loop(accs, nes, j, Const(n, I64), sb.body(new), names=["acc"] * k)
    return _pack(b, [Traced(v) for v in outs], k)


def _reduce_named(b, named, ne, x):
    """sum / prod (zero-counting rules) / the first arg-extremum, combined with `ne`."""
    if named == "add":
        return b.emit("add", ne, b.emit("sum", x, axes=(0,), name="total"), name="acc")
    if named == "mul":
        return b.emit("mul", ne, b.emit("prod", x, axes=(0,), name="product"), name="acc")
    n, rest = x.type.shape[0], tuple(x.type.shape[1:])
    arg = "argmax" if named == "max" else "argmin"
    if not rest:
        k = b.emit(arg, x, axis=0, name="winner")
        v = _index(b, x, k, name="best")
    else:
        size = int(np.prod(rest))
        x2 = b.emit("reshape", x, shape=(n, size), name="rows")
        k = b.emit(arg, x2, axis=0, name="winner")
        flat = b.emit("add", b.emit("mul", k, Const(size, I64)), b.emit("iota", n=size, dtype="i64"), name="at")
        v = b.emit("take", b.emit("reshape", x, shape=(n * size,), name="flat"), flat, axis=0, name="best")
        v = b.emit("reshape", v, shape=rest, name="best")
    return named_combine(b, named, ne, v)


# -- scan ---------------------------------------------------------------------------------

def stage_scan(st, op, ne, xs, what="pb.associative_scan"):
    loc = st.loc
    b = st.b
    xs, types, nes, o, n = _operands(st, op, ne, xs, what)
    k = len(xs)
    zeros = [b.emit("full", Const(0, TensorType(x.type.dtype)), shape=tuple(x.type.shape), name="scan")
             for x in xs]
    if n == 0:
        return _pack(b, [Traced(z) for z in zeros], k)
    if o.named == "add" and xs[0].type.ndim == 1 and types[0].dtype in ("f64", "f32", "i64"):
        # the special rule: a prefix sum, whose adjoint is the suffix sum of its cotangent
        return Traced(b.emit("add", nes[0], b.emit("cumsum", xs[0], name="prefix"), name="scan"))
    sb = b.child()
    j = sb.fresh("j", I64)
    accs = [sb.fresh("acc", t) for t in types]
    outs = [sb.fresh("out", x.type) for x in xs]
    elems = [_index(sb, x, j) for x in xs]
    new = o.combine(sb, accs, elems, loc)
    written = [sb.emit("index_update", out, v, j, spec=(("d",),), mode="set", name="out")
               for out, v in zip(outs, new)]
    res = b.for_loop(accs + outs, nes + zeros, j, Const(n, I64), sb.body(list(new) + written),
                     names=["acc"] * k + ["scan"] * k)
    return _pack(b, [Traced(v) for v in res[k:]], k)


# -- hist ---------------------------------------------------------------------------------

def _indices(st, indices, what, loc):
    a = to_atom(st.b, indices)
    t = a.type
    if not isinstance(t, TensorType) or t.ndim != 1 or t.dtype not in ("i64",):
        raise ShapeError(f"{what}: the indices must be a vector of integers, got {t}", loc=loc,
                         hint="pass an int array (e.g. idx.astype(int)) with one index per value")
    return a


def _in_range(b, idx, n):
    """(valid, safe): idx in [0, n), and idx where valid else 0."""
    valid = b.emit("and", b.emit("ge", idx, Const(0, I64)), b.emit("lt", idx, Const(n, I64)), name="valid")
    safe = b.emit("where", valid, idx, Const(0, I64), name="at")
    return valid, safe


def _hist_add_map(b, bins, at, vals):
    """`+`-hist as a map over the values that adds each into its bin: an accumulator
    (ir.core.Map), so numba may run it on all cores with private partial bins, and
    the other backends run it as a scatter-add (`passes.vectorize`: `take_add`).
    Its adjoint is the map of gathers, O(m) (`passes.vjp.map_`)."""
    from ..ir.core import Lambda, Map

    sb = b.child()
    j = sb.fresh("j", I64)
    i = sb.fresh("i", I64)
    v = sb.fresh("v", TensorType(vals.type.dtype, vals.type.shape[1:]))
    acc = sb.fresh("bins", bins.type)
    new = sb.emit("index_update", acc, v, i, spec=(("d",),), mode="add", name="bins")
    out = b.fresh("hist", bins.type)
    b.let((out,), Map(Const(vals.type.shape[0], I64), (at, vals), (bins,), Lambda((j, i, v, acc), sb.body([new]))))
    return out


def stage_hist(st, op, ne, num_bins, indices, values, what="pb.hist"):
    from . import ops

    loc = st.loc
    b = st.b
    nb = ops.static_int(num_bins, f"{what}: num_bins")
    if nb < 0:
        raise ShapeError(f"{what}: num_bins is {nb}", loc=loc, hint="give a non-negative number of bins")
    k = len(values) if isinstance(values, (tuple, list)) else 1
    vals = _arrays(st, list(values) if k > 1 else [values], what, loc)
    idx = _indices(st, indices, what, loc)
    m = vals[0].type.shape[0]
    if idx.type.shape[0] != m:
        raise ShapeError(f"{what}: {idx.type.shape[0]} indices for {m} values", loc=loc,
                         hint="give one bin index per value")
    types = _elem_types(vals)
    nes = _neutral(st, ne, types, what, loc)
    o = stage_op(st, op, types, what, loc)
    bins = [b.emit("full", a, shape=(nb,)) if not t.shape else
            b.emit("broadcast_to", a, shape=(nb,) + tuple(t.shape), name="bins") for a, t in zip(nes, types)]
    if nb == 0 or m == 0:
        return _pack(b, [Traced(v) for v in bins], k)
    valid, safe = _in_range(b, idx, nb)
    if o.named == "add" and types[0].dtype in ("f64", "f32", "i64"):
        x = vals[0]
        rest = tuple(x.type.shape[1:])
        keep = valid if not rest else b.emit("broadcast_to", b.emit("reshape", valid, shape=(m,) + (1,) * len(rest)),
                                             shape=tuple(x.type.shape), name="valid")
        v = b.emit("where", keep, x, Const(0, TensorType(x.type.dtype)), name="vals")
        return Traced(_hist_add_map(b, bins[0], safe, v))
    sb = b.child()
    j = sb.fresh("j", I64)
    outs = [sb.fresh("bins", a.type) for a in bins]
    i = _index(sb, safe, j, name="i")
    ok = _index(sb, valid, j, name="ok")
    olds = [_index(sb, out, i, name="old") for out in outs]
    elems = [_index(sb, x, j) for x in vals]
    new = o.combine(sb, olds, elems, loc)
    written = []
    for out, old, v in zip(outs, olds, new):
        keep = sb.emit("where", ok, v, old, name="new")
        written.append(sb.emit("index_update", out, keep, i, spec=(("d",),), mode="set", name="bins"))
    res = b.for_loop(outs, bins, j, Const(m, I64), sb.body(written), names=["hist"] * k)
    return _pack(b, [Traced(v) for v in res], k)


# -- scatter ------------------------------------------------------------------------------

def stage_scatter(st, dest, indices, values, what="pb.scatter"):
    from ..ir.prims.combine import first_duplicate

    loc = st.loc
    b = st.b
    d = to_atom(b, dest)
    if not isinstance(d.type, TensorType) or d.type.ndim == 0:
        raise ShapeError(f"{what}: the destination must be an array, got {d.type}", loc=loc)
    n = d.type.shape[0]
    idx = _indices(st, indices, what, loc)
    m = idx.type.shape[0]
    row = TensorType(d.type.dtype, tuple(d.type.shape[1:]))
    v = to_atom(b, values, d.type.dtype)
    want = (m,) + tuple(row.shape)
    if tuple(v.type.shape) != want:
        try:
            ok = tuple(np.broadcast_shapes(v.type.shape, want)) == want
        except ValueError:
            ok = False
        if not ok:
            raise ShapeError(f"{what}: values of shape {v.type.shape} for {m} indices into rows of shape "
                             f"{row.shape}", loc=loc, hint=f"give values of shape {want}")
        v = b.emit("broadcast_to", v, shape=want, name="values")
    if m == 0 or n == 0:
        return Traced(d)
    if isinstance(idx, Const):
        dup = first_duplicate(idx.value, n)
        if dup is not None:
            from ..backends.checks import duplicate_error

            raise duplicate_error(loc, dup, n)
    else:
        idx = b.emit("unique_indices", idx, n=n, name="idx")
    valid, safe = _in_range(b, idx, n)
    sb = b.child()
    j = sb.fresh("j", I64)
    out = sb.fresh("out", d.type)
    i = _index(sb, safe, j, name="i")
    ok = _index(sb, valid, j, name="ok")
    old = _index(sb, out, i, name="old")
    x = _index(sb, v, j, name="value")
    new = sb.emit("where", ok, x, old, name="new")
    written = sb.emit("index_update", out, new, i, spec=(("d",),), mode="set", name="out")
    (res,) = b.for_loop([out], [d], j, Const(m, I64), sb.body([written]), names=["scattered"])
    return Traced(res)


