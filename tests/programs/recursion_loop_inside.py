"""A loop inside a recursive function: each level runs a small `for` loop and
a data-dependent `while` loop on its float state before recursing.
"""
import numpy as np


def level(v, p, d):
    if d == 0:
        return v
    for k in range(3):
        v = v + 0.1 * np.sin(p[k] * v)
    t = 0.0
    while t < 1.0:  # a run-time trip count (three steps), independent of v
        v = v * 0.95 + 0.05 * np.cos(v)
        t = t + 0.4
    return level(v, p, d - 1) * 1.02


def f(v, p, d):
    r = level(v, p, d)
    return np.sum(r * r)


def args():
    return (np.array([0.3, -0.8, 1.2]), np.array([1.3, -0.6, 0.9]), np.int64(6))


def _loop(a):
    v, p, d = a
    v = v.copy()
    scale = 1.0
    for _ in range(int(d)):
        for k in range(3):
            v = v + 0.1 * np.sin(p[k] * v)
        for _ in range(3):
            v = v * 0.95 + 0.05 * np.cos(v)
        scale *= 1.02
    r = v * scale
    return np.sum(r * r)


ARGNUMS = (0, 1)
ORDER = 2
TAGS = {"recursion", "loop", "while", "int_arg"}
EXPECTED = _loop
