"""Build a Gram-like matrix with `G[i, j] += v` in nested loops."""
import numpy as np


def kernel(a, b, ell):
    d = a - b
    return np.exp(-np.dot(d, d) / (2.0 * ell * ell))


def f(X, ell):
    n = X.shape[0]
    G = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            G[i, j] += kernel(X[i], X[j], ell)
        G[i, i] += 0.1
    return np.sum(G * G) + np.trace(G)


def args():
    rng = np.random.default_rng(13)
    return (rng.normal(size=(4, 2)), 0.9)


ARGNUMS = (0, 1)
ORDER = 2
TAGS = {"inplace", "augassign_index", "nested_loops", "helper", "zeros"}
