"""'Valid' 1-D convolution written with nested loops, then a tanh layer."""
import numpy as np


def conv1d(x, k):
    n = x.shape[0] - k.shape[0] + 1
    out = np.zeros(n)
    for i in range(n):
        acc = 0.0
        for j in range(k.shape[0]):
            acc = acc + x[i + j] * k[j]
        out[i] = acc
    return out


def f(x, k, bias):
    h = np.tanh(conv1d(x, k) + bias)
    return np.sum(h * np.arange(h.shape[0]))


def args():
    rng = np.random.default_rng(29)
    return (rng.normal(size=8), rng.normal(size=3) * 0.5, 0.1)


ARGNUMS = (0, 1, 2)
ORDER = 2
TAGS = {"nested_loops", "setitem", "helper", "arange"}
EXPECTED = lambda a: np.sum(np.tanh(np.convolve(a[0], a[1][::-1], mode="valid") + a[2]) * np.arange(6))
