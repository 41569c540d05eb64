"""Sample calls (format: `_spec`) of `scipy.special` (frontend/scipy_special.py)
and of issue 10's elementwise-math list (frontend/numpy_math.py and its
neighbours): inverse trigonometric and hyperbolic functions, angle
conversions, exp2/log2/log10, hypot, logaddexp(2), reciprocal, sinc, fabs,
square, cbrt, clip, nan_to_num, heaviside, and their `math` forms.

Every sample is smooth at its random point (domains set with `F(lo=, hi=)`;
clip and heaviside are piecewise smooth, and a random point misses their
kinks), so order 2 is checked.
"""
import math

import numpy as np
import scipy.special as sp

from ._spec import F, S

SAMPLES = [
    # -- scipy.special ---------------------------------------------------------------
    S("scipy.special.logsumexp", lambda x: sp.logsumexp(x), (F(2, 3),)),
    S("scipy.special.logsumexp", lambda x: sp.logsumexp(x, axis=1, keepdims=True), (F(2, 3),), id="logsumexp_axis"),
    S("scipy.special.logsumexp", lambda x, b: sp.logsumexp(x, axis=0, b=b), (F(3, 2), F(3, 2, lo=0.5, hi=2.0)),
      id="logsumexp_b"),
    S("scipy.special.softmax", lambda x: sp.softmax(x, axis=1), (F(2, 3),)),
    S("scipy.special.log_softmax", lambda x: sp.log_softmax(x), (F(4),)),
    S("scipy.special.expit", lambda x: sp.expit(x), (F(3),)),
    S("scipy.special.logit", lambda x: sp.logit(x), (F(3, lo=0.1, hi=0.9),)),
    S("scipy.special.erf", lambda x: sp.erf(x), (F(3),)),
    S("scipy.special.erfc", lambda x: sp.erfc(x), (F(3),)),
    S("scipy.special.erfinv", lambda x: sp.erfinv(x), (F(3, lo=-0.8, hi=0.8),)),
    S("scipy.special.ndtr", lambda x: sp.ndtr(x), (F(3),)),
    S("scipy.special.log_ndtr", lambda x: sp.log_ndtr(x), (F(3, lo=-5.0, hi=3.0),)),
    S("scipy.special.gammaln", lambda x: sp.gammaln(x), (F(3, lo=0.3, hi=4.0),)),
    S("scipy.special.gamma", lambda x: sp.gamma(x), (F(3, lo=0.3, hi=3.0),)),
    S("scipy.special.psi", lambda x: sp.digamma(x), (F(3, lo=0.5, hi=4.0),), id="digamma"),  # digamma is psi
    S("scipy.special.psi", lambda x: sp.psi(x), (F(lo=0.5, hi=4.0),)),
    S("scipy.special.polygamma", lambda x: sp.polygamma(1, x) + sp.polygamma(2, x), (F(3, lo=1.0, hi=4.0),)),
    S("scipy.special.betaln", lambda a, b: sp.betaln(a, b), (F(3, lo=0.5, hi=3.0), F(3, lo=0.5, hi=3.0))),
    S("scipy.special.xlogy", lambda x, y: sp.xlogy(x, y), (F(3), F(3, lo=0.2, hi=3.0))),
    S("scipy.special.xlog1py", lambda x, y: sp.xlog1py(x, y), (F(3), F(3, lo=-0.5, hi=2.0))),
    # -- the elementwise-math list ---------------------------------------------------------
    S("np.arcsin", lambda x: np.arcsin(x), (F(3, lo=-0.9, hi=0.9),)),
    S("np.arccos", lambda x: np.arccos(x), (F(3, lo=-0.9, hi=0.9),)),
    S("np.arctan", lambda x: np.arctan(x), (F(3),)),
    S("np.arctan2", lambda y, x: np.arctan2(y, x), (F(3), F(3, lo=0.3, hi=2.0))),
    S("np.arcsinh", lambda x: np.arcsinh(x * 3.0), (F(3),)),
    S("np.arccosh", lambda x: np.arccosh(x), (F(3, lo=1.2, hi=4.0),)),
    S("np.arctanh", lambda x: np.arctanh(x), (F(3, lo=-0.9, hi=0.9),)),
    S("np.deg2rad", lambda x: np.deg2rad(x), (F(3),)),
    S("np.rad2deg", lambda x: np.rad2deg(x), (F(3),)),
    S("np.degrees", lambda x: np.degrees(x), (F(3),)),
    S("np.radians", lambda x: np.radians(x), (F(3),)),
    S("np.exp2", lambda x: np.exp2(x), (F(3),)),
    S("np.log2", lambda x: np.log2(x), (F(3, lo=0.2, hi=3.0),)),
    S("np.log10", lambda x: np.log10(x), (F(3, lo=0.2, hi=3.0),)),
    S("np.hypot", lambda x, y: np.hypot(x, y), (F(3, lo=0.2, hi=2.0), F(3))),
    S("np.logaddexp", lambda x, y: np.logaddexp(x, y), (F(3), F(3))),
    S("np.logaddexp2", lambda x, y: np.logaddexp2(x, y), (F(3), F(3))),
    S("np.reciprocal", lambda x: np.reciprocal(x), (F(3, lo=0.3, hi=2.0),)),
    S("np.sinc", lambda x: np.sinc(x), (F(3),)),
    S("np.fabs", lambda x: np.fabs(x), (F(3, lo=0.2, hi=2.0),)),
    S("np.square", lambda x: np.square(x), (F(3),)),
    S("np.cbrt", lambda x: np.cbrt(x), (F(3, lo=0.2, hi=2.0),)),
    S("np.clip", lambda x: np.clip(x, -1.0, 1.0) * x, (F(4),)),
    S("np.nan_to_num", lambda x: np.nan_to_num(x * x), (F(3),)),
    S("np.heaviside", lambda x: np.heaviside(x, 0.5) * x, (F(4),)),
    S("math.asin", lambda x: math.asin(x), (F(lo=-0.9, hi=0.9),)),
    S("math.acos", lambda x: math.acos(x), (F(lo=-0.9, hi=0.9),)),
    S("math.atan", lambda x: math.atan(x), (F(),)),
    S("math.atan2", lambda y, x: math.atan2(y, x), (F(), F(lo=0.3, hi=2.0))),
    S("math.asinh", lambda x: math.asinh(x), (F(),)),
    S("math.acosh", lambda x: math.acosh(x), (F(lo=1.2, hi=4.0),)),
    S("math.atanh", lambda x: math.atanh(x), (F(lo=-0.9, hi=0.9),)),
    S("math.cbrt", lambda x: math.cbrt(x), (F(lo=0.2, hi=2.0),)),
    S("math.degrees", lambda x: math.degrees(x), (F(),)),
    S("math.radians", lambda x: math.radians(x), (F(),)),
    S("math.exp2", lambda x: math.exp2(x), (F(),)),
    S("math.log2", lambda x: math.log2(x), (F(lo=0.2, hi=3.0),)),
    S("math.log10", lambda x: math.log10(x), (F(lo=0.2, hi=3.0),)),
    S("math.fabs", lambda x: math.fabs(x), (F(lo=0.2, hi=2.0),)),
    S("math.hypot", lambda x, y: math.hypot(x, y), (F(lo=0.2, hi=2.0), F())),
    S("math.erf", lambda x: math.erf(x), (F(),)),
    S("math.erfc", lambda x: math.erfc(x), (F(),)),
    S("math.lgamma", lambda x: math.lgamma(x), (F(lo=0.3, hi=4.0),)),
    S("math.gamma", lambda x: math.gamma(x), (F(lo=0.3, hi=3.0),)),
]
