"""Loops with enumerate and zip over arrays."""
import numpy as np


def f(x, y):
    total = 0.0
    for i, (a, b) in enumerate(zip(x, y)):
        total = total + (i + 1) * a * np.exp(-b * b)
    for k, a in enumerate(x):
        if k % 2 == 0:
            total = total + a ** 3
    return total


def args():
    rng = np.random.default_rng(31)
    return (rng.normal(size=5), rng.normal(size=5))


ARGNUMS = (0, 1)
ORDER = 2
TAGS = {"enumerate", "zip", "for_over_array", "branch_on_int"}
