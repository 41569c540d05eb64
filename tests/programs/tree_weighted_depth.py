"""Recursive tree reduction with a depth-dependent weight; leaves are arrays."""
import numpy as np


def walk(t, depth):
    if isinstance(t, tuple):
        left = walk(t[0], depth + 1)
        right = walk(t[1], depth + 1)
        return np.tanh(left) * right + left
    return np.sum(t ** 2) / (depth + 1.0)


def f(tree):
    return walk(tree, 0)


def args():
    rng = np.random.default_rng(9)
    leaf = lambda: rng.normal(size=3) * 0.5
    return (((leaf(), leaf()), (leaf(), (leaf(), leaf()))),)


ARGNUMS = (0,)
ORDER = 2
TAGS = {"recursion", "pytree", "tuple", "isinstance"}
