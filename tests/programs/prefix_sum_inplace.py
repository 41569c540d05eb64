"""Prefix sums written element by element into a preallocated array."""
import numpy as np


def f(x):
    n = x.shape[0]
    y = np.zeros(n)
    y[0] = x[0]
    for i in range(1, n):
        y[i] = y[i - 1] + x[i]
    return np.sum(np.sin(y))


def args():
    return (np.array([0.3, -0.1, 0.7, 0.2, -0.4, 0.9]),)


ARGNUMS = (0,)
ORDER = 2
TAGS = {"inplace", "setitem", "loop", "zeros"}
EXPECTED = lambda a: np.sum(np.sin(np.cumsum(a[0])))
