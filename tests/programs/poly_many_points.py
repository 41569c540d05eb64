"""Polynomial evaluated at many points at once with np.power (Vandermonde)."""
import numpy as np


def f(c, xs):
    degrees = np.arange(c.shape[0])
    V = np.power(xs[:, None], degrees[None, :])   # (npts, deg+1)
    y = V @ c
    target = np.sin(xs)
    return np.mean((y - target) ** 2)


def args():
    rng = np.random.default_rng(2)
    return (rng.normal(size=4), np.linspace(0.1, 1.5, 8))


ARGNUMS = (0, 1)
ORDER = 2
TAGS = {"power", "broadcast", "matmul", "arange"}
