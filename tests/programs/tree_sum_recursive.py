"""Recursive sum over a nested-tuple tree of floats."""
import numpy as np


def tsum(t):
    if isinstance(t, tuple):
        return tsum(t[0]) + tsum(t[1])
    else:
        return np.sin(t)


def f(tree):
    return tsum(tree)


def args():
    tree = ((0.3, (1.2, -0.7)), ((0.5, 2.0), 0.9))
    return (tree,)


ARGNUMS = (0,)
ORDER = 2
TAGS = {"recursion", "pytree", "tuple", "isinstance"}
EXPECTED = lambda a: np.sum(np.sin([0.3, 1.2, -0.7, 0.5, 2.0, 0.9]))
