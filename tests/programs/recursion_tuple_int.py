"""A recursive function with an if/elif chain and early returns that returns a
tuple (float, int): the float is differentiable, the int counts the levels of
each kind and is not. The case chosen at each level depends on n % 3, on a
traced int.
"""
import numpy as np


def walk(x, n):
    if n <= 0:
        return x, 0
    if n % 3 == 0:
        y, k = walk(x * 0.9, n - 1)
        return np.sin(y) + 0.2 * x, k + 1
    elif n % 3 == 1:
        y, k = walk(x + 0.1, n - 2)
        return y * np.cos(0.5 * x), k + 10
    y, k = walk(np.tanh(x), n - 1)
    return y + 0.1 * y * y, k + 100


def f(x, n):
    y, k = walk(x, n)
    return y * (1.0 + 0.01 * (k % 7))


def _expected(a):
    x0, n = a
    n = int(n)
    frames = []
    x = x0
    while n > 0:
        frames.append((n % 3, x))
        if n % 3 == 0:
            x, n = x * 0.9, n - 1
        elif n % 3 == 1:
            x, n = x + 0.1, n - 2
        else:
            x, n = np.tanh(x), n - 1
    y, k = x, 0
    for case, xc in reversed(frames):
        if case == 0:
            y, k = np.sin(y) + 0.2 * xc, k + 1
        elif case == 1:
            y, k = y * np.cos(0.5 * xc), k + 10
        else:
            y, k = y + 0.1 * y * y, k + 100
    return y * (1.0 + 0.01 * (k % 7))


def args():
    return (0.6, np.int64(13))


ARGNUMS = (0,)
ORDER = 2
TAGS = {"recursion", "elif", "early_return", "tuple", "int_arg"}
EXPECTED = _expected
