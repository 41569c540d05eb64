"""Whole-array augmented assignment (+=, *=, -=, /=) on a copy, plus
row-slice assignment `M[i, :] = ...`."""
import numpy as np


def f(x, M):
    y = x.copy()
    y += 1.0
    y *= x
    y -= 0.5 * np.sin(x)
    y /= 2.0
    N = M.copy()
    for i in range(N.shape[0]):
        N[i, :] = N[i, :] * y[i] + x[: N.shape[1]]
    N[:, 0] += y[: N.shape[0]]
    return np.sum(N ** 2) + np.sum(y)


def args():
    rng = np.random.default_rng(32)
    return (rng.normal(size=4), rng.normal(size=(3, 3)))


ARGNUMS = (0, 1)
ORDER = 2
TAGS = {"inplace", "augassign", "slice_assign", "copy"}
