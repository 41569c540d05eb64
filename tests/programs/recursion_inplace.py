"""Recursion with an array updated in place: `fill(a, x, i)` writes a[i],
recurses with the same array on i - 1, updates a[i] again from the entries
the recursion wrote, and returns the array. The position i starts from a
traced int, so this is IR recursion, not a recursion unrolled when staged.
"""
import numpy as np


def fill(a, x, i):
    if i == 0:
        a[0] = x[0]
        return a
    a[i] = 0.5 * x[i]  # written before the recursive call...
    a = fill(a, x, i - 1)
    a[i] = a[i] + np.sin(x[i] * a[i - 1]) + 0.5 * a[i - 1]  # ...and updated after it
    return a


def f(x, n):
    a = np.zeros(x.shape[0])
    a = fill(a, x, n - 1)
    return np.sum(a * a) + a[n - 1]


def args():
    return (np.array([0.4, -0.3, 0.8, 0.1, -0.6, 0.5, 0.2, -0.9]), np.int64(7))


def _loop(args):
    x, n = args
    a = np.zeros(x.shape[0])
    a[0] = x[0]
    for i in range(1, int(n)):
        a[i] = 0.5 * x[i] + np.sin(x[i] * a[i - 1]) + 0.5 * a[i - 1]
    return np.sum(a * a) + a[n - 1]


ARGNUMS = (0,)
ORDER = 2
TAGS = {"recursion", "inplace", "int_arg", "int_index"}
EXPECTED = _loop
