"""Sample calls (format: `_spec`) of the elementwise functions: NumPy's arithmetic
ufuncs and smooth unary functions, `math`'s scalar functions, Python's builtins
on traced values, conversions and array construction (`np.array`, `np.full`).

The elementwise-math additions of issue 10 (arcsin, exp2, hypot, clip, ...)
have their samples in special.py. Every sample is smooth at its random point
(domains are set with `F(lo=, hi=)`), so order 2 is checked.
"""
import math

import numpy as np

from ._spec import F, S


def _to_f32(x):
    # float32 round trip: the result is float32, so the checks use a wide eps and loose tolerances
    return np.float32(x) * np.float32(2.0)


def _ints(x):
    i = np.int64(np.argmax(x))  # a traced integer; the derivative flows through the read
    j = np.int32(np.argmin(x))
    return x[i] * 3.0 - x[j]


def _builtin_float(x):
    return float(x[1]) * x


def _array_of(a, b):
    return np.array([a, b * b, 2.0])


def _full(x):
    return np.full((2, 3), x) * np.array([1.0, 2.0, 3.0])


def _full_like(x):
    return np.full_like(x, 2.5) * x + np.full_like(x, 1.0)


def _size(x):
    return x * np.size(x) + np.size(x, 0)


SAMPLES = [
    # -- NumPy arithmetic (binary ufuncs, broadcasting) --
    S("np.add", lambda x, y: np.add(x, y) * x, (F(2, 3), F(3))),
    S("np.subtract", lambda x, y: np.subtract(x, y) * y, (F(3), F(2, 1))),
    S("np.multiply", lambda x, y: np.multiply(x, y), (F(2, 3), F(2, 3))),
    S("np.divide", lambda x, y: np.divide(x, y), (F(3), F(3, lo=0.5, hi=2.0))),
    S("np.power", lambda x, y: np.power(x, y), (F(3, lo=0.5, hi=2.0), F(3, lo=-1.5, hi=1.5))),
    S("np.remainder", lambda x, y: np.remainder(x, y), (F(3, lo=0.1, hi=0.9), F(3, lo=1.0, hi=1.5))),
    S("np.maximum", lambda x, y: np.maximum(x, y), (F(4), F(4))),
    S("np.minimum", lambda x, y: np.minimum(x, y), (F(4), F(4))),
    S("np.fmax", lambda x, y: np.fmax(x, y), (F(4), F(4))),
    S("np.fmin", lambda x, y: np.fmin(x, y), (F(4), F(4))),
    S("np.negative", lambda x: np.negative(x) * x, (F(3),)),
    S("np.absolute", lambda x: np.absolute(x) * x, (F(3),)),
    S("abs", lambda x: abs(x) * x, (F(3),)),
    # -- smooth unary ufuncs --
    S("np.sin", lambda x: np.sin(x), (F(2, 3),)),
    S("np.cos", lambda x: np.cos(x), (F(3),)),
    S("np.tan", lambda x: np.tan(x), (F(3, lo=-1.2, hi=1.2),)),
    S("np.exp", lambda x: np.exp(x), (F(3),)),
    S("np.expm1", lambda x: np.expm1(x), (F(3),)),
    S("np.log", lambda x: np.log(x), (F(3, lo=0.2, hi=3.0),)),
    S("np.log1p", lambda x: np.log1p(x), (F(3, lo=-0.8, hi=3.0),)),
    S("np.sqrt", lambda x: np.sqrt(x), (F(3, lo=0.2, hi=3.0),)),
    S("np.tanh", lambda x: np.tanh(x), (F(3),)),
    S("np.sinh", lambda x: np.sinh(x), (F(3),)),
    S("np.cosh", lambda x: np.cosh(x), (F(3),)),
    S("np.where", lambda x, y: np.where(x > 0, x * y, np.sin(y)), (F(4), F(4))),
    S("np.select", lambda x: np.select([x < -0.5, x > 0.5], [x * x, np.sin(x)], 1.0 - x), (F(5),)),
    # -- math and builtins on traced scalars --
    S("math.sin", lambda x: math.sin(x) * x, (F(),)),
    S("math.cos", lambda x: math.cos(x), (F(),)),
    S("math.tan", lambda x: math.tan(x), (F(lo=-1.2, hi=1.2),)),
    S("math.exp", lambda x: math.exp(x), (F(),)),
    S("math.expm1", lambda x: math.expm1(x), (F(),)),
    S("math.log", lambda x: math.log(x) + math.log(x, 3.0), (F(lo=0.2, hi=3.0),)),
    S("math.log1p", lambda x: math.log1p(x), (F(lo=-0.8, hi=3.0),)),
    S("math.sqrt", lambda x: math.sqrt(x), (F(lo=0.2, hi=3.0),)),
    S("math.tanh", lambda x: math.tanh(x), (F(),)),
    S("math.pow", lambda x, y: math.pow(x, y), (F(lo=0.5, hi=2.0), F(lo=-1.5, hi=1.5))),
    S("pow", lambda x, y: pow(x, y) + pow(x, 3), (F(lo=0.5, hi=2.0), F())),
    S("max", lambda x, y: max(x, y, 0.25) * x, (F(), F())),
    S("min", lambda x: min(x) * x, (F(4),)),
    S("sum", lambda x, y: sum([x, y * y, 1.0]) + sum(y), (F(), F(3))),
    # -- conversions and construction --
    S("float", _builtin_float, (F(3),)),
    S("np.float64", lambda x: np.float64(x) * x, (F(),)),
    S("np.float32", _to_f32, (F(3, lo=0.5, hi=2.0),), rtol=1e-3, atol=1e-4, eps=1e-3),
    S("np.int64", _ints, (F(4),)),
    S("np.int32", _ints, (F(5),)),
    S("np.array", _array_of, (F(), F())),
    S("np.asarray", lambda x: np.asarray(x) * x, (F(3),)),
    S("np.asanyarray", lambda a, b: np.asanyarray([a, b]) * a, (F(), F())),
    S("np.copy", lambda x: np.copy(x) * x, (F(3),)),
    S("np.full", _full, (F(),)),
    S("np.full_like", _full_like, (F(3),)),
    S("np.size", _size, (F(2, 3),)),
]
