"""Iterating directly over array elements and over matrix rows."""
import numpy as np


def f(x, M):
    s = 0.0
    for xi in x:
        s = s + np.exp(-xi * xi)
    r = 0.0
    for row in M:
        r = r + np.dot(row, row) * s
    return r


def args():
    rng = np.random.default_rng(11)
    return (rng.normal(size=5), rng.normal(size=(3, 4)))


ARGNUMS = (0, 1)
ORDER = 2
TAGS = {"for_over_array", "loop"}
