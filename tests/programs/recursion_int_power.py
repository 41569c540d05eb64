"""Recursion on an int argument: x**n by repeated multiplication."""
import numpy as np


def p(x, n):
    if n == 0:
        return 1.0
    else:
        return x * p(x, n - 1)


def f(x, n):
    return np.sum(p(x, n))


def args():
    return (np.array([0.9, 1.1, -0.8]), 5)


ARGNUMS = (0,)
ORDER = 2
TAGS = {"recursion", "int_arg"}
EXPECTED = lambda a: np.sum(a[0] ** a[1])
