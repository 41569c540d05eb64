"""Statistics: log-likelihoods and log-densities, moments, mixtures."""
import math

import numpy as np
from scipy.special import gammaln, digamma, logsumexp, xlogy, erf, erfc, betaln, expit, softmax, log_softmax

from ._cases import case

_r = np.random.default_rng(3)
D = _r.standard_normal(8) * 1.5 + 0.3
C = _r.poisson(3.0, 8).astype(float)


@case(0.2, 0.1, D, argnums=(0, 1), hess=True)
def normal_loglik(mu, log_sigma, x):
    sigma = np.exp(log_sigma)
    return np.sum(-0.5 * ((x - mu) / sigma) ** 2 - np.log(sigma) - 0.5 * np.log(2 * np.pi))


@case(0.2, 1.3, D, argnums=(0, 1), hess=True)
def normal_logpdf_var(mu, var, x):
    n = x.size
    return -0.5 * n * np.log(2 * np.pi * var) - np.sum((x - mu) ** 2) / (2 * var)


@case(0.1, 1.2, 4.0, D, argnums=(0, 1, 2), hess=True)
def student_t_logpdf(mu, scale, nu, x):
    z = (x - mu) / scale
    return np.sum(gammaln((nu + 1) / 2) - gammaln(nu / 2) - 0.5 * np.log(nu * np.pi) - np.log(scale)
                  - (nu + 1) / 2 * np.log1p(z ** 2 / nu))


@case(2.5, C, argnums=0, hess=True)
def poisson_logpmf(lam, k):
    return np.sum(k * np.log(lam) - lam - gammaln(k + 1))


@case(2.5, C, argnums=0)
def poisson_xlogy(lam, k):
    return np.sum(xlogy(k, lam) - lam - gammaln(k + 1))


@case(2.0, 3.0, _r.uniform(0.1, 0.9, 5), argnums=(0, 1), hess=True)
def beta_logpdf(a, b, x):
    return np.sum((a - 1) * np.log(x) + (b - 1) * np.log1p(-x) - betaln(a, b))


@case(2.0, 1.5, _r.gamma(2.0, 1.0, 6), argnums=(0, 1), hess=True)
def gamma_logpdf(shape, rate, x):
    return np.sum(shape * np.log(rate) - gammaln(shape) + (shape - 1) * np.log(x) - rate * x)


@case(2.0, argnums=0, hess=True)
def digamma_value(a):
    return digamma(a) * a + gammaln(a)


@case(np.array([0.3, 1.1]), hess=True)
def normal_cdf_erf(x):
    return np.sum(0.5 * (1 + erf(x / np.sqrt(2.0))))


@case(np.array([0.3, 1.1, 2.5]), hess=True)
def gaussian_tail_erfc(x):
    return np.sum(np.log(0.5 * erfc(x / math.sqrt(2))))


@case(np.array([0.5, -1.0, 2.0]), np.array([0.3, 0.4, 0.3]), D, hess=True, argnums=(0, 1))
def gmm_loglik(mus, weights, x):
    lp = -0.5 * (x[:, None] - mus[None, :]) ** 2 - 0.5 * np.log(2 * np.pi) + np.log(weights)[None, :]
    return np.sum(logsumexp(lp, axis=1))


@case(np.array([0.5, -1.0, 2.0]), np.array([0.1, -0.2, 0.3]), D, argnums=(0, 1))
def gmm_softmax_weights(mus, logits, x):
    logw = log_softmax(logits)
    ll = 0.0
    for i in range(len(x)):
        ll += logsumexp(logw - 0.5 * (x[i] - mus) ** 2) - 0.5 * np.log(2 * np.pi)
    return ll


@case(D, hess=True)
def sample_variance(x):
    return np.var(x, ddof=1)


@case(D, hess=True)
def sample_std(x):
    return np.std(x)


@case(D, hess=True)
def skewness(x):
    m = x.mean()
    s = x.std()
    return np.mean(((x - m) / s) ** 3)


@case(D, D[::-1] * 0.5 + 1.0, hess=True)
def pearson_correlation(x, y):
    xm, ym = x - x.mean(), y - y.mean()
    return np.sum(xm * ym) / np.sqrt(np.sum(xm ** 2) * np.sum(ym ** 2))


@case(_r.standard_normal((6, 3)), hess=True)
def covariance_trace(X):
    Xc = X - X.mean(axis=0)
    C = Xc.T @ Xc / (X.shape[0] - 1)
    return np.trace(C @ C)


@case(D, argnums=0)
def median_abs_dev(x):
    return np.median(np.abs(x - np.median(x)))


@case(D)
def percentile_range(x):
    return np.percentile(x, 75) - np.percentile(x, 25)


@case(D, np.linspace(0.5, 2.0, 8), hess=True)
def weighted_average(x, w):
    return np.average(x ** 2, weights=w)


@case(np.array([0.2, 0.5, 0.3]), np.array([3.0, 4.0, 1.0]), argnums=0, hess=True)
def multinomial_loglik(p, counts):
    return gammaln(counts.sum() + 1) - np.sum(gammaln(counts + 1)) + np.sum(counts * np.log(p))


@case(np.array([1.5, 2.0, 0.7]), np.array([0.2, 0.5, 0.3]), hess=True)
def dirichlet_logpdf(alpha, x):
    return gammaln(np.sum(alpha)) - np.sum(gammaln(alpha)) + np.sum((alpha - 1) * np.log(x))


@case(np.array([0.3, -0.2, 1.0]), np.array([2, 0, 1]), argnums=0, hess=True)
def categorical_loglik(logits, ks):
    logp = log_softmax(logits)
    return np.sum(logp[ks])


@case(np.array([0.3, -0.2, 1.0]), hess=True)
def entropy_softmax(logits):
    p = softmax(logits)
    return -np.sum(p * np.log(p))


@case(_r.standard_normal(4) * 0.3, _r.standard_normal((10, 4)), (_r.uniform(size=10) > 0.5).astype(float),
      argnums=0, hess=True)
def bayes_logistic_logpost(w, X, y):
    z = X @ w
    return np.sum(y * np.log(expit(z)) + (1 - y) * np.log(expit(-z))) - 0.5 * np.dot(w, w)


@case(0.3, 1.5, D, argnums=(0, 1), hess=True)
def laplace_loglik(mu, b, x):
    return -len(x) * np.log(2 * b) - np.sum(np.abs(x - mu)) / b


@case(0.4, -0.1, D, argnums=(0, 1), hess=True)
def cauchy_loglik(x0, log_gamma, x):
    g = np.exp(log_gamma)
    return -np.sum(np.log(np.pi * g * (1 + ((x - x0) / g) ** 2)))


@case(0.7, 0.4, _r.lognormal(0.5, 0.3, 6), argnums=(0, 1), hess=True)
def lognormal_loglik(mu, sigma, x):
    return np.sum(-np.log(x * sigma * np.sqrt(2 * np.pi)) - (np.log(x) - mu) ** 2 / (2 * sigma ** 2))


@case(np.array([[2.0, 0.3], [0.3, 1.0]]), np.array([0.1, -0.2]), _r.standard_normal((5, 2)), argnums=(0, 1))
def mvn_loglik(S, mu, X):
    L = np.linalg.cholesky(S)
    d = X - mu
    z = np.linalg.solve(L, d.T)
    return -0.5 * np.sum(z ** 2) - X.shape[0] * np.sum(np.log(np.diag(L))) - X.shape[0] * np.log(2 * np.pi)


# written as in autograd's examples (autograd.scipy.stats) with SciPy's own names

@case(0.2, 0.1, D, argnums=(0, 1), hess=True)
def scipy_stats_norm_loglik(mu, log_sigma, x):
    from scipy.stats import norm
    return np.sum(norm.logpdf(x, mu, np.exp(log_sigma)))


@case(0.1, 4.0, D, argnums=(0, 1), hess=True)
def scipy_stats_t_loglik(mu, df, x):
    import scipy.stats
    return np.sum(scipy.stats.t.logpdf(x, df, loc=mu, scale=1.5))


@case(np.array([0.1, -0.2]), np.array([[2.0, 0.3], [0.3, 1.0]]), _r.standard_normal((5, 2)), argnums=0, hess=True)
def scipy_stats_mvn(mu, S, X):
    from scipy.stats import multivariate_normal
    return np.sum(multivariate_normal.logpdf(X, mu, S))


@case(2.5, C, argnums=0, hess=True)
def scipy_stats_poisson(lam, k):
    from scipy import stats
    return np.sum(stats.poisson.logpmf(k, lam))


@case(0.3, argnums=0, hess=True)
def scipy_stats_probit_loglik(w):
    from scipy.stats import norm
    x = np.array([0.5, -1.0, 2.0])
    y = np.array([1.0, 0.0, 1.0])
    z = w * x
    return np.sum(y * norm.logcdf(z) + (1 - y) * norm.logsf(z))
