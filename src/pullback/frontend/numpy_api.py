"""The NumPy / math / builtins surface: maps Python callables to staging emitters.

Contract: `FUNCS` maps a callable (by identity: `np.sin`, `math.exp`, `max`,
...) to a handler `h(st, *args, **kwargs)` used when a call has traced
arguments; calls without traced arguments run natively (NumPy at staging
time), except for the creation functions in `ALWAYS_STAGED`, which emit `full`
so large constants do not end up in the IR. `METHODS` maps array method names
to handlers `h(st, x, *args, **kwargs)`; `attribute(st, x, name)` implements
`.shape`, `.T`, ... on traced values.
"""
from __future__ import annotations

import builtins
import math
import sys

import numpy as np

from ..errors import ShapeError, StagingError
from . import ops
from .values import Traced, is_weak, leaf_type

FUNCS: dict = {}
METHODS: dict = {}
ALWAYS_STAGED: set = set()


def _reg(*fns, always=False):
    def deco(h):
        for f in fns:
            if f is None:
                continue
            FUNCS[f] = h
            if always:
                ALWAYS_STAGED.add(f)
        return h
    return deco


def _u(op):
    return lambda st, x, *a, **k: _unary_checked(st, op, x, a, k)


def _unary_checked(st, op, x, a, k):
    if a or any(v is not None for kk, v in k.items() if kk not in ("dtype",)):
        raise StagingError(f"np.{op}: extra arguments (out=, where=, ...) are not supported")
    if not isinstance(x, Traced):
        x = ops.as_traced(st, x)
    return ops.unary(st, op, x)


for _name, _op in (("sin", "sin"), ("cos", "cos"), ("tan", "tan"), ("exp", "exp"), ("log", "log"),
                   ("log1p", "log1p"), ("expm1", "expm1"), ("sqrt", "sqrt"), ("tanh", "tanh"),
                   ("abs", "abs"), ("absolute", "abs"), ("sign", "sign"), ("floor", "floor"),
                   ("ceil", "ceil"), ("negative", "neg"), ("isnan", "isnan"), ("rint", "round")):
    _reg(getattr(np, _name))(_u(_op))
for _name, _op in (("sin", "sin"), ("cos", "cos"), ("tan", "tan"), ("exp", "exp"), ("log1p", "log1p"),
                   ("expm1", "expm1"), ("sqrt", "sqrt"), ("tanh", "tanh"), ("fabs", "abs")):
    _reg(getattr(math, _name))(_u(_op))
_reg(builtins.abs)(lambda st, x: ops.unary(st, "abs", x))


@_reg(math.log)
def _math_log(st, x, base=None):
    r = ops.unary(st, "log", x)
    if base is not None:
        r = ops.binary(st, "div", r, ops.unary(st, "log", base) if isinstance(base, Traced) else math.log(base))
    return r


def _logb(base):
    return lambda st, x: ops.binary(st, "div", ops.unary(st, "log", x), math.log(base))


for _f, _b in ((np.log2, 2), (np.log10, 10), (math.log2, 2), (math.log10, 10)):
    FUNCS[_f] = _logb(_b)


FUNCS[math.floor] = lambda st, x: ops.cast(st, ops.unary(st, "floor", x), "i64")
FUNCS[math.ceil] = lambda st, x: ops.cast(st, ops.unary(st, "ceil", x), "i64")


def _b(op):
    def h(st, x, y, *a, **k):
        if a or k:
            raise StagingError(f"np.{op}: extra arguments are not supported")
        return ops.binary(st, op, x, y)
    return h


for _name, _op in (("add", "add"), ("subtract", "sub"), ("multiply", "mul"), ("divide", "div"),
                   ("true_divide", "div"), ("floor_divide", "floordiv"), ("mod", "mod"),
                   ("remainder", "mod"), ("power", "pow"), ("maximum", "maximum"), ("minimum", "minimum"),
                   ("fmax", "maximum"), ("fmin", "minimum"), ("arctan2", "atan2"), ("less", "lt"),
                   ("less_equal", "le"), ("greater", "gt"), ("greater_equal", "ge"), ("equal", "eq"),
                   ("not_equal", "ne"), ("logical_and", "and"), ("logical_or", "or"),
                   ("logical_xor", "xor")):
    _reg(getattr(np, _name))(_b(_op))
_reg(math.pow)(_b("pow"))
_reg(math.atan2)(_b("atan2"))
_reg(np.logical_not)(lambda st, x: ops.logical_not(st, x) if not isinstance(x, Traced) or x.ndim == 0
                     else ops.emit(st, "not", ops.to_bool_array(st, x).atom if x.type.dtype != "bool" else x.atom))
_reg(np.square)(lambda st, x: ops.binary(st, "mul", x, x))


def _nonfinite(st, x):
    """(isnan(x), isnan(x - x)): x - x is NaN exactly where x is infinite or NaN."""
    x = x if isinstance(x, Traced) else ops.as_traced(st, x)
    if not x.type.is_float:
        no = ops.binary(st, "ne", x, x)
        return no, no
    return ops.unary(st, "isnan", x), ops.unary(st, "isnan", ops.binary(st, "sub", x, x))


def _isfinite(st, x):
    return ops.emit(st, "not", _nonfinite(st, x)[1].atom)


def _isinf(st, x):
    nan, bad = _nonfinite(st, x)
    return ops.emit(st, "and", bad.atom, ops.emit(st, "not", nan.atom).atom)


for _f in (np.isfinite, math.isfinite):
    _reg(_f)(_isfinite)
for _f in (np.isinf, math.isinf):
    _reg(_f)(_isinf)
_reg(math.isnan)(_u("isnan"))
_reg(np.matmul)(lambda st, a, b: ops.matmul(st, a, b))
_reg(np.dot)(lambda st, a, b: ops.dot(st, a, b))
_reg(np.where)(lambda st, c, x, y: ops.where(st, c, x, y))


@_reg(np.outer)
def _outer(st, a, b):
    a = ops.reshape(st, a, (-1, 1))
    b = ops.reshape(st, b, (1, -1))
    return ops.binary(st, "mul", a, b)


@_reg(np.vdot)
def _vdot(st, a, b):
    return ops.matmul(st, ops.reshape(st, a, (-1,)), ops.reshape(st, b, (-1,)))


@_reg(np.logaddexp)
def _logaddexp(st, a, b):
    m = ops.binary(st, "maximum", a, b)
    d = ops.unary(st, "abs", ops.binary(st, "sub", a, b))
    return ops.binary(st, "add", m, ops.unary(st, "log1p", ops.unary(st, "exp", ops.emit(st, "neg", d.atom))))


@_reg(np.sinh)
def _sinh(st, x):
    e, f = ops.unary(st, "exp", x), ops.unary(st, "exp", ops.emit(st, "neg", ops.atom(st, x)))
    return ops.binary(st, "mul", ops.binary(st, "sub", e, f), 0.5)


@_reg(np.cosh)
def _cosh(st, x):
    e, f = ops.unary(st, "exp", x), ops.unary(st, "exp", ops.emit(st, "neg", ops.atom(st, x)))
    return ops.binary(st, "mul", ops.binary(st, "add", e, f), 0.5)


@_reg(np.hypot)
def _hypot(st, a, b):
    return ops.unary(st, "sqrt", ops.binary(st, "add", ops.binary(st, "mul", a, a), ops.binary(st, "mul", b, b)))


@_reg(np.clip)
def _clip(st, x, a_min=None, a_max=None, **kw):
    a_min = kw.pop("min", a_min)
    a_max = kw.pop("max", a_max)
    r = x
    if a_min is not None:
        r = ops.binary(st, "maximum", r, a_min)
    if a_max is not None:
        r = ops.binary(st, "minimum", r, a_max)
    return r


# -- reductions --------------------------------------------------------------------

def _red(op):
    def h(st, a, axis=None, dtype=None, out=None, keepdims=False, **kw):
        if out is not None or kw:
            raise StagingError(f"np.{op}: arguments {sorted(kw) or ['out']} are not supported")
        return ops.reduce(st, op, a, axis=axis, keepdims=keepdims, dtype=dtype)
    return h


_reg(np.sum)(_red("sum"))
_reg(np.prod)(_red("prod"))
_reg(np.max, np.amax)(_red("max"))
_reg(np.min, np.amin)(_red("min"))
_reg(np.mean)(lambda st, a, axis=None, keepdims=False: ops.mean(st, a, axis, keepdims))
_reg(np.argmax)(lambda st, a, axis=None: ops.argext(st, "argmax", a, axis))
_reg(np.argmin)(lambda st, a, axis=None: ops.argext(st, "argmin", a, axis))


def _bool_reduction(is_any):
    """np.any / np.all: count the true (any) or false (all) elements, so empty arrays
    give False / True as in NumPy (max/min of an empty axis have no identity)."""
    def fn(st, a, axis=None, keepdims=False):
        a = a if isinstance(a, Traced) else ops.as_traced(st, a)
        if a.type.dtype != "bool":
            a = ops.to_bool_array(st, a)
        if not is_any:
            a = ops.emit(st, "not", a.atom)
        n = ops.reduce(st, "sum", ops.cast(st, a, "i64"), axis=axis, keepdims=keepdims)
        return ops.binary(st, "gt" if is_any else "eq", n, 0)
    return fn


_any = _reg(np.any)(_bool_reduction(True))
_all = _reg(np.all)(_bool_reduction(False))


@_reg(np.var)
def _var(st, a, axis=None, keepdims=False, ddof=0, dtype=None, out=None):
    if out is not None:
        raise StagingError("np.var/np.std: out= is not supported", hint="use the returned value")
    m = ops.mean(st, a, axis, keepdims=True)
    d = ops.binary(st, "sub", a, m)
    ddof = ops.static_int(ddof, "ddof")
    if ddof == 0:
        return ops.mean(st, ops.binary(st, "mul", d, d), axis, keepdims)
    shape = leaf_type(a).shape
    n = int(np.prod([shape[i] for i in ops.norm_axes(axis, len(shape))], dtype=np.int64))
    ss = ops.reduce(st, "sum", ops.binary(st, "mul", d, d), axis, keepdims)
    return ops.binary(st, "div", ss, float(n - ddof))


@_reg(np.std)
def _std(st, a, axis=None, keepdims=False, ddof=0, dtype=None, out=None):
    return ops.unary(st, "sqrt", _var(st, a, axis, keepdims, ddof, dtype, out))


# -- linear algebra ------------------------------------------------------------------

# -- shapes ----------------------------------------------------------------------------

_reg(np.transpose)(lambda st, a, axes=None: ops.transpose(st, a, axes))


@_reg(np.reshape)
def _np_reshape(st, a, *shape, **kw):
    shape = kw.pop("newshape", kw.pop("shape", None)) if not shape else (shape[0] if len(shape) == 1 else shape)
    return ops.reshape(st, a, shape)


_reg(np.ravel)(lambda st, a: ops.reshape(st, a, (-1,)))
_reg(np.concatenate)(lambda st, arrays, axis=0: ops.concatenate(st, arrays, axis))
_reg(np.stack)(lambda st, arrays, axis=0: ops.stack(st, arrays, axis))
_reg(np.broadcast_to)(lambda st, a, shape: ops.broadcast_to(st, a, shape))


@_reg(np.hstack)
def _hstack(st, arrays):
    arrays = list(arrays)
    return ops.concatenate(st, arrays, 0 if leaf_type(arrays[0]).ndim == 1 else 1)


@_reg(np.vstack)
def _vstack(st, arrays):
    arrays = [a if leaf_type(a).ndim >= 2 else ops.reshape(st, a, (1, -1)) for a in arrays]
    return ops.concatenate(st, arrays, 0)


@_reg(np.expand_dims)
def _expand_dims(st, a, axis):
    t = leaf_type(a)
    ax = ops.norm_axis(axis, t.ndim + 1)
    return ops.reshape(st, a, t.shape[:ax] + (1,) + t.shape[ax:])


@_reg(np.squeeze)
def _squeeze(st, a, axis=None):
    t = leaf_type(a)
    axes = [i for i, d in enumerate(t.shape) if d == 1] if axis is None else list(ops.norm_axes(axis, t.ndim))
    return ops.reshape(st, a, tuple(d for i, d in enumerate(t.shape) if i not in axes))


@_reg(np.array, np.asarray, np.asanyarray)
def _array(st, obj, dtype=None, **kw):
    return ops.array(st, obj, dtype)


@_reg(np.copy)
def _copy(st, a):
    return a


# -- creation (always staged) ------------------------------------------------------------

def _dt_or(dtype, default):
    return ops.dtype_arg(dtype) if dtype is not None else default


@_reg(np.zeros, always=True)
def _zeros(st, shape, dtype=None):
    return ops.full(st, shape, 0, _dt_or(dtype, "f64"))


@_reg(np.ones, always=True)
def _ones(st, shape, dtype=None):
    return ops.full(st, shape, 1, _dt_or(dtype, "f64"))


@_reg(np.empty, always=True)
def _empty(st, shape, dtype=None):
    return ops.full(st, shape, 0, _dt_or(dtype, "f64"))


@_reg(np.full, always=True)
def _full(st, shape, fill_value, dtype=None):
    dt = ops.dtype_arg(dtype) if dtype is not None else (
        leaf_type(fill_value).dtype if not is_weak(fill_value) or not isinstance(fill_value, bool) else "bool")
    return ops.full(st, shape, fill_value, dt)


def _like(fill):
    def h(st, a, dtype=None, shape=None):
        t = leaf_type(a)
        return ops.full(st, shape if shape is not None else t.shape, fill, _dt_or(dtype, t.dtype))
    return h


_reg(np.zeros_like, always=True)(_like(0))
_reg(np.ones_like, always=True)(_like(1))
_reg(np.empty_like, always=True)(_like(0))


@_reg(np.full_like, always=True)
def _full_like(st, a, fill_value, dtype=None):
    t = leaf_type(a)
    return ops.full(st, t.shape, fill_value, _dt_or(dtype, t.dtype))


# -- scalar conversions --------------------------------------------------------------

def _conv(dt):
    def h(st, x=0):
        t = leaf_type(x)
        if isinstance(x, Traced) and dt in ("f64", "i64") and t.ndim:
            # float(array) works in NumPy only for size-1 arrays
            if t.size != 1:
                raise ShapeError(f"only size-1 arrays can be converted to Python scalars, got {t}")
            x = ops.reshape(st, x, ())
        return ops.cast(st, x, dt)
    return h


FUNCS[builtins.float] = _conv("f64")
FUNCS[builtins.int] = _conv("i64")
FUNCS[np.float64] = _conv("f64")
FUNCS[np.float32] = _conv("f32")
FUNCS[np.int64] = _conv("i64")
FUNCS[np.int32] = _conv("i64")
FUNCS[np.bool_] = _conv("bool")


@_reg(builtins.bool)
def _bool(st, x):
    return ops.to_bool(st, x).__bool__()  # raises ConcreteNeeded for traced


@_reg(builtins.round)
def _round(st, x, ndigits=None):
    if ndigits is not None:
        raise StagingError("round(x, ndigits) on traced values is not supported")
    return ops.cast(st, ops.unary(st, "round", x), "i64")


@_reg(builtins.max)
def _max(st, *args, **kw):
    return _minmax(st, "maximum", args, kw)


@_reg(builtins.min)
def _min(st, *args, **kw):
    return _minmax(st, "minimum", args, kw)


def _minmax(st, op, args, kw):
    if kw:
        raise StagingError(f"{'max' if op == 'maximum' else 'min'}(): keyword arguments are not supported with traced values")
    if len(args) == 1:
        (seq,) = args
        if isinstance(seq, Traced):
            return ops.reduce(st, "max" if op == "maximum" else "min", seq, axis=0)
        args = tuple(seq)
    r = args[0]
    for a in args[1:]:
        r = ops.binary(st, op, r, a)
    return r


@_reg(builtins.sum)
def _sum_builtin(st, seq, start=0):
    if isinstance(seq, Traced):
        r = ops.reduce(st, "sum", seq, axis=0)
        return r if (is_weak(start) and start == 0) else ops.binary(st, "add", r, start)
    r = start
    for x in seq:
        r = x if (is_weak(r) and r == 0 and r is start) else ops.binary(st, "add", r, x) if (
            isinstance(r, Traced) or isinstance(x, Traced)) else r + x
    return r


@_reg(builtins.pow)
def _pow(st, x, y):
    return ops.binary(st, "pow", x, y)


@_reg(builtins.len)
def _len(st, x):
    if isinstance(x, Traced):
        if x.ndim == 0:
            raise ShapeError("len() of a scalar")
        return x.shape[0]
    return len(x)


@_reg(builtins.print)
def _print(st, *args, **kw):
    from .values import ConcreteNeeded
    raise ConcreteNeeded("print() of a traced value: its value is only known when the compiled code runs",
                         hint="remove the print, or print x.shape / x.dtype (known at staging time)")


# -- methods and attributes --------------------------------------------------------------

def _m(name, fn):
    METHODS[name] = fn


_m("sum", lambda st, x, axis=None, dtype=None, keepdims=False: ops.reduce(st, "sum", x, axis, keepdims, dtype))
_m("prod", lambda st, x, axis=None, dtype=None, keepdims=False: ops.reduce(st, "prod", x, axis, keepdims, dtype))
_m("max", lambda st, x, axis=None, keepdims=False: ops.reduce(st, "max", x, axis, keepdims))
_m("min", lambda st, x, axis=None, keepdims=False: ops.reduce(st, "min", x, axis, keepdims))
_m("mean", lambda st, x, axis=None, keepdims=False: ops.mean(st, x, axis, keepdims))
_m("argmax", lambda st, x, axis=None: ops.argext(st, "argmax", x, axis))
_m("argmin", lambda st, x, axis=None: ops.argext(st, "argmin", x, axis))
_m("any", lambda st, x, axis=None, keepdims=False: _any(st, x, axis, keepdims))
_m("all", lambda st, x, axis=None, keepdims=False: _all(st, x, axis, keepdims))
_m("var", lambda st, x, axis=None, keepdims=False, ddof=0: _var(st, x, axis, keepdims, ddof))
_m("std", lambda st, x, axis=None, keepdims=False, ddof=0: _std(st, x, axis, keepdims, ddof))
_m("dot", lambda st, x, y: ops.dot(st, x, y))
_m("copy", lambda st, x: x)
_m("item", lambda st, x: ops.reshape(st, x, ()))
_m("flatten", lambda st, x: ops.reshape(st, x, (-1,)))
_m("ravel", lambda st, x: ops.reshape(st, x, (-1,)))
_m("squeeze", lambda st, x, axis=None: _squeeze(st, x, axis))
_m("clip", lambda st, x, a_min=None, a_max=None: _clip(st, x, a_min, a_max))
_m("astype", lambda st, x, dtype: ops.cast(st, x, ops.dtype_arg(dtype)))


def _method_reshape(st, x, *shape, **kw):
    if kw:
        shape = (kw.pop("shape"),)
    shape = shape[0] if len(shape) == 1 else shape
    return ops.reshape(st, x, shape)


def _method_transpose(st, x, *axes):
    axes = axes[0] if len(axes) == 1 and isinstance(axes[0], (tuple, list)) else (axes or None)
    return ops.transpose(st, x, axes)


_m("reshape", _method_reshape)
_m("transpose", _method_transpose)


def attribute(st, x: Traced, name: str):
    if name == "shape":
        return x.shape
    if name == "ndim":
        return x.ndim
    if name == "size":
        return x.size
    if name == "dtype":
        return x.dtype
    if name == "T":
        from .views import note_call
        return note_call(st, "T", x, ops.transpose(st, x))
    if name in METHODS:
        return BoundMethod(name, x)
    raise StagingError(f"traced arrays have no supported attribute '{name}'",
                       hint="supported: shape, ndim, size, dtype, T and the methods " + ", ".join(sorted(METHODS)))


class BoundMethod:
    """`x.sum` for a traced `x`: calling it dispatches to `METHODS[name]`."""

    __slots__ = ("name", "obj")

    def __init__(self, name, obj):
        self.name, self.obj = name, obj

    def __repr__(self):
        return f"<traced method .{self.name}>"


def lookup(fn):
    """The handler for `fn`. For NumPy functions that take arrays, a positional
    list or tuple holding traced numbers becomes an array first, as NumPy does
    (`np.sum([x, x + 1])`, `np.linalg.norm([x, y])`)."""
    try:
        h = FUNCS.get(fn)
    except TypeError:
        return None
    if h is None and "scipy.special" in sys.modules:
        # SciPy's functions are registered once the user has imported scipy.special
        # (scipy.special's ufuncs have no __module__), not when pullback is imported
        from . import scipy_special  # noqa: F401

        h = FUNCS.get(fn)
    from .masks import (
        lookup_masked,  # len/count_nonzero/any/all of a boolean-mask selection x[m]
    )

    h = lookup_masked(fn, h)
    if h is None or fn in _TAKE_SEQUENCES or getattr(fn, "__module__", None) in ("builtins", "math"):
        return h
    return lambda st, *a, **k: h(st, *[_as_array(st, x) for x in a], **k)


def _as_array(st, x):
    if isinstance(x, (list, tuple)) and _holds_traced(x):
        return ops.array(st, x)
    return x


def _holds_traced(x) -> bool:
    return any(_holds_traced(v) if isinstance(v, (list, tuple)) else isinstance(v, Traced) for v in x)


# functions whose positional sequences are sequences of arrays, not arrays
_TAKE_SEQUENCES = {f for f in (np.concatenate, np.stack, np.hstack, np.vstack, np.dstack, np.column_stack,
                               np.select, np.einsum, np.array, np.asarray, np.block, np.broadcast_arrays,
                               np.meshgrid, np.atleast_1d, np.atleast_2d, np.atleast_3d)}


def describe(fn) -> str:
    mod = getattr(fn, "__module__", None) or ""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    if isinstance(fn, np.ufunc):
        return f"numpy.{fn.__name__}"
    return f"{mod}.{name}" if mod and mod != "builtins" else name


_reg(np.ndim)(lambda st, a: leaf_type(a).ndim)
_reg(np.shape)(lambda st, a: leaf_type(a).shape)
_reg(np.size)(lambda st, a, axis=None: leaf_type(a).size if axis is None else leaf_type(a).shape[axis])


from . import numpy_contract, numpy_linalg, numpy_math, numpy_shape, numpy_sort  # noqa: F401  (register more of NumPy in FUNCS)
