"""Traced operations: arithmetic with NumPy dtype rules, indexing, updates, reductions.

Contract: each function takes the staging interpreter `st` (whose `st.b` is the
current `Builder`) and staging-time values, at least one of them `Traced`, and
returns a `Traced` (or a pytree of them). Python scalars are weak (see
`values`). Shape errors come from the primitive type rules (`ShapeError`).
"""
from __future__ import annotations

import operator

import numpy as np

from ..errors import ShapeError, StagingError, UnsupportedSyntaxError
from ..ir.core import Const
from ..ir.types import TensorType, dtype_of_np
from .values import ConcreteNeeded, Traced, is_weak, join_dtype, leaf_type, to_atom

ARITH = {"add", "sub", "mul", "div", "floordiv", "mod", "pow", "maximum", "minimum", "atan2"}
COMPARE = {"lt", "le", "gt", "ge", "eq", "ne"}
LOGIC = {"and", "or", "xor"}


def T(v) -> Traced:
    return v


def emit(st, op, *args, **params) -> Traced:
    return Traced(st.b.emit(op, *args, **params))


def atom(st, v, dtype=None):
    return to_atom(st.b, v, dtype)


def as_traced(st, v, dtype=None) -> Traced:
    return Traced(atom(st, v, dtype))


def check_numeric(v, what="operand"):
    if isinstance(v, Traced) or is_weak(v) or isinstance(v, (np.ndarray, np.generic)):
        return
    raise StagingError(f"unsupported {what} of type {type(v).__name__} in an operation with traced values",
                       hint="only numbers, booleans and arrays can be combined with traced values")


def binary(st, op, a, b) -> Traced:
    check_numeric(a)
    check_numeric(b)
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        raise StagingError("cannot combine a Python list/tuple with a traced array",
                           hint="convert it with np.array(...) first")
    dt = join_dtype(a, b)
    if op in LOGIC:
        if leaf_type(a).dtype != "bool" or leaf_type(b).dtype != "bool":
            raise UnsupportedSyntaxError(f"bitwise operation '{op}' on non-boolean traced values",
                                         hint="&, | and ^ are supported on booleans only")
    if op == "pow" and not isinstance(b, Traced) and isinstance(a, Traced):
        if is_weak(b) and b == 2:
            return emit(st, "mul", a.atom, a.atom)
        if is_weak(b) and b == 1:
            return a
    if op == "matmul":
        return matmul(st, a, b)
    aa = atom(st, a, dt if is_weak(a) else None)
    bb = atom(st, b, dt if is_weak(b) else None)
    r = emit(st, op, aa, bb)
    if op in ("add", "sub") and r.type.dtype == "i64" and r.ndim == 0:
        _note_offset(st, r.atom, op, aa, bb)
    return r


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
    if fh is None or fl is None or not (fh[0] is None and fl[0] is None or fh[0] is not None and fh[0] == fl[0]):
        return None
    return fh[1] - fl[1]


def matmul(st, a, b) -> Traced:
    ta, tb = leaf_type(a), leaf_type(b)
    if ta.ndim == 0 or tb.ndim == 0:
        raise ShapeError("matmul: operands must not be scalars, got {} and {}".format(ta, tb),
                         hint="use * for scalar multiplication")
    return emit(st, "matmul", atom(st, a), atom(st, b))


def dot(st, a, b) -> Traced:
    ta, tb = leaf_type(a), leaf_type(b)
    if ta.ndim == 0 or tb.ndim == 0:
        return binary(st, "mul", a, b)
    return matmul(st, a, b)


def unary(st, op, x) -> Traced:
    check_numeric(x)
    t = leaf_type(x)
    if op in ("sin", "cos", "tan", "exp", "log", "log1p", "expm1", "sqrt", "tanh", "logistic", "floor",
              "ceil", "round") and not t.is_float:
        x = as_traced(st, x, "f64")
    return emit(st, op, atom(st, x))


def to_bool(st, v):
    """A scalar truth value: concrete -> Python bool, traced -> Traced bool scalar."""
    if not isinstance(v, Traced):
        try:
            return bool(v)
        except ValueError as e:
            raise StagingError(str(e), hint="use np.all(...) or np.any(...)") from None
    if v.shape != ():
        raise StagingError(f"the truth value of a traced array of shape {v.shape} is ambiguous",
                           hint="use np.all(...) or np.any(...) to get a scalar condition, or np.where for elementwise choice")
    if v.type.dtype == "bool":
        return v
    return emit(st, "ne", v.atom, Const(0, TensorType(v.type.dtype)))


def logical_not(st, v):
    v = to_bool(st, v)
    if isinstance(v, Traced):
        return emit(st, "not", v.atom)
    return not v


def cast(st, x, dtype: str) -> Traced:
    x = x if isinstance(x, Traced) else as_traced(st, x)
    if x.type.dtype == dtype:
        return x
    return emit(st, "cast", x.atom, dtype=dtype)


def dtype_arg(d) -> str:
    """Map a user dtype (float, int, bool, np.float32, 'float32', np.dtype) to an IR dtype."""
    if d is float:
        return "f64"
    if d is int:
        return "i64"
    if d is bool:
        return "bool"
    if isinstance(d, str) and d in ("f64", "f32", "i64", "bool"):
        return d
    try:
        return dtype_of_np(np.dtype(d))
    except TypeError:
        raise StagingError(f"unsupported dtype {d!r}", hint="use float64, float32, int64 or bool") from None


# -- shapes ---------------------------------------------------------------------

def static_int(v, what="value") -> int:
    if isinstance(v, Traced):
        raise ConcreteNeeded(f"{what} must be known at staging time, but it depends on traced data",
                             hint="pass it as a static argument (static_argnums) or derive it from array shapes")
    try:
        return int(v.__index__())
    except Exception:
        raise StagingError(f"{what} must be an integer, got {v!r}") from None


def static_shape(shape) -> tuple:
    if isinstance(shape, (list, tuple)):
        return tuple(static_int(d, "a shape") for d in shape)
    return (static_int(shape, "a shape"),)


def norm_axis(a, ndim) -> int:
    a = static_int(a, "an axis")
    if not -ndim <= a < max(ndim, 1):
        raise ShapeError(f"axis {a} is out of range for an array of rank {ndim}")
    return a % ndim if ndim else 0


def norm_axes(axis, ndim) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        return tuple(sorted(norm_axis(a, ndim) for a in axis))
    return (norm_axis(axis, ndim),)


def reshape(st, x, shape) -> Traced:
    x = x if isinstance(x, Traced) else as_traced(st, x)
    shape = list(static_shape(shape))
    if shape.count(-1) > 1:
        raise ShapeError("can only specify one unknown dimension (-1) in reshape")
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
        if known == 0 or x.size % known:
            raise ShapeError(f"cannot reshape array of shape {x.shape} into shape {tuple(shape)}")
        shape[shape.index(-1)] = x.size // known
    shape = tuple(shape)
    if shape == x.shape:
        return x
    return emit(st, "reshape", x.atom, shape=shape)


def transpose(st, x, axes=None) -> Traced:
    x = x if isinstance(x, Traced) else as_traced(st, x)
    if x.ndim < 2 and axes is None:
        return x
    perm = tuple(reversed(range(x.ndim))) if axes is None else tuple(norm_axis(a, x.ndim) for a in axes)
    if perm == tuple(range(x.ndim)):
        return x
    return emit(st, "transpose", x.atom, perm=perm)


def broadcast_to(st, x, shape) -> Traced:
    x = x if isinstance(x, Traced) else as_traced(st, x)
    shape = static_shape(shape)
    if x.shape == shape:
        return x
    return emit(st, "broadcast_to", x.atom, shape=shape)


def full(st, shape, fill, dtype=None) -> Traced:
    shape = static_shape(shape)
    dt = dtype_arg(dtype) if dtype is not None else leaf_type(fill).dtype
    f = atom(st, fill, dt)
    if f.type.ndim:
        raise ShapeError("the fill value of np.full must be a scalar")
    return emit(st, "full", f, shape=shape)


def concatenate(st, xs, axis=0) -> Traced:
    xs = list(xs)
    if not xs:
        raise ShapeError("need at least one array to concatenate")
    ts = [leaf_type(x) for x in xs]
    nd = ts[0].ndim
    if nd == 0:
        raise ShapeError("zero-dimensional arrays cannot be concatenated", hint="use np.stack or np.array([...])")
    ax = norm_axis(axis, nd)
    dt = ts[0].dtype
    for x in xs[1:]:
        from ..ir.types import promote
        dt = promote(dt, leaf_type(x).dtype)
    atoms = [atom(st, x, dt) for x in xs]
    if len(atoms) == 1:
        return Traced(atoms[0])
    return emit(st, "concatenate", *atoms, axis=ax)


def stack(st, xs, axis=0) -> Traced:
    xs = list(xs)
    if not xs:
        raise ShapeError("need at least one array to stack")
    shapes = {leaf_type(x).shape for x in xs}
    if len(shapes) != 1:
        raise ShapeError(f"all input arrays must have the same shape to stack, got {sorted(shapes)}")
    (shape,) = shapes
    ax = norm_axis(axis, len(shape) + 1)
    dt = _common_dtype(xs)
    parts = []
    for x in xs:
        x = as_traced(st, x, dt)
        parts.append(reshape(st, x, shape[:ax] + (1,) + shape[ax:]))
    if len(parts) == 1:
        return parts[0]
    return emit(st, "concatenate", *[p.atom for p in parts], axis=ax)


def _common_dtype(xs) -> str:
    from ..ir.types import promote
    strong = [leaf_type(x).dtype for x in xs if not is_weak(x)]
    weak = [leaf_type(x).dtype for x in xs if is_weak(x)]
    dt = None
    for d in strong:
        dt = d if dt is None else promote(dt, d)
    for d in weak:
        dt = d if dt is None else join_dtype(_dummy(d, True), _dummy(dt, False))
    return dt


def _dummy(dtype, weak):
    if weak:
        return {"f64": 0.0, "i64": 0, "bool": False, "f32": 0.0}[dtype]
    return np.zeros((), dtype={"f64": np.float64, "f32": np.float32, "i64": np.int64, "bool": np.bool_}[dtype])[()]


def array(st, obj, dtype=None) -> Traced:
    """np.array of a (nested) list/tuple of traced scalars/arrays."""
    if isinstance(obj, (list, tuple)):
        items = [array(st, o) if isinstance(o, (list, tuple)) else o for o in obj]
        dt = _common_dtype(items)
        out = stack(st, [as_traced(st, i, dt) for i in items], 0)
    else:
        out = obj if isinstance(obj, Traced) else as_traced(st, obj)
    if dtype is not None:
        out = cast(st, out, dtype_arg(dtype))
    return out


def where(st, c, x, y) -> Traced:
    c = c if isinstance(c, Traced) else as_traced(st, c)
    if c.type.dtype != "bool":
        c = to_bool_array(st, c)
    dt = join_dtype(x, y)
    return emit(st, "where", c.atom, atom(st, x, dt if is_weak(x) else None), atom(st, y, dt if is_weak(y) else None))


def to_bool_array(st, x):
    return emit(st, "ne", x.atom, Const(0, TensorType(x.type.dtype)))


# -- reductions -----------------------------------------------------------------

def reduce(st, op, x, axis=None, keepdims=False, dtype=None) -> Traced:
    x = x if isinstance(x, Traced) else as_traced(st, x)
    axes = norm_axes(axis, x.ndim)
    if op in ("max", "min") and x.type.dtype == "bool":
        r = emit(st, op, cast(st, x, "i64").atom, axes=axes)
        r = cast(st, r, "bool")
    else:
        r = emit(st, op, x.atom, axes=axes) if axes else x
    if dtype is not None:
        r = cast(st, r, dtype_arg(dtype))
    if keepdims:
        r = reshape(st, r, tuple(1 if i in axes else d for i, d in enumerate(x.shape)))
    return r


def mean(st, x, axis=None, keepdims=False) -> Traced:
    x = x if isinstance(x, Traced) else as_traced(st, x)
    if not x.type.is_float:
        x = cast(st, x, "f64")
    axes = norm_axes(axis, x.ndim)
    n = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    s = reduce(st, "sum", x, axis=axes, keepdims=keepdims)
    return emit(st, "div", s.atom, Const(float(n), TensorType(x.type.dtype)))


def argext(st, op, x, axis=None) -> Traced:
    x = x if isinstance(x, Traced) else as_traced(st, x)
    if axis is None:
        x = reshape(st, x, (-1,))
        ax = 0
    else:
        ax = norm_axis(axis, x.ndim)
    return emit(st, op, x.atom, axis=ax)


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


def _mask_assign(st, x: Traced, key, value, mode):
    """`x[mask] = v` / `x[mask] += v` with a boolean mask of x's shape and a scalar
    `v`: `where(mask, v, x)` (static shapes). None if `key` is not such a mask."""
    m = key
    if isinstance(m, np.ndarray) and m.dtype == np.bool_:
        m = as_traced(st, m)
    if not (isinstance(m, Traced) and m.type.dtype == "bool" and m.ndim > 0):
        return None
    if m.shape != x.shape:
        raise UnsupportedSyntaxError(f"a boolean mask of shape {m.shape} in an assignment to an array of shape "
                                     f"{x.shape}", hint="use a mask of the array's own shape, or np.where")
    vshape = value.shape if isinstance(value, Traced) else np.shape(value)
    if int(np.prod(vshape, dtype=np.int64)) != 1:
        raise UnsupportedSyntaxError("x[mask] = values with an array of values has a data-dependent shape",
                                     hint="write x = np.where(mask, values_of_x_shape, x)")
    new = value if mode == "set" else binary(st, "add", x, value)
    out = where(st, m, new, x)
    return out if out.type.dtype == x.type.dtype else cast(st, out, x.type.dtype)


def setitem(st, x, key, value, mode="set"):
    """The array `x` with `x[key]` set to (mode 'set') or incremented by (mode 'add') `value`."""
    x = x if isinstance(x, Traced) else as_traced(st, x)
    check_numeric(value, "assigned value")
    if isinstance(value, (list, tuple)):
        value = np.asarray(value)
    masked = _mask_assign(st, x, key, value, mode)
    if masked is not None:
        return masked
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
