"""Recursion inside a loop: a non-recursive f calls a recursive helper once per
iteration, with a traced depth read from an int array, and accumulates.
"""
import numpy as np


def damp(x, w, d):
    if d == 0:
        return x
    return damp(np.tanh(w * x) + 0.1 * x, w, d - 1)


def f(x, w, depths):
    acc = 0.0
    for i in range(depths.shape[0]):
        acc = acc + damp(x[i], w, depths[i]) * (i + 1.0)
    return acc


def args():
    return (np.array([0.4, -0.7, 1.1, 0.2, -0.3]), 0.8, np.array([3, 0, 5, 2, 7], dtype=np.int64))


def _loop(a):
    x, w, depths = a
    acc = 0.0
    for i in range(len(depths)):
        y = x[i]
        for _ in range(int(depths[i])):
            y = np.tanh(w * y) + 0.1 * y
        acc += y * (i + 1.0)
    return acc


ARGNUMS = (0, 1)
ORDER = 2
TAGS = {"recursion", "loop", "int_index", "tail_recursion"}
EXPECTED = _loop
