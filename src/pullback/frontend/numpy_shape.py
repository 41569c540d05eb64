"""More of NumPy's surface, composed from existing operations (issue 10).

Contract: importing this module registers handlers in `numpy_api.FUNCS` for
reorderings (`flip`, `flipud`, `fliplr`, `roll`, `moveaxis`, `swapaxes`),
triangles and diagonals (`tril`, `triu`, `diagonal`), differences (`diff`),
repetition (`repeat`, `tile`), stacking and splitting (`append`,
`column_stack`, `dstack`, `atleast_1d/2d/3d`, `split`, `array_split`,
`hsplit`, `vsplit`, `dsplit`), `select`, `average(weights=)`, `linspace` with
traced end points, and the elementwise `deg2rad`/`radians`, `rad2deg`/
`degrees`, `exp2`, `reciprocal`, `logaddexp2` and `heaviside`. Every handler
emits primitives that already have derivative rules (slices, `take` with
constant indices, `where`, `concatenate`, arithmetic), so each costs a small
constant times its output and is differentiable in both modes. Shapes,
counts, axes and shifts must be static (Python ints), as in `jax.numpy`.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import ShapeError, StagingError
from ..ir.core import Const
from ..ir.types import TensorType
from . import ops
from .numpy_api import FUNCS, METHODS, _reg
from .values import Traced, leaf_type


def _t(st, x) -> Traced:
    return x if isinstance(x, Traced) else ops.as_traced(st, x)


def _axes(axis, ndim):
    return tuple(range(ndim)) if axis is None else ops.norm_axes(axis, ndim)


# -- reorderings -------------------------------------------------------------------

@_reg(np.flip)
def _flip(st, x, axis=None):
    x = _t(st, x)
    flipped = set(_axes(axis, x.ndim))
    return ops.getitem(st, x, tuple(slice(None, None, -1) if d in flipped else slice(None) for d in range(x.ndim)))


_reg(np.flipud)(lambda st, x: _flip(st, x, 0))
_reg(np.fliplr)(lambda st, x: _flip(st, x, 1))


@_reg(np.roll)
def _roll(st, x, shift, axis=None):
    x = _t(st, x)
    if axis is None:
        return ops.reshape(st, _roll(st, ops.reshape(st, x, (-1,)), shift, 0), x.shape)
    ax = ops.norm_axis(axis, x.ndim)
    n = x.shape[ax]
    s = ops.static_int(shift, "np.roll's shift") % n if n else 0
    if s == 0:
        return x

    def part(a, b):
        return ops.getitem(st, x, tuple(slice(a, b) if d == ax else slice(None) for d in range(x.ndim)))

    return ops.concatenate(st, [part(n - s, n), part(0, n - s)], ax)


@_reg(np.moveaxis)
def _moveaxis(st, x, source, destination):
    x = _t(st, x)
    src = [ops.norm_axis(a, x.ndim) for a in np.atleast_1d(source).tolist()]
    dst = [ops.norm_axis(a, x.ndim) for a in np.atleast_1d(destination).tolist()]
    order = [d for d in range(x.ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return ops.transpose(st, x, tuple(order))


@_reg(np.swapaxes)
def _swapaxes(st, x, axis1, axis2):
    x = _t(st, x)
    perm = list(range(x.ndim))
    a, b = ops.norm_axis(axis1, x.ndim), ops.norm_axis(axis2, x.ndim)
    perm[a], perm[b] = perm[b], perm[a]
    return ops.transpose(st, x, tuple(perm))


# -- triangles, diagonals, differences ---------------------------------------------

def _tri(st, x, k, lower):
    x = _t(st, x)
    if x.ndim < 2:
        raise ShapeError("np.tril/np.triu need an array of at least 2 dimensions")
    n, m = x.shape[-2:]
    k = ops.static_int(k, "the diagonal offset k")
    mask = np.tri(n, m, k - (0 if lower else 1), dtype=bool)
    mask = mask if lower else ~mask
    return ops.where(st, Traced(Const(mask, TensorType("bool", (n, m)))), x, 0)


_reg(np.tril)(lambda st, x, k=0: _tri(st, x, k, True))
_reg(np.triu)(lambda st, x, k=0: _tri(st, x, k, False))


@_reg(np.diagonal)
def _diagonal(st, x, offset=0, axis1=0, axis2=1):
    x = _t(st, x)
    if x.ndim != 2 or ops.norm_axes((axis1, axis2), 2) != (0, 1):
        raise StagingError("np.diagonal is supported for matrices (axis1=0, axis2=1)",
                           hint="transpose or index the array to a matrix first")
    n, m = x.shape
    off = ops.static_int(offset, "the diagonal offset")
    rows = np.arange(max(0, -off), min(n, m - off))
    idx = rows * m + rows + off
    return ops.emit(st, "take", ops.reshape(st, x, (-1,)).atom, Const(idx.astype(np.int64), TensorType("i64", idx.shape)),
                    axis=0)


@_reg(np.diff)
def _diff(st, x, n=1, axis=-1):
    x = _t(st, x)
    ax = ops.norm_axis(axis, x.ndim)
    for _ in range(ops.static_int(n, "np.diff's n")):
        hi = ops.getitem(st, x, tuple(slice(1, None) if d == ax else slice(None) for d in range(x.ndim)))
        lo = ops.getitem(st, x, tuple(slice(None, -1) if d == ax else slice(None) for d in range(x.ndim)))
        x = ops.binary(st, "sub", hi, lo)
    return x


# -- repetition, stacking, splitting -----------------------------------------------

def _take_const(st, x, idx, axis):
    idx = np.asarray(idx, dtype=np.int64)
    return ops.emit(st, "take", x.atom, Const(idx, TensorType("i64", idx.shape)), axis=axis)


@_reg(np.repeat)
def _repeat(st, x, repeats, axis=None):
    x = _t(st, x)
    if axis is None:
        x, axis = ops.reshape(st, x, (-1,)), 0
    ax = ops.norm_axis(axis, x.ndim)
    reps = np.asarray(repeats)
    if reps.dtype.kind not in "iu":
        raise StagingError("np.repeat needs static integer repeats", hint="pass repeats as Python ints")
    return _take_const(st, x, np.repeat(np.arange(x.shape[ax]), reps), ax)


@_reg(np.tile)
def _tile(st, x, reps):
    x = _t(st, x)
    reps = tuple(int(r) for r in np.atleast_1d(reps))
    nd = max(x.ndim, len(reps))
    x = ops.reshape(st, x, (1,) * (nd - x.ndim) + x.shape)
    reps = (1,) * (nd - len(reps)) + reps
    for ax, r in enumerate(reps):
        if r != 1:
            x = _take_const(st, x, np.tile(np.arange(x.shape[ax]), r), ax)
    return x


def _atleast(st, x, nd):
    x = _t(st, x)
    if x.ndim >= nd:
        return x
    if x.ndim == 0:
        shape = (1,) * nd
    elif nd == 2 or x.ndim == 2:          # (n,) -> (1, n); (n, m) -> (n, m, 1)
        shape = (1,) + x.shape if x.ndim == 1 else x.shape + (1,)
    else:                                 # (n,) -> (1, n, 1), as NumPy
        shape = (1,) + x.shape + (1,)
    return ops.reshape(st, x, shape)


for _nd, _f in ((1, np.atleast_1d), (2, np.atleast_2d), (3, np.atleast_3d)):
    _reg(_f)((lambda nd: lambda st, *xs: _atleast(st, xs[0], nd) if len(xs) == 1
              else [_atleast(st, x, nd) for x in xs])(_nd))


@_reg(np.append)
def _append(st, arr, values, axis=None):
    arr, values = _t(st, arr), _t(st, values)
    if axis is None:
        return ops.concatenate(st, [ops.reshape(st, arr, (-1,)), ops.reshape(st, values, (-1,))], 0)
    return ops.concatenate(st, [arr, values], axis)


@_reg(np.column_stack)
def _column_stack(st, tup):
    cols = [_t(st, x) for x in tup]
    return ops.concatenate(st, [ops.reshape(st, c, (-1, 1)) if c.ndim < 2 else c for c in cols], 1)


_reg(np.dstack)(lambda st, tup: ops.concatenate(st, [_atleast(st, x, 3) for x in tup], 2))


def _split(st, x, indices_or_sections, axis, strict):
    x = _t(st, x)
    ax = ops.norm_axis(axis, x.ndim)
    n = x.shape[ax]
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if strict and n % k:
            raise ShapeError(f"np.split: {n} elements do not divide into {k} equal sections",
                             hint="use np.array_split for unequal sections")
        sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
        bounds = np.cumsum([0] + sizes).tolist()
    else:
        bounds = [0] + [min(max(int(i), 0), n) for i in indices_or_sections] + [n]
    return [ops.getitem(st, x, tuple(slice(a, max(a, b)) if d == ax else slice(None) for d in range(x.ndim)))
            for a, b in zip(bounds[:-1], bounds[1:])]


_reg(np.split)(lambda st, x, ios, axis=0: _split(st, x, ios, axis, True))
_reg(np.array_split)(lambda st, x, ios, axis=0: _split(st, x, ios, axis, False))
_reg(np.hsplit)(lambda st, x, ios: _split(st, x, ios, 1 if leaf_type(x).ndim > 1 else 0, True))
_reg(np.vsplit)(lambda st, x, ios: _split(st, x, ios, 0, True))
_reg(np.dsplit)(lambda st, x, ios: _split(st, x, ios, 2, True))


# -- choice, averages, ranges ------------------------------------------------------

@_reg(np.select)
def _select(st, condlist, choicelist, default=0):
    if len(condlist) != len(choicelist):
        raise ShapeError("np.select: condlist and choicelist have different lengths")
    out = default
    for c, v in reversed(list(zip(condlist, choicelist))):
        out = ops.where(st, c, v, out)
    return _t(st, out)


@_reg(np.average)
def _average(st, x, axis=None, weights=None, returned=False, keepdims=False):
    x = _t(st, x)
    if weights is None:
        avg = ops.mean(st, x, axis, keepdims)
        return (avg, ops.full(st, avg.shape, float(np.prod(x.shape) / max(np.prod(avg.shape), 1)))) if returned else avg
    w = _t(st, weights)
    if w.shape != x.shape:
        if axis is None or w.ndim != 1:
            raise ShapeError("np.average: weights must have the array's shape, or be 1-D along `axis`")
        ax = ops.norm_axis(axis, x.ndim)
        w = ops.reshape(st, w, tuple(w.shape[0] if d == ax else 1 for d in range(x.ndim)))
        w = ops.broadcast_to(st, w, x.shape)
    total = ops.reduce(st, "sum", w, axis, keepdims)
    avg = ops.binary(st, "div", ops.reduce(st, "sum", ops.binary(st, "mul", w, x), axis, keepdims), total)
    return (avg, total) if returned else avg


@_reg(np.linspace, always=False)
def _linspace(st, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    num = ops.static_int(num, "np.linspace's num")
    if axis != 0 or (np.ndim(getattr(start, "atom", start)) and leaf_type(start).ndim):
        raise StagingError("np.linspace with traced end points is supported for scalar end points, axis=0")
    div = (num - 1) if endpoint else num
    frac = np.arange(num, dtype=np.float64) / div if div > 0 else np.zeros(num)
    step = ops.binary(st, "div", ops.binary(st, "sub", stop, start), float(div)) if div > 0 else None
    out = ops.binary(st, "add", start, ops.binary(st, "mul", ops.binary(st, "sub", stop, start),
                                                Traced(Const(frac, TensorType("f64", (num,))))))
    if dtype is not None:
        out = ops.cast(st, out, ops.dtype_arg(dtype))
    return (out, step) if retstep else out


# -- elementwise --------------------------------------------------------------------

for _f, _c in ((np.deg2rad, math.pi / 180), (np.radians, math.pi / 180), (np.rad2deg, 180 / math.pi),
               (np.degrees, 180 / math.pi)):
    _reg(_f)((lambda c: lambda st, x: ops.binary(st, "mul", x, c))(_c))
_reg(np.exp2)(lambda st, x: ops.unary(st, "exp", ops.binary(st, "mul", x, math.log(2.0))))
_reg(np.reciprocal)(lambda st, x: ops.binary(st, "div", 1.0, x))


@_reg(np.logaddexp2)
def _logaddexp2(st, a, b):
    ln2 = math.log(2.0)
    r = FUNCS[np.logaddexp](st, ops.binary(st, "mul", a, ln2), ops.binary(st, "mul", b, ln2))
    return ops.binary(st, "div", r, ln2)


@_reg(np.heaviside)
def _heaviside(st, x, h0):
    x = _t(st, x)
    return ops.where(st, ops.binary(st, "gt", x, 0), 1.0, ops.where(st, ops.binary(st, "eq", x, 0), h0, 0.0))


# -- diagonals, traces, norms --------------------------------------------------------

@_reg(np.diag)
def _diag(st, v, k=0):
    v = _t(st, v)
    k = ops.static_int(k, "np.diag's k")
    if v.ndim == 2:
        return _diagonal(st, v, k)
    if v.ndim != 1:
        raise ShapeError("np.diag needs a 1-d or 2-d array")
    n = v.shape[0]
    m = n + abs(k)
    rows = np.arange(n) + max(0, -k)
    cols = np.arange(n) + max(0, k)
    idx = rows * m + cols
    z = ops.full(st, (m * m,), 0.0, v.type.dtype if v.type.is_float else "f64")
    flat = ops.emit(st, "take_add", z.atom, Const(idx.astype(np.int64), TensorType("i64", (n,))),
                    ops.atom(st, v, z.type.dtype), axis=0)
    return ops.reshape(st, flat, (m, m))


@_reg(np.trace)
def _trace(st, a, offset=0, axis1=0, axis2=1):
    return ops.reduce(st, "sum", _diagonal(st, a, offset, axis1, axis2))


METHODS["trace"] = lambda st, x, offset=0: _trace(st, x, offset)
METHODS["diagonal"] = lambda st, x, offset=0, axis1=0, axis2=1: _diagonal(st, x, offset, axis1, axis2)


@_reg(np.linalg.norm)
def _norm(st, x, ord=None, axis=None, keepdims=False):
    """Vector norms (any `ord` number, inf, -inf, 0) along an axis or of a vector;
    matrix norms "fro", 1, -1, inf, -inf of a matrix or along a pair of axes;
    the spectral and nuclear norms (ord 2, -2, "nuc") through the singular values."""
    x = _t(st, x)
    if not x.type.is_float:
        x = ops.cast(st, x, "f64")
    if axis is None and (x.ndim == 1 or ord is None):
        axes = tuple(range(x.ndim))
        vector = x.ndim == 1
    else:
        axes = ops.norm_axes(axis if axis is not None else (0, 1), x.ndim)
        vector = len(axes) == 1
    if vector or (ord in (None, "fro") and len(axes) != 2) or ord is None:
        if ord in (None, 2, "fro") or (not vector and ord in (None, "fro")):
            return ops.unary(st, "sqrt", ops.reduce(st, "sum", ops.binary(st, "mul", x, x), axes, keepdims))
        if not vector:
            raise StagingError(f"np.linalg.norm with ord={ord!r} over axes {axes} is not supported")
        ax = axes
        a = ops.unary(st, "abs", x)
        if ord == np.inf:
            return ops.reduce(st, "max", a, ax, keepdims)
        if ord == -np.inf:
            return ops.reduce(st, "min", a, ax, keepdims)
        if ord == 0:
            return ops.reduce(st, "sum", ops.cast(st, ops.binary(st, "ne", x, 0.0), x.type.dtype), ax, keepdims)
        if ord == 1:
            return ops.reduce(st, "sum", a, ax, keepdims)
        if isinstance(ord, (int, float)) and not isinstance(ord, bool):
            p = float(ord)
            return ops.binary(st, "pow", ops.reduce(st, "sum", ops.binary(st, "pow", a, p), ax, keepdims), 1.0 / p)
        raise StagingError(f"np.linalg.norm: unknown ord={ord!r} for a vector")
    r0, r1 = axes
    a = ops.unary(st, "abs", x)
    if ord == "fro":
        return ops.unary(st, "sqrt", ops.reduce(st, "sum", ops.binary(st, "mul", x, x), axes, keepdims))
    if ord in (1, -1):
        colsum = ops.reduce(st, "sum", a, r0, True)
        r = ops.reduce(st, "max" if ord == 1 else "min", colsum, r1, True)
    elif ord in (np.inf, -np.inf):
        rowsum = ops.reduce(st, "sum", a, r1, True)
        r = ops.reduce(st, "max" if ord == np.inf else "min", rowsum, r0, True)
    elif ord in (2, -2, "nuc"):   # through the singular values (frontend/numpy_linalg.py)
        from .numpy_linalg import matrix_norm_sv

        return matrix_norm_sv(st, x, axes, ord, keepdims)
    else:
        raise StagingError(f"np.linalg.norm: unknown ord={ord!r} for a matrix",
                           hint="use ord='fro', 'nuc', 1, -1, 2, -2, inf or -inf")
    return r if keepdims else ops.reshape(st, r, tuple(d for i, d in enumerate(r.shape) if i not in axes))


# -- scans, gradients, padding, rotations -------------------------------------------

def _scan(st, x, axis, op, dtype=None):
    """cumsum/cumprod: an IR loop over `axis` carrying the running value (a row)
    and the output, written one row per iteration: O(size) work, and the loop's
    reverse mode gives an O(size) derivative."""
    from ..ir.types import I64

    x = _t(st, x)
    if dtype is not None:
        x = ops.cast(st, x, ops.dtype_arg(dtype))
    if axis is None:
        x, axis = ops.reshape(st, x, (-1,)), 0
    xt, back = _front(st, x, axis)
    n = xt.shape[0]
    if n == 0:
        return x
    b = st.b
    first = ops.getitem(st, xt, 0)
    sb = b.child()
    i = sb.fresh("i", I64)
    acc = sb.fresh("acc", first.type)
    out = sb.fresh("out", xt.type)
    k = sb.emit("add", i, Const(1, I64), name="k")
    row = sb.emit("index", xt.atom, k, spec=(("d",),), name="row")
    acc2 = sb.emit(op, acc, row, name="acc")
    out2 = sb.emit("index_update", out, acc2, k, spec=(("d",),), mode="set", name="out")
    init_out = ops.emit(st, "index_update", ops.full(st, xt.shape, 0, xt.type.dtype).atom, first.atom,
                        Const(0, I64), spec=(("d",),), mode="set")
    _, res = b.for_loop([acc, out], [first.atom, init_out.atom], i, Const(n - 1, I64), sb.body([acc2, out2]),
                        names=["acc", "out"])
    r = Traced(res)
    return ops.transpose(st, r, back) if back else r


def _front(st, x, axis):
    ax = ops.norm_axis(axis, x.ndim)
    if ax == 0:
        return x, None
    perm = (ax,) + tuple(d for d in range(x.ndim) if d != ax)
    return ops.transpose(st, x, perm), tuple(int(i) for i in np.argsort(perm))


_reg(np.cumsum)(lambda st, a, axis=None, dtype=None, out=None: _scan(st, a, axis, "add", dtype))
_reg(np.cumprod)(lambda st, a, axis=None, dtype=None, out=None: _scan(st, a, axis, "mul", dtype))
METHODS["cumsum"] = lambda st, x, axis=None, dtype=None: _scan(st, x, axis, "add", dtype)
METHODS["cumprod"] = lambda st, x, axis=None, dtype=None: _scan(st, x, axis, "mul", dtype)


@_reg(np.gradient)
def _gradient(st, f, *varargs, axis=None, edge_order=1):
    """Central differences inside, one-sided at the ends (edge_order=1, unit or
    scalar spacing), as NumPy."""
    f = _t(st, f)
    if edge_order != 1 or len(varargs) > 1 or (varargs and isinstance(varargs[0], (list, tuple, np.ndarray))):
        raise StagingError("np.gradient is supported with edge_order=1 and one scalar spacing")
    h = varargs[0] if varargs else 1.0
    axes = _axes(axis, f.ndim)
    outs = []
    for ax in axes:
        if f.shape[ax] < 2:
            raise StagingError("np.gradient needs at least 2 points along each axis")

        def s(a, b, ax=ax):
            return ops.getitem(st, f, tuple(slice(a, b) if d == ax else slice(None) for d in range(f.ndim)))

        first = ops.binary(st, "sub", s(1, 2), s(0, 1))
        last = ops.binary(st, "sub", s(-1, None), s(-2, -1))
        parts = [first]
        if f.shape[ax] > 2:
            parts.append(ops.binary(st, "mul", ops.binary(st, "sub", s(2, None), s(0, -2)), 0.5))
        parts.append(last)
        outs.append(ops.binary(st, "div", ops.concatenate(st, parts, ax), h))
    return outs[0] if len(outs) == 1 else outs


@_reg(np.pad)
def _pad(st, a, pad_width, mode="constant", constant_values=0):
    x = _t(st, a)
    pw = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (x.ndim, 2))
    if mode not in ("constant", "edge", "reflect"):
        raise StagingError(f"np.pad mode {mode!r} is not supported", hint="use 'constant', 'edge' or 'reflect'")
    for ax in range(x.ndim):
        lo, hi = int(pw[ax, 0]), int(pw[ax, 1])
        n = x.shape[ax]
        if mode == "constant":
            def block(k, ax=ax):
                shape = tuple(k if d == ax else x.shape[d] for d in range(x.ndim))
                return ops.full(st, shape, constant_values, x.type.dtype)
            left, right = (block(lo) if lo else None), (block(hi) if hi else None)
        else:
            if mode == "edge":
                li, ri = np.zeros(lo, np.int64), np.full(hi, n - 1, np.int64)
            else:
                if lo >= n or hi >= n:
                    raise StagingError("np.pad mode='reflect' wider than the array is not supported")
                li, ri = np.arange(lo, 0, -1), np.arange(n - 2, n - 2 - hi, -1)
            left = _take_const(st, x, li, ax) if lo else None
            right = _take_const(st, x, ri, ax) if hi else None
        x = ops.concatenate(st, [p for p in (left, x, right) if p is not None], ax)
    return x


@_reg(np.rot90)
def _rot90(st, m, k=1, axes=(0, 1)):
    x = _t(st, m)
    k = ops.static_int(k, "np.rot90's k") % 4
    a0, a1 = (ops.norm_axis(a, x.ndim) for a in axes)
    for _ in range(k):   # rot90 = flip along axes[1], then swap the two axes
        x = _swapaxes(st, _flip(st, x, a1), a0, a1)
    return x
