"""`scipy.stats` log-densities with traced arguments, as users write them when
coming from autograd (`autograd.scipy.stats.norm.logpdf`) or JAX
(`jax.scipy.stats.norm.logpdf`).

Contract: `lookup(fn)` is None unless `fn` is one of the supported methods of
SciPy's distribution objects (`scipy.stats.norm.logpdf`, ...) and scipy.stats
has been imported by the user; then it is a plain NumPy/scipy.special function
of the same signature (positional `x`, shape parameters, then `loc`, `scale`)
that `calls.call` stages from its source like a helper of the user's, so its
derivatives are those of its body. Frozen distributions (`norm(0, 1).logpdf`)
and keyword forms other than `loc=`/`scale=` are not covered (they are staged
into SciPy's own source and fail there with a located error). Outside the
support (`expon` at x < loc, ...) the log-density is -inf as in SciPy.
"""
from __future__ import annotations

import sys

import numpy as np
from scipy.special import betaln, gammaln, log_ndtr, ndtr, xlog1py, xlogy  # noqa: F401  (staged bodies)

_LOG_2PI = float(np.log(2 * np.pi))


def _norm_logpdf(x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    return -0.5 * z * z - np.log(scale) - 0.5 * _LOG_2PI


def _norm_pdf(x, loc=0.0, scale=1.0):
    return np.exp(_norm_logpdf(x, loc, scale))


def _norm_cdf(x, loc=0.0, scale=1.0):
    return ndtr((x - loc) / scale)


def _norm_logcdf(x, loc=0.0, scale=1.0):
    return log_ndtr((x - loc) / scale)


def _norm_sf(x, loc=0.0, scale=1.0):
    return ndtr((loc - x) / scale)


def _norm_logsf(x, loc=0.0, scale=1.0):
    return log_ndtr((loc - x) / scale)


def _t_logpdf(x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    return (gammaln((df + 1) / 2) - gammaln(df / 2) - 0.5 * np.log(df * np.pi) - np.log(scale)
            - (df + 1) / 2 * np.log1p(z * z / df))


def _t_pdf(x, df, loc=0.0, scale=1.0):
    return np.exp(_t_logpdf(x, df, loc, scale))


def _laplace_logpdf(x, loc=0.0, scale=1.0):
    return -np.abs(x - loc) / scale - np.log(2 * scale)


def _cauchy_logpdf(x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    return -np.log(np.pi * scale * (1 + z * z))


def _expon_logpdf(x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    return np.where(z >= 0, -z, -np.inf) - np.log(scale)


def _gamma_logpdf(x, a, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    return np.where(z >= 0, xlogy(a - 1, z) - z - gammaln(a), -np.inf) - np.log(scale)


def _beta_logpdf(x, a, b, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    inside = (z >= 0) & (z <= 1)
    return np.where(inside, xlogy(a - 1, z) + xlog1py(b - 1, -z) - betaln(a, b), -np.inf) - np.log(scale)


def _poisson_logpmf(k, mu, loc=0):
    k = k - loc
    return np.where(k >= 0, xlogy(k, mu) - mu - gammaln(k + 1), -np.inf)


def _poisson_pmf(k, mu, loc=0):
    return np.exp(_poisson_logpmf(k, mu, loc))


def _multivariate_normal_logpdf(x, mean, cov):
    d = x - mean
    L = np.linalg.cholesky(cov)
    z = np.linalg.solve(L, d.T)
    k = L.shape[0]
    return -0.5 * np.sum(z * z, axis=0) - np.sum(np.log(np.diag(L))) - 0.5 * k * _LOG_2PI


_TABLE = None
_NAMES = {
    "norm": {"logpdf": _norm_logpdf, "pdf": _norm_pdf, "cdf": _norm_cdf, "logcdf": _norm_logcdf,
             "sf": _norm_sf, "logsf": _norm_logsf},
    "t": {"logpdf": _t_logpdf, "pdf": _t_pdf},
    "laplace": {"logpdf": _laplace_logpdf},
    "cauchy": {"logpdf": _cauchy_logpdf},
    "expon": {"logpdf": _expon_logpdf},
    "gamma": {"logpdf": _gamma_logpdf},
    "beta": {"logpdf": _beta_logpdf},
    "poisson": {"logpmf": _poisson_logpmf, "pmf": _poisson_pmf},
    "multivariate_normal": {"logpdf": _multivariate_normal_logpdf},
}


def _table():
    global _TABLE
    if _TABLE is None:
        stats = sys.modules["scipy.stats"]
        _TABLE = {getattr(getattr(stats, dist), meth): fn
                  for dist, meths in _NAMES.items() for meth, fn in meths.items()}
    return _TABLE


def lookup(fn):
    """The staged replacement of a supported `scipy.stats.<dist>.<method>`, else None."""
    if "scipy.stats" not in sys.modules or getattr(fn, "__self__", None) is None:
        return None
    try:
        return _table().get(fn)
    except TypeError:
        return None


def supported() -> list:
    """`scipy.stats.<dist>.<method>` names, for the documentation."""
    return sorted(f"scipy.stats.{d}.{m}" for d, ms in _NAMES.items() for m in ms)
