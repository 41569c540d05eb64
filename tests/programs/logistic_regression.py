"""L2-regularised logistic regression loss written with a stable softplus."""
import numpy as np


def softplus(z):
    # log(1 + exp(z)) computed stably
    return np.maximum(z, 0.0) + np.log1p(np.exp(-np.abs(z)))


def f(w, b, X, y):
    z = X @ w + b
    # y in {0,1}: loss = softplus(z) - y*z
    loss = np.mean(softplus(z) - y * z)
    return loss + 0.05 * np.dot(w, w)


def args():
    rng = np.random.default_rng(21)
    X = rng.normal(size=(8, 3))
    w = np.array([0.4, -0.7, 0.2])
    y = (rng.uniform(size=8) > 0.5).astype(np.float64)
    return (w, 0.1, X, y)


ARGNUMS = (0, 1)
ORDER = 2
TAGS = {"softplus", "logistic", "abs", "maximum", "matmul"}
