"""IIR filter y[i] = a*y[i-1] + x[i] with in-place writes; returns the array."""
import numpy as np


def f(x, a):
    y = np.zeros_like(x)
    y[0] = x[0]
    for i in range(1, x.shape[0]):
        y[i] = y[i - 1] * a + x[i]
    return y


def args():
    rng = np.random.default_rng(12)
    return (rng.normal(size=6), 0.8)


ARGNUMS = (0, 1)
ORDER = 1
TAGS = {"inplace", "setitem", "loop", "array_output", "zeros_like"}
