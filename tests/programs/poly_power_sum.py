"""Polynomial as an explicit power sum: sum_k c_k x**k, evaluated at a vector."""
import numpy as np


def f(c, x):
    total = np.zeros_like(x)
    for k in range(len(c)):
        total = total + c[k] * x ** k
    return np.sum(total * total)


def args():
    rng = np.random.default_rng(1)
    return (rng.normal(size=5), rng.uniform(-1.0, 1.0, size=4))


ARGNUMS = (0, 1)
ORDER = 2
TAGS = {"loop", "power"}
