"""Elementwise primitives: unary math, binary ops with NumPy broadcasting,
comparisons, logical ops, `where` and `cast`."""
from __future__ import annotations

import numpy as np

from ...errors import ShapeError
from ..types import TensorType, np_dtype, promote
from . import TABLE, Row, check
from ._util import addz, bcast, c, smul, unbroadcast


def _float_only(name, t):
    check(t.dtype in ("f64", "f32"), f"'{name}' needs a float operand, got {t}",
          hint="convert with x.astype(float) or float(x) first")


def _cost_out(arg_types, out_types, **p):
    return out_types[0].size


# -- unary --------------------------------------------------------------------

def unary(name, fn, deriv=None, *, zero_deriv=False, floats_only=True, keep_dtype=True, doc=""):
    """`deriv(b, x, y)` returns the elementwise derivative dy/dx as an atom."""

    def type_(ts, **p):
        (t,) = ts
        check(isinstance(t, TensorType), f"'{name}' expects a tensor, got {t}")
        if floats_only:
            _float_only(name, t)
        return (t if keep_dtype else t.with_dtype("bool"),)

    def impl(x):
        with np.errstate(all="ignore"):
            return fn(x)

    jvp = vjp = None
    if deriv is not None:
        def jvp(b, args, tans, outs):
            return [smul(b, tans[0], deriv(b, args[0], outs[0]))]

        def vjp(b, args, outs, cts, need):
            return [smul(b, cts[0], deriv(b, args[0], outs[0]))]

    return TABLE.add(Row(name, type_, impl, jvp, vjp, _cost_out, zero_deriv=zero_deriv, doc=doc))


unary("neg", np.negative, floats_only=False)
TABLE.rows["neg"].jvp = lambda b, a, t, o: [b.neg(t[0])]
TABLE.rows["neg"].vjp = lambda b, a, o, ct, need: [b.neg(ct[0])]
unary("sin", np.sin, lambda b, x, y: b.cos(x))
unary("cos", np.cos, lambda b, x, y: b.neg(b.sin(x)))
unary("tan", np.tan, lambda b, x, y: b.add(c(y, 1.0), b.mul(y, y)))
unary("exp", np.exp, lambda b, x, y: y)
unary("log", np.log, lambda b, x, y: b.div(c(x, 1.0), x))
unary("log1p", np.log1p, lambda b, x, y: b.div(c(x, 1.0), b.add(c(x, 1.0), x)))
unary("expm1", np.expm1, lambda b, x, y: b.add(y, c(y, 1.0)))
# sqrt' = 0.5 * (1 / y), the same bits as 0.5 / y: the reciprocal is shared (note [reciprocal-rules])
unary("sqrt", np.sqrt, lambda b, x, y: b.mul(c(y, 0.5), b.div(c(y, 1.0), y)))
unary("tanh", np.tanh, lambda b, x, y: b.sub(c(y, 1.0), b.mul(y, y)))
unary("logistic", lambda x: 0.5 * (np.tanh(0.5 * x) + 1.0),
      lambda b, x, y: b.mul(y, b.sub(c(y, 1.0), y)))
unary("abs", np.abs, lambda b, x, y: b.sign(x), floats_only=False)
unary("sign", np.sign, zero_deriv=True, floats_only=False)
unary("floor", np.floor, zero_deriv=True)
unary("ceil", np.ceil, zero_deriv=True)
unary("round", np.round, zero_deriv=True)
unary("isnan", np.isnan, zero_deriv=True, keep_dtype=False)


def _not_type(ts, **p):
    (t,) = ts
    check(t.dtype == "bool", f"'not' needs a bool operand, got {t}")
    return (t,)


TABLE.add(Row("not", _not_type, np.logical_not, cost=_cost_out, zero_deriv=True))


# -- binary -------------------------------------------------------------------

def broadcast_shapes(name, s1, s2):
    try:
        return tuple(np.broadcast_shapes(tuple(s1), tuple(s2)))
    except ValueError:
        raise ShapeError(
            f"'{name}': shapes {tuple(s1)} and {tuple(s2)} do not broadcast",
            hint="make the trailing dimensions equal or 1 (reshape or index the operands)",
        ) from None


def binary(name, fn, partials=None, *, zero_deriv=False, out_dtype=None, operand_dtypes=None, doc=""):
    """`partials(b, x, y, out)` returns (dout/dx, dout/dy) as atoms (or None for 0)."""

    def type_(ts, **p):
        t1, t2 = ts
        check(isinstance(t1, TensorType) and isinstance(t2, TensorType), f"'{name}' expects tensors")
        if operand_dtypes is not None:
            check(t1.dtype in operand_dtypes and t2.dtype in operand_dtypes,
                  f"'{name}' needs operands of {'/'.join(operand_dtypes)}, got {t1} and {t2}")
        shape = broadcast_shapes(name, t1.shape, t2.shape)
        dt = out_dtype or promote(t1.dtype, t2.dtype)
        return (TensorType(dt, shape),)

    def impl(x, y):
        with np.errstate(all="ignore"):
            r = fn(x, y)
        if out_dtype is None:
            want = np_dtype(promote(_dt(x), _dt(y)))
            if np.asarray(r).dtype != want:
                r = np.asarray(r).astype(want)[()]
        return r

    jvp = vjp = None
    if partials is not None:
        def jvp(b, args, tans, outs):
            x, y = args
            dx, dy = partials(b, x, y, outs[0], (tans[0] is not None, tans[1] is not None))
            tx = None if tans[0] is None else (tans[0] if dx is True else smul(b, tans[0], dx))
            ty = None if tans[1] is None else (tans[1] if dy is True else
                                               b.neg(tans[1]) if dy is False else smul(b, tans[1], dy))
            return [bcast(b, addz(b, tx, ty), outs[0].type.shape)]

        def vjp(b, args, outs, cts, need):
            x, y = args
            (ct,) = cts
            dx, dy = partials(b, x, y, outs[0], need)
            res = []
            for a, d, nd in ((x, dx, need[0]), (y, dy, need[1])):
                if not nd or d is None:
                    res.append(None)
                    continue
                g = ct if d is True else b.neg(ct) if d is False else smul(b, ct, d)
                res.append(unbroadcast(b, g, a.type))
            return res

    return TABLE.add(Row(name, type_, impl, jvp, vjp, _cost_out, zero_deriv=zero_deriv, doc=doc))


def _dt(v):
    from ..types import dtype_of_np
    return dtype_of_np(np.asarray(v).dtype)


# partials: True means "identity" (1), False means "negation" (-1).
binary("add", np.add, lambda b, x, y, o, n: (True, True))
binary("sub", np.subtract, lambda b, x, y, o, n: (True, False))
binary("mul", np.multiply, lambda b, x, y, o, n: (y if n[0] else None, x if n[1] else None))


def _smul_impl(x, y):
    with np.errstate(all="ignore"):
        r = np.multiply(x, y)
        bad = np.isnan(r) & ((np.asarray(x) == 0) | (np.asarray(y) == 0))
    return np.where(bad, np.zeros_like(r), r)[()]


def _smul_guard(b, x, y):
    """Where the strong product is 0 and the plain one NaN (`_util.smul`)."""
    zero = b.or_(b.eq(x, _zero_of(x)), b.eq(y, _zero_of(y)))
    return b.and_(b.isnan(b.mul(x, y)), zero)


def _zero_of(x):
    return c(x, 0.0 if x.type.is_float else 0)


def _smul_jvp(b, args, tans, outs):
    x, y = args
    t = addz(b, smul(b, tans[0], y) if tans[0] is not None else None,
             smul(b, x, tans[1]) if tans[1] is not None else None)
    if t is None:
        return [None]
    t = bcast(b, t, outs[0].type.shape)
    return [b.where(_smul_guard(b, x, y), _zero_of(outs[0]), t)]


def _smul_vjp(b, args, outs, cts, need):
    x, y = args
    g = b.where(_smul_guard(b, x, y), _zero_of(outs[0]), cts[0])
    return [unbroadcast(b, smul(b, g, y), x.type) if need[0] else None,
            unbroadcast(b, smul(b, g, x), y.type) if need[1] else None]


# the strong product `where(isnan(x*y) & ((x == 0) | (y == 0)), 0, x*y)` as one primitive: the
# numba backend folds derivative code's guarded products into it before printing (passes/strong_mul.py)
_r = binary("smul", _smul_impl, lambda b, x, y, o, n: (y if n[0] else None, x if n[1] else None),
            doc="strong product: an exact zero factor gives an exact zero, even against inf or NaN")
TABLE.rows["smul"] = Row(_r.name, _r.type, _r.impl, _smul_jvp, _smul_vjp, _r.cost, doc=_r.doc)


# `where(isnan(a*d) & ((a == 0) | (d == 0)), 0, y)` as one primitive, `smask(y, a, d)`: y, except 0
# where the strong product of a and d is an exact zero its plain product makes NaN. The derivative
# of a strong product (`_smul_jvp`, `_smul_vjp`, and `where`'s rules on the guarded form) masks
# its tangent or cotangent this way; the numba backend folds that form into this primitive before
# printing (passes/strong_mul.py, note [strong-mul], "Masks")


def _smask_impl(y, a, d):
    with np.errstate(all="ignore"):
        bad = np.isnan(np.multiply(a, d)) & ((np.asarray(a) == 0) | (np.asarray(d) == 0))
    return np.where(bad, np.zeros_like(np.asarray(y)), y)[()]


def _smask_type(ts, **p):
    ty, ta, td = ts
    check(ty.is_float and ta.is_float and td.is_float, f"'smask' takes floats, got {ty}, {ta}, {td}")
    shape = broadcast_shapes("smask", broadcast_shapes("smask", ty.shape, ta.shape), td.shape)
    return (TensorType(ty.dtype, shape),)


def _smask_jvp(b, args, tans, outs):
    # the mask is piecewise constant in a and d: only y's tangent passes, masked alike
    if tans[0] is None:
        return [None]
    return [bcast(b, b.smask(tans[0], args[1], args[2]), outs[0].type.shape)]


def _smask_vjp(b, args, outs, cts, need):
    y, a, d = args
    g = unbroadcast(b, b.smask(cts[0], a, d), y.type) if need[0] else None
    return [g, None, None]


TABLE.add(Row("smask", _smask_type, _smask_impl, _smask_jvp, _smask_vjp, _cost_out,
              doc="y, except 0 where the strong product of a and d rescues a NaN"))


def _div_partials(b, x, y, o, n):
    # one reciprocal r = 1/y for both partials, -o * r instead of -o / y: CSE shares r with the
    # program's own 1/y, and higher orders differentiate a product (note [reciprocal-rules])
    r = b.div(c(o, 1.0), y)
    dx = r if n[0] else None
    dy = b.neg(b.mul(o, r)) if n[1] else None
    return dx, dy


def _div_type(ts, **p):
    t1, t2 = ts
    shape = broadcast_shapes("div", t1.shape, t2.shape)
    dt = promote(t1.dtype, t2.dtype)
    return (TensorType("f64" if dt in ("i64", "bool") else dt, shape),)


binary("div", np.true_divide, _div_partials)
TABLE.rows["div"].type = _div_type
TABLE.rows["div"].impl = lambda x, y: _true_div(x, y)


def _true_div(x, y):
    with np.errstate(all="ignore"):
        return np.true_divide(x, y)


def _pow_partials(b, x, y, o, n):
    dx = dy = None
    if n[0]:
        ym1 = b.sub(y, c(y, 1))
        dx = smul(b, b.cast(y, dtype=o.type.dtype) if y.type.dtype != o.type.dtype else y, b.pow(x, ym1))
    if n[1]:
        # an integer base with a float exponent (np.arange(1, n) ** s): log of the base as a float
        xf = b.cast(x, dtype=o.type.dtype) if x.type.dtype != o.type.dtype else x
        dy = smul(b, o, b.log(xf))  # 0 ** y (y > 0): o == 0 and log(0) == -inf -> 0
    return dx, dy


def _int_pow(x, y):
    """`x ** y`, raising for integer operands with a negative exponent (as NumPy
    does; the backends print the same check, note [run-time-checks])."""
    if _dt(x) in ("i64", "bool") and _dt(y) in ("i64", "bool") and np.any(np.asarray(y) < 0):
        raise ZeroDivisionError("integer to a negative integer power")
    return np.power(x, y)


binary("pow", _int_pow, _pow_partials)


def _max_partials(b, x, y, o, n, pick="gt"):
    # ties split the derivative evenly, as JAX does
    xf = b.cast(getattr(b, pick)(x, y), dtype=o.type.dtype)
    eq = b.cast(b.eq(x, y), dtype=o.type.dtype)
    half = b.mul(eq, c(o, 0.5))
    wx = b.add(xf, half)
    wy = b.sub(c(o, 1.0), wx)
    return (wx if n[0] else None), (wy if n[1] else None)


binary("maximum", np.maximum, lambda b, x, y, o, n: _max_partials(b, x, y, o, n, "gt"))
binary("minimum", np.minimum, lambda b, x, y, o, n: _max_partials(b, x, y, o, n, "lt"))


def _int_checked(fn, what):
    """`fn` for `//` / `%`, raising ZeroDivisionError for integer operands with a
    zero divisor, as Python does (NumPy gives 0); float operands give inf/nan
    as in NumPy. Backends print the same check (note [run-time-checks])."""

    def impl(x, y):
        if _dt(x) in ("i64", "bool") and _dt(y) in ("i64", "bool") and not np.all(y):
            raise ZeroDivisionError(f"integer {what} by zero")
        return fn(x, y)

    return impl


binary("mod", _int_checked(np.mod, "modulo"), lambda b, x, y, o, n: (True if n[0] else None,
                                                                   b.neg(b.floor(b.div(x, y))) if n[1] else None))
binary("floordiv", _int_checked(np.floor_divide, "division"), zero_deriv=True)
binary("atan2", np.arctan2, lambda b, x, y, o, n: (
    b.div(y, b.add(b.mul(x, x), b.mul(y, y))) if n[0] else None,
    b.neg(b.div(x, b.add(b.mul(x, x), b.mul(y, y)))) if n[1] else None))

for _name, _fn in (("lt", np.less), ("le", np.less_equal), ("gt", np.greater),
                   ("ge", np.greater_equal), ("eq", np.equal), ("ne", np.not_equal)):
    binary(_name, _fn, zero_deriv=True, out_dtype="bool")
for _name, _fn in (("and", np.logical_and), ("or", np.logical_or), ("xor", np.logical_xor)):
    binary(_name, _fn, zero_deriv=True, out_dtype="bool", operand_dtypes=("bool",))


# -- where, cast ----------------------------------------------------------------

def _where_type(ts, **p):
    tc, tx, ty = ts
    check(tc.dtype == "bool", f"'where' needs a bool condition, got {tc}")
    shape = broadcast_shapes("where", broadcast_shapes("where", tc.shape, tx.shape), ty.shape)
    return (TensorType(promote(tx.dtype, ty.dtype), shape),)


def _where_jvp(b, args, tans, outs):
    cnd, x, y = args
    _, tx, ty = tans
    shape = outs[0].type.shape
    if tx is None and ty is None:
        return [None]
    z = c(outs[0], 0.0)
    return [bcast(b, b.where(cnd, tx if tx is not None else z, ty if ty is not None else z), shape)]


def _where_vjp(b, args, outs, cts, need):
    cnd, x, y = args
    (ct,) = cts
    z = c(ct, 0.0)
    gx = unbroadcast(b, b.where(cnd, ct, z), x.type) if need[1] else None
    gy = unbroadcast(b, b.where(cnd, z, ct), y.type) if need[2] else None
    return [None, gx, gy]


TABLE.add(Row("where", _where_type, np.where, _where_jvp, _where_vjp, _cost_out))


def _cast_type(ts, dtype):
    (t,) = ts
    return (t.with_dtype(dtype),)


def _cast_impl(x, dtype):
    r = np.asarray(x).astype(np_dtype(dtype))
    return r if r.ndim else r[()]


def _cast_jvp(b, args, tans, outs, dtype):
    if dtype not in ("f32", "f64") or not args[0].type.is_float:
        return [None]
    return [b.cast(tans[0], dtype=dtype)]


def _cast_vjp(b, args, outs, cts, need, dtype):
    if dtype not in ("f32", "f64") or not args[0].type.is_float:
        return [None]
    return [b.cast(cts[0], dtype=args[0].type.dtype)]


TABLE.add(Row("cast", _cast_type, _cast_impl, _cast_jvp, _cast_vjp, _cost_out))


# stop_gradient: the value, with a zero derivative in every mode (jax.lax.stop_gradient)
def _stop_impl(x):
    import numpy as np

    return np.array(x, copy=True) if np.ndim(x) else x


TABLE.add(Row("stop_gradient", lambda ts: (ts[0],), _stop_impl, cost=lambda ts, outs: 0, zero_deriv=True))
