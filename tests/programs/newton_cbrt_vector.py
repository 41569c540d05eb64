"""Elementwise cube root by a Newton while-loop, then a smooth reduction."""
import numpy as np


def cbrt(a):
    x = 1.0 + a / 3.0
    fx = x * x * x - a
    it = 0
    while abs(fx) > 1e-12 and it < 100:
        x = x - fx / (3.0 * x * x)
        fx = x * x * x - a
        it = it + 1
    return x


def f(v):
    total = 0.0
    for i in range(v.shape[0]):
        total = total + (i + 1.0) * cbrt(v[i])
    return total


def args():
    return (np.array([0.8, 2.0, 5.5, 9.1]),)


ARGNUMS = (0,)
ORDER = 2
TAGS = {"while", "data_dependent_trip_count", "helper", "loop"}
EXPECTED = lambda a: np.sum(np.arange(1, 5) * np.cbrt(a[0]))
