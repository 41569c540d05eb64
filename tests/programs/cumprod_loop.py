"""Cumulative product via a loop with in-place writes."""
import numpy as np


def f(x):
    out = np.ones_like(x)
    running = 1.0
    for i in range(x.shape[0]):
        running = running * x[i]
        out[i] = running
    return np.sum(out)


def args():
    return (np.array([1.2, 0.8, -1.1, 0.9, 1.05]),)


ARGNUMS = (0,)
ORDER = 2
TAGS = {"inplace", "setitem", "loop", "ones_like"}
EXPECTED = lambda a: np.sum(np.cumprod(a[0]))
