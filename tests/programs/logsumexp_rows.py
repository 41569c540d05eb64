"""Row-wise logsumexp with keepdims, then weighted sum (array-valued helper)."""
import numpy as np


def lse(z, axis):
    m = np.max(z, axis=axis, keepdims=True)
    return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(z - m), axis=axis))


def f(Z, w):
    return np.dot(lse(Z, 1), w) + np.sum(lse(Z, 0))


def args():
    rng = np.random.default_rng(5)
    return (rng.normal(size=(4, 3)) * 2.0, rng.normal(size=4))


ARGNUMS = (0, 1)
ORDER = 2
TAGS = {"max", "keepdims", "reduction", "axis", "helper"}
