"""Traced operations: arithmetic with NumPy dtype rules, shapes, reductions; indexing and
updates live in `indexing` (re-exported here: `getitem`, `setitem`).

Contract: each function takes the staging interpreter `st` (whose `st.b` is the
current `Builder`) and staging-time values, at least one of them `Traced`, and
returns a `Traced` (or a pytree of them). Python scalars are weak (see
`values`). Shape errors come from the primitive type rules (`ShapeError`).
"""
from __future__ import annotations

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
    if isinstance(a, Masked) or isinstance(b, Masked):
        return masks.elementwise(st, lambda st, x, y: binary(st, op, x, y), a, b, what=f"'{op}'")
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
    if isinstance(x, Masked):
        return masks.elementwise(st, lambda st, b: unary(st, op, b), x, what=f"'{op}'")
    t = leaf_type(x)
    if op in ("sin", "cos", "tan", "exp", "log", "log1p", "expm1", "sqrt", "tanh", "logistic", "floor",
              "ceil", "round") and not t.is_float:
        x = as_traced(st, x, "f64")
    return emit(st, op, atom(st, x))


_TRUTH_HINT = ("write `if np.any(c):` (some element) or `if np.all(c):` (every element); for a choice per "
               "element, np.where(c, a, b) instead of an `if`; `&`, `|`, `~` instead of `and`, `or`, `not`")


def to_bool(st, v):
    """A scalar truth value: concrete -> Python bool, traced -> Traced bool scalar."""
    if not isinstance(v, Traced):
        try:
            return bool(v)
        except ValueError as e:
            raise StagingError(f"{e} (an `if`, `while`, `and`/`or`, `not` or bool() needs one truth value)",
                               hint=_TRUTH_HINT) from None
    if v.shape != () and v.size == 1:  # NumPy: the truth value of a one-element array is its element's
        v = reshape(st, v, ())
    if v.shape != ():
        raise StagingError(f"the truth value of a traced array of shape {v.shape} is ambiguous (an `if`, `while`, "
                           "`and`/`or`, `not` or bool() needs one truth value)", hint=_TRUTH_HINT)
    if v.type.dtype == "bool":
        return v
    return emit(st, "ne", v.atom, Const(0, TensorType(v.type.dtype)))


def logical_not(st, v):
    v = to_bool(st, v)
    if isinstance(v, Traced):
        return emit(st, "not", v.atom)
    return not v


def cast(st, x, dtype: str) -> Traced:
    if isinstance(x, Masked):
        return masks.elementwise(st, lambda st, b: cast(st, b, dtype), x, what="a cast")
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
    if isinstance(x, Masked):
        return masks.reduce(st, op, x, axis, keepdims, dtype)
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
    if isinstance(x, Masked):
        return masks.mean(st, x, axis, keepdims)
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


from . import masks  # noqa: E402
from .masks import Masked  # noqa: E402
from .indexing import (_expand_key, _note_offset, copy_offset, getitem, setitem,  # noqa: E402,F401  (re-exported)
                       static_difference)
