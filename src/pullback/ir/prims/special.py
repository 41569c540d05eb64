"""Special functions (`scipy.special`) that are primitives: the ones that cannot
be composed exactly from the elementwise primitives (issue 10).

Contract: unary elementwise float rows, each with a derivative that is again
made of primitives, so every order is available:

- ``erf``, ``erfc``: d/dx = +-2/sqrt(pi) exp(-x^2);
- ``erfinv``: d/dx = sqrt(pi)/2 exp(erfinv(x)^2) (from the output);
- ``gammaln`` (log|Gamma|): d/dx = polygamma(0, x);
- ``gamma``: d/dx = gamma(x) polygamma(0, x);
- ``polygamma`` with the static integer parameter ``n`` >= 0 (n = 0 is
  digamma): d/dx = polygamma(n + 1, x), so digamma's derivatives of any order
  stay primitives;
- ``log_ndtr`` (log of the standard normal CDF): d/dx = exp(-x^2/2 - log_ndtr(x))
  / sqrt(2 pi), accurate in both tails (no ratio of tiny numbers).

The implementations are SciPy's (imported on first use, so importing pullback
does not import SciPy). Products with the tangent/cotangent are strong
(`smul`, note [edge-numerics]). numba forms: `backends/libcalls/special.py`.
"""
from __future__ import annotations

import math

import numpy as np

from ..types import TensorType
from . import TABLE, Row, check
from ._util import c, smul


def _sp(name):
    import scipy.special as sp

    return getattr(sp, name)


def _cost(arg_types, out_types, **p):
    return 20 * out_types[0].size     # a special function costs more than one arithmetic op


def special_unary(name, impl, deriv, *, doc=""):
    """A float elementwise row; `deriv(b, x, y, **params)` is dy/dx as an atom."""

    def type_(ts, **p):
        (t,) = ts
        check(isinstance(t, TensorType) and t.dtype in ("f64", "f32"),
              f"'{name}' needs a float operand, got {t}", hint="convert with x.astype(float) first")
        return (t,)

    def impl_(x, **p):
        with np.errstate(all="ignore"):
            r = np.asarray(impl(x, **p))
        r = r.astype(np.asarray(x).dtype, copy=False)
        return r if r.ndim else r[()]

    def jvp(b, args, tans, outs, **p):
        return [smul(b, tans[0], deriv(b, args[0], outs[0], **p))]

    def vjp(b, args, outs, cts, need, **p):
        return [smul(b, cts[0], deriv(b, args[0], outs[0], **p))]

    return TABLE.add(Row(name, type_, impl_, jvp, vjp, _cost, doc=doc))


_TWO_OVER_SQRTPI = 2.0 / math.sqrt(math.pi)
_SQRTPI_OVER_TWO = math.sqrt(math.pi) / 2.0
_INV_SQRT2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _gauss(b, x):          # exp(-x^2)
    return b.exp(b.neg(b.mul(x, x)))


special_unary("erf", lambda x: _sp("erf")(x), lambda b, x, y: b.mul(_gauss(b, x), c(x, _TWO_OVER_SQRTPI)),
              doc="the error function")
special_unary("erfc", lambda x: _sp("erfc")(x), lambda b, x, y: b.mul(_gauss(b, x), c(x, -_TWO_OVER_SQRTPI)),
              doc="the complementary error function 1 - erf(x), accurate for large x")
special_unary("erfinv", lambda x: _sp("erfinv")(x),
              lambda b, x, y: b.mul(b.exp(b.mul(y, y)), c(y, _SQRTPI_OVER_TWO)),
              doc="the inverse of erf on (-1, 1)")
special_unary("gammaln", lambda x: _sp("gammaln")(x), lambda b, x, y: b.emit("polygamma", x, n=0),
              doc="log|Gamma(x)|")
special_unary("gamma", lambda x: _sp("gamma")(x), lambda b, x, y: b.mul(y, b.emit("polygamma", x, n=0)),
              doc="the Gamma function")
special_unary("log_ndtr", lambda x: _sp("log_ndtr")(x),
              lambda b, x, y: b.mul(b.exp(b.sub(b.mul(b.mul(x, x), c(x, -0.5)), y)), c(x, _INV_SQRT2PI)),
              doc="log of the standard normal CDF")


def _polygamma_impl(x, n):
    return _sp("polygamma")(int(n), x) if n else _sp("psi")(x)


_pg = special_unary("polygamma", _polygamma_impl, lambda b, x, y, n: b.emit("polygamma", x, n=int(n) + 1),
                    doc="the n-th derivative of digamma (n = 0: digamma)")
_pg_type = _pg.type


def _polygamma_type(ts, n):
    check(isinstance(n, int) and not isinstance(n, bool) and n >= 0,
          f"polygamma: the order n must be a non-negative integer, got {n!r}")
    return _pg_type(ts)


_pg.type = _polygamma_type
