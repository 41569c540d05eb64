"""Integer-array indexing (gather), including repeated indices."""
import numpy as np


def f(x, W, idx, rows):
    g = x[idx]                 # gather with repeats
    sub = W[rows]              # gather rows
    return np.sum(g * g * np.arange(1, idx.shape[0] + 1)) + np.sum(sub @ x[:3])


def args():
    rng = np.random.default_rng(14)
    x = rng.normal(size=5)
    W = rng.normal(size=(4, 3))
    idx = np.array([0, 3, 3, 1, 4, 0])
    rows = np.array([2, 0, 2])
    return (x, W, idx, rows)


ARGNUMS = (0, 1)
ORDER = 2
TAGS = {"gather", "int_array", "arange"}
