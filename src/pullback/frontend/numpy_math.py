"""Elementwise functions composed from primitives with derivative rules
(issue 10): inverse trigonometric and hyperbolic functions, `cbrt`, `sinc`,
`nan_to_num`, `fabs`, and the scalar `math` functions `degrees`, `radians`,
`hypot`, `exp2`, `erf`, `erfc`, `lgamma`, `gamma` (the last four on the
special-function primitives of `ir/prims/special.py`).

Contract: importing this module registers the handlers in `numpy_api.FUNCS`
(and `math.asin`, ... for scalars). Each is written so that its value is
accurate and its derivative is the textbook one everywhere in the domain:
branches are chosen with `where`, whose unselected side gets an exact zero
cotangent (note [edge-numerics]), so a NaN there never leaks into the result.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import StagingError
from . import ops
from .numpy_api import _reg
from .values import Traced


def _t(st, x) -> Traced:
    x = x if isinstance(x, Traced) else ops.as_traced(st, x)
    return x if x.type.is_float else ops.cast(st, x, "f64")


def _sqrt1m(st, x):   # sqrt(1 - x^2)
    return ops.unary(st, "sqrt", ops.binary(st, "sub", 1.0, ops.binary(st, "mul", x, x)))


@_reg(np.arcsin, math.asin)
def _arcsin(st, x):
    x = _t(st, x)
    return ops.binary(st, "atan2", x, _sqrt1m(st, x))


@_reg(np.arccos, math.acos)
def _arccos(st, x):
    x = _t(st, x)
    return ops.binary(st, "atan2", _sqrt1m(st, x), x)


@_reg(np.arctan, math.atan)
def _arctan(st, x):
    x = _t(st, x)
    return ops.binary(st, "atan2", x, ops.full(st, x.shape, 1.0, x.type.dtype))


@_reg(np.arcsinh, math.asinh)
def _arcsinh(st, x):
    x = _t(st, x)
    r = ops.unary(st, "sqrt", ops.binary(st, "add", ops.binary(st, "mul", x, x), 1.0))
    pos = ops.unary(st, "log", ops.binary(st, "add", x, r))
    neg = ops.emit(st, "neg", ops.unary(st, "log", ops.binary(st, "sub", r, x)).atom)
    return ops.where(st, ops.binary(st, "ge", x, 0.0), pos, neg)     # no cancellation for x << 0


@_reg(np.arccosh, math.acosh)
def _arccosh(st, x):
    x = _t(st, x)
    r = ops.unary(st, "sqrt", ops.binary(st, "sub", ops.binary(st, "mul", x, x), 1.0))
    return ops.unary(st, "log", ops.binary(st, "add", x, r))


@_reg(np.arctanh, math.atanh)
def _arctanh(st, x):
    x = _t(st, x)
    return ops.binary(st, "mul", ops.unary(st, "log1p", ops.binary(st, "div", ops.binary(st, "mul", x, 2.0),
                                                                   ops.binary(st, "sub", 1.0, x))), 0.5)


@_reg(np.cbrt, getattr(math, "cbrt", None))
def _cbrt(st, x):
    x = _t(st, x)
    third = 1.0 / 3.0
    pos = ops.binary(st, "pow", x, third)
    neg = ops.emit(st, "neg", ops.binary(st, "pow", ops.emit(st, "neg", x.atom), third).atom)
    return ops.where(st, ops.binary(st, "ge", x, 0.0), pos, neg)


@_reg(np.sinc)
def _sinc(st, x):
    x = _t(st, x)
    px = ops.binary(st, "mul", x, math.pi)
    zero = ops.binary(st, "eq", x, 0.0)
    safe = ops.where(st, zero, 1.0, px)          # keeps the unselected 0/0 out of the values
    return ops.where(st, zero, 1.0, ops.binary(st, "div", ops.unary(st, "sin", safe), safe))


@_reg(np.nan_to_num)
def _nan_to_num(st, x, copy=True, nan=0.0, posinf=None, neginf=None):
    x = _t(st, x)
    big = float(np.finfo(np.float32 if x.type.dtype == "f32" else np.float64).max)
    pinf = big if posinf is None else posinf
    ninf = -big if neginf is None else neginf
    r = ops.where(st, ops.binary(st, "eq", x, math.inf), pinf, x)
    r = ops.where(st, ops.binary(st, "eq", x, -math.inf), ninf, r)
    return ops.where(st, ops.unary(st, "isnan", x), nan, r)


@_reg(np.fabs)
def _fabs(st, x, **kw):
    if any(v is not None for v in kw.values()):
        raise StagingError(f"np.fabs: arguments {sorted(kw)} are not supported with traced values")
    return ops.unary(st, "abs", _t(st, x))


_reg(math.degrees)(lambda st, x: ops.binary(st, "mul", _t(st, x), 180.0 / math.pi))
_reg(math.radians)(lambda st, x: ops.binary(st, "mul", _t(st, x), math.pi / 180.0))
_reg(getattr(math, "exp2", None))(lambda st, x: ops.unary(st, "exp", ops.binary(st, "mul", _t(st, x), math.log(2.0))))


@_reg(math.hypot)
def _hypot(st, *xs):
    """sqrt of the sum of squares (any number of coordinates, as math.hypot)."""
    if not xs:
        return 0.0
    s = None
    for x in xs:
        x = _t(st, x)
        sq = ops.binary(st, "mul", x, x)
        s = sq if s is None else ops.binary(st, "add", s, sq)
    return ops.unary(st, "sqrt", s)


for _f, _op in ((math.erf, "erf"), (math.erfc, "erfc"), (math.lgamma, "gammaln"), (math.gamma, "gamma")):
    _reg(_f)(lambda st, x, _op=_op: ops.emit(st, _op, _t(st, x).atom))
