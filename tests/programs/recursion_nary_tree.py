"""Recursion in a loop inside the recursive function: an n-ary tree held as
first_child / next_sibling int arrays (-1 for none). A node walks its
children with a `while` loop and calls itself on each; the node ids are read
from the arrays, so the recursion is traced IR recursion.
"""
import numpy as np


def node(i, first_child, next_sibling, x, a):
    s = np.sin(x[i])
    c = first_child[i]
    if c < 0:  # a leaf: the base case comes first, it fixes the result type
        return s
    k = 1.0
    while c >= 0:
        s = s + a * np.tanh(node(c, first_child, next_sibling, x, a)) / k
        k = k + 1.0
        c = next_sibling[c]
    return s


def f(x, a, first_child, next_sibling):
    return node(0, first_child, next_sibling, x, a)


def args():
    #            0
    #        /   |   \
    #       1    2    3
    #     / | \       |
    #    4  5  6      7
    #          |
    #          8
    first_child = np.array([1, 4, -1, 7, -1, -1, 8, -1, -1], dtype=np.int64)
    next_sibling = np.array([-1, 2, 3, -1, 5, 6, -1, -1, -1], dtype=np.int64)
    x = np.array([0.3, -0.5, 0.9, 1.4, -1.1, 0.2, 0.7, -0.4, 1.0])
    return (x, 0.7, first_child, next_sibling)


def _expected(args):
    x, a, first_child, next_sibling = args
    val = {}
    for i in reversed(range(len(x))):  # children have larger ids than parents
        kids = []
        c = first_child[i]
        while c >= 0:
            kids.append(c)
            c = next_sibling[c]
        val[i] = np.sin(x[i]) + sum(a * np.tanh(val[c]) / (j + 1.0) for j, c in enumerate(kids))
    return val[0]


ARGNUMS = (0, 1)
ORDER = 2
TAGS = {"recursion", "tree", "while", "int_index"}
EXPECTED = _expected
