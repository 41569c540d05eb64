"""A tiny recursive neural network over a binary tree held as index arrays.

`left[i]`, `right[i]` are child node ids (-1 for a leaf) and `feat[i]` the
node features. A leaf's state is tanh(feat[i]); an internal node combines its
children with tanh(W @ [hl; hr] + b + feat[i]). The recursion is driven by
node ids read from the int arrays (traced), so it stays IR recursion. The
weights W, b and the features are differentiated.
"""
import numpy as np


def node(i, left, right, feat, W, b):
    if left[i] < 0:
        return np.tanh(feat[i])
    hl = node(left[i], left, right, feat, W, b)
    hr = node(right[i], left, right, feat, W, b)
    return np.tanh(W @ np.concatenate([hl, hr]) + b + feat[i])


def f(feat, W, b, u, left, right):
    h = node(0, left, right, feat, W, b)
    return np.sum(u * h)


def args():
    rng = np.random.default_rng(92)
    #        0
    #      /   \
    #     1     2
    #    / \   / \
    #   3   4 5   6
    #      / \
    #     7   8
    left = np.array([1, 3, 5, -1, 7, -1, -1, -1, -1], dtype=np.int64)
    right = np.array([2, 4, 6, -1, 8, -1, -1, -1, -1], dtype=np.int64)
    h = 3
    feat = rng.normal(size=(9, h)) * 0.5
    W = rng.normal(size=(h, 2 * h)) * 0.4
    b = rng.normal(size=h) * 0.1
    u = rng.normal(size=h)
    return (feat, W, b, u, left, right)


def _bottom_up(a):
    feat, W, b, u, left, right = a
    hs = [None] * len(left)
    for i in reversed(range(len(left))):  # children have larger ids than parents
        if left[i] < 0:
            hs[i] = np.tanh(feat[i])
        else:
            hs[i] = np.tanh(W @ np.concatenate([hs[left[i]], hs[right[i]]]) + b + feat[i])
    return np.sum(u * hs[0])


ARGNUMS = (0, 1, 2)
ORDER = 2
TAGS = {"recursion", "tree", "int_index", "matmul", "concatenate"}
EXPECTED = _bottom_up
