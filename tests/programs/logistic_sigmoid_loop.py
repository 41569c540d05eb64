"""Logistic-regression negative log-likelihood accumulated sample by sample,
with an if/else choosing the numerically stable sigmoid formula."""
import numpy as np


def log_sigmoid(z):
    if z >= 0.0:
        return -np.log1p(np.exp(-z))
    else:
        return z - np.log1p(np.exp(z))


def f(w, X, labels):
    nll = 0.0
    for i in range(X.shape[0]):
        z = np.dot(X[i], w)
        if labels[i] == 1:
            nll = nll - log_sigmoid(z)
        else:
            nll = nll - log_sigmoid(-z)
    return nll / X.shape[0]


def args():
    rng = np.random.default_rng(22)
    X = rng.normal(size=(6, 3))
    w = np.array([0.8, -0.3, 0.5])
    labels = np.array([1, 0, 0, 1, 1, 0])
    return (w, X, labels)


ARGNUMS = (0, 1)
ORDER = 2
TAGS = {"logistic", "branch", "loop", "helper", "int_array"}
