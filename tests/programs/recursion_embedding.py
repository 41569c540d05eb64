"""Tree recursion reading one row of a large float table per node
(embedding lookup, `table[ids[i]]`); the table and the combining weights are
differentiated. Only a few of the table's rows are used, so the table's
gradient is sparse. Children come from `left`/`right` (-1 for a leaf).
"""
import numpy as np


def node(i, ids, left, right, table, W):
    e = table[ids[i]]
    if left[i] < 0:
        return np.tanh(e)
    hl = node(left[i], ids, left, right, table, W)
    hr = node(right[i], ids, left, right, table, W)
    return np.tanh(W @ (hl * hr) + hl + e)


def f(table, W, ids, left, right, root):
    h = node(root, ids, left, right, table, W)
    return np.sum(h * h) + np.sum(h)


def args():
    rng = np.random.default_rng(95)
    #          4
    #        /   \
    #       2     6
    #      / \   / \
    #     0   3 5   1
    left = np.array([-1, -1, 0, -1, 2, -1, 5], dtype=np.int64)
    right = np.array([-1, -1, 3, -1, 6, -1, 1], dtype=np.int64)
    ids = np.array([17, 3, 40, 17, 8, 52, 29], dtype=np.int64)  # row 17 used twice
    table = rng.normal(size=(60, 4)) * 0.6
    W = rng.normal(size=(4, 4)) * 0.5
    return (table, W, ids, left, right, np.int64(4))


def _expected(a):
    table, W, ids, left, right, root = a
    order = []
    todo = [int(root)]
    while todo:  # a preorder; evaluated in reverse, children come before parents
        i = todo.pop()
        order.append(i)
        if left[i] >= 0:
            todo += [int(left[i]), int(right[i])]
    h = {}
    for i in reversed(order):
        e = table[ids[i]]
        h[i] = np.tanh(e) if left[i] < 0 else np.tanh(W @ (h[left[i]] * h[right[i]]) + h[left[i]] + e)
    r = h[int(root)]
    return np.sum(r * r) + np.sum(r)


ARGNUMS = (0, 1)
ORDER = 2
TAGS = {"recursion", "tree", "gather", "int_index", "embedding"}
EXPECTED = _expected
