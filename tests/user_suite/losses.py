"""Loss functions as written in autograd/JAX tutorials and scientific code."""
import numpy as np
from scipy.special import expit, logsumexp

from ._cases import case

_r = np.random.default_rng(1)
X = _r.standard_normal((6, 3))
y01 = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 0.0])
ypm = 2 * y01 - 1
W0 = _r.standard_normal(3) * 0.5
Y3 = np.eye(3)[[0, 2, 1, 1, 0, 2]]
W3 = _r.standard_normal((3, 3)) * 0.5
t6 = _r.standard_normal(6)


def sigmoid(x):
    return 0.5 * (np.tanh(x / 2.0) + 1)


@case(W0, X, y01, argnums=0, hess=True)
def logistic_autograd_readme(weights, inputs, targets):
    # autograd's README example
    preds = sigmoid(np.dot(inputs, weights))
    label_probabilities = preds * targets + (1 - preds) * (1 - targets)
    return -np.sum(np.log(label_probabilities))


@case(W0, X, y01, argnums=0, hess=True)
def logistic_bce_expit(w, X, y):
    p = expit(X @ w)
    return -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))


@case(W0, X, y01, argnums=0, hess=True)
def logistic_stable_logaddexp(w, X, y):
    z = X @ w
    return np.sum(np.logaddexp(0.0, z) - y * z)


@case(W0, 0.3, X, y01, argnums=(0, 1))
def logistic_with_bias(w, b, X, y):
    z = X.dot(w) + b
    return np.mean(np.log1p(np.exp(-ypm_of(y) * z)))


def ypm_of(y):
    return 2.0 * y - 1.0


@case(W3, X, Y3, argnums=0, hess=True)
def softmax_xent(W, X, Y):
    logits = X @ W
    logits = logits - np.max(logits, axis=1, keepdims=True)
    logp = logits - np.log(np.sum(np.exp(logits), axis=1, keepdims=True))
    return -np.sum(Y * logp) / X.shape[0]


@case(W3, X, Y3, argnums=0)
def softmax_xent_logsumexp(W, X, Y):
    logits = np.dot(X, W)
    return -np.mean(np.sum(Y * (logits - logsumexp(logits, axis=1, keepdims=True)), axis=1))


@case(W3, X, np.array([0, 2, 1, 1, 0, 2]), argnums=0)
def softmax_xent_int_labels(W, X, labels):
    logits = X @ W
    lse = logsumexp(logits, axis=1)
    return np.mean(lse - logits[np.arange(X.shape[0]), labels])


@case(W0, X, ypm, argnums=0)
def hinge_loss(w, X, y):
    margins = 1.0 - y * (X @ w)
    return np.mean(np.maximum(0.0, margins)) + 0.01 * np.sum(w ** 2)


@case(W0, X, ypm, argnums=0)
def squared_hinge(w, X, y):
    return np.sum(np.maximum(0, 1 - y * np.dot(X, w)) ** 2)


@case(_r.standard_normal(6) * 2, t6, hess=True)
def huber(pred, target):
    delta = 1.0
    r = np.abs(pred - target)
    quad = 0.5 * r ** 2
    lin = delta * (r - 0.5 * delta)
    return np.sum(np.where(r <= delta, quad, lin))


@case(_r.standard_normal(6), t6, hess=True)
def pseudo_huber(pred, target):
    d = 0.7
    return np.sum(d ** 2 * (np.sqrt(1 + ((pred - target) / d) ** 2) - 1))


@case(_r.standard_normal(6), t6, hess=True)
def mse(pred, target):
    return np.mean((pred - target) ** 2)


@case(_r.standard_normal(6), t6)
def mae(pred, target):
    return np.mean(np.abs(pred - target))


@case(_r.standard_normal(6), t6, hess=True)
def log_cosh_loss(pred, target):
    return np.sum(np.log(np.cosh(pred - target)))


@case(_r.uniform(0.1, 0.9, 6), y01)
def bce_clipped(p, y):
    eps = 1e-7
    p = np.clip(p, eps, 1 - eps)
    return -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))


@case(_r.standard_normal(6), y01, hess=True)
def bce_with_logits(z, y):
    return np.mean(np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z))))


@case(_r.standard_normal((4, 3)), _r.standard_normal((4, 3)), hess=True)
def cosine_similarity_loss(a, b):
    num = np.sum(a * b, axis=1)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return np.sum(1.0 - num / den)


@case(_r.dirichlet(np.ones(5)), _r.dirichlet(np.ones(5)), hess=True)
def kl_divergence(p, q):
    return np.sum(p * np.log(p / q))


@case(_r.standard_normal(5), _r.standard_normal(5), hess=True)
def kl_from_logits(a, b):
    p = np.exp(a - logsumexp(a))
    return np.sum(p * ((a - logsumexp(a)) - (b - logsumexp(b))))


@case(_r.standard_normal(4), 0.4, _r.standard_normal(4), -0.2, hess=True)
def kl_gaussians(mu1, logs1, mu2, logs2):
    s1, s2 = np.exp(logs1), np.exp(logs2)
    return np.sum(np.log(s2 / s1) + (s1 ** 2 + (mu1 - mu2) ** 2) / (2 * s2 ** 2) - 0.5)


@case(_r.standard_normal(6), t6)
def quantile_loss(pred, target):
    tau = 0.3
    e = target - pred
    return np.mean(np.maximum(tau * e, (tau - 1) * e))


@case(_r.standard_normal(6), y01, argnums=0, hess=True)
def focal_loss(z, y):
    p = 1 / (1 + np.exp(-z))
    pt = np.where(y == 1, p, 1 - p)
    return -np.sum((1 - pt) ** 2 * np.log(pt))


@case(_r.standard_normal((3, 2)), _r.standard_normal((3, 2)), _r.standard_normal((3, 2)))
def triplet_loss(a, p, n):
    dp = np.sum((a - p) ** 2, axis=-1)
    dn = np.sum((a - n) ** 2, axis=-1)
    return np.mean(np.maximum(dp - dn + 1.0, 0.0))


@case(W0, X, t6, 0.1, argnums=0, hess=True)
def ridge_objective(w, X, y, lam):
    r = y - X @ w
    return r @ r + lam * w @ w


@case(W0, X, t6, argnums=0)
def lasso_objective(w, X, y):
    return 0.5 * np.sum((X.dot(w) - y) ** 2) + 0.1 * np.sum(np.abs(w))


@case(W0 + 1.0, X, _r.poisson(2.0, 6).astype(float), argnums=0, hess=True)
def poisson_regression_nll(w, X, y):
    eta = X @ w * 0.3
    return np.sum(np.exp(eta) - y * eta)
