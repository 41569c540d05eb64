"""Exponentiation by squaring; recursion on an int with even/odd branches."""
import numpy as np


def fpow(x, n):
    if n == 0:
        return np.ones_like(x)
    elif n % 2 == 0:
        h = fpow(x, n // 2)
        return h * h
    else:
        return x * fpow(x, n - 1)


def f(x, n):
    return np.sum(fpow(x, n) * np.cos(x))


def args():
    return (np.array([0.95, 1.05, 0.7, -1.02]), 11)


ARGNUMS = (0,)
ORDER = 2
TAGS = {"recursion", "int_arg", "elif", "ones_like"}
