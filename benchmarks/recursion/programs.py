"""The recursive programs of benchmarks/recursion/run.py and their inputs.

- `chain(x, d)`: y_0 = x, y_k = sin(y_{k-1}) * 1.01, by recursion on a traced
  depth d (one IR call level per step). `chain_grad_ref` is its derivative by
  a NumPy loop (the product of 1.01 cos(y_k)).
- `tree(x, w, left, right, root)`: a recursion over a binary tree held as
  child-index arrays (-1 at a leaf) with traced node ids; a leaf i gives
  sin(w x[i]), an internal node tanh(a b + w x[i]) of its children's values a, b.
  `balanced_tree(n)` builds the arrays of a balanced tree with n leaves
  (2n - 1 nodes, preorder ids, root 0), `tree_ref` evaluates it by a loop.

Every function here is plain NumPy: pullback stages it, NumPy runs it too.
"""
import numpy as np


def chain(x, d):
    if d == 0:
        return x
    return np.sin(chain(x, d - 1)) * 1.01


def chain_grad_ref(x, d):
    y, g = x, 1.0
    for _ in range(int(d)):
        g *= 1.01 * np.cos(y)
        y = np.sin(y) * 1.01
    return g


def tnode(i, left, right, x, w):
    if left[i] < 0:
        return np.sin(w * x[i])
    a = tnode(left[i], left, right, x, w)
    b = tnode(right[i], left, right, x, w)
    return np.tanh(a * b + w * x[i])


def tree(x, w, left, right, root):
    return tnode(root, left, right, x, w)


def balanced_tree(n):
    """(left, right, root) of a balanced binary tree with n >= 1 leaves, 2n - 1 nodes."""
    left = np.full(2 * n - 1, -1, np.int64)
    right = np.full(2 * n - 1, -1, np.int64)
    count = 0
    todo = [(None, None, n)]             # (parent, side, leaves below): iterative, no Python recursion limit
    while todo:
        parent, side, m = todo.pop()
        i = count
        count += 1
        if parent is not None:
            (left if side == 0 else right)[parent] = i
        if m > 1:
            todo.append((i, 1, m - m // 2))
            todo.append((i, 0, m // 2))
    return left, right, np.int64(0)


def tree_ref(x, w, left, right, root):
    """`tree` evaluated bottom-up by a loop (children have larger ids than their parent)."""
    v = np.zeros(len(left))
    for i in reversed(range(len(left))):
        v[i] = np.sin(w * x[i]) if left[i] < 0 else np.tanh(v[left[i]] * v[right[i]] + w * x[i])
    return v[int(root)]
