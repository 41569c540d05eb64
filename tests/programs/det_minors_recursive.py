"""Determinant by Laplace expansion along the first row (recursive helper)."""
import numpy as np


def minor(A, j):
    rest = A[1:, :]
    return np.concatenate([rest[:, :j], rest[:, j + 1:]], axis=1)


def det(A):
    n = A.shape[0]
    if n == 1:
        return A[0, 0]
    if n == 2:
        return A[0, 0] * A[1, 1] - A[0, 1] * A[1, 0]
    total = 0.0
    sign = 1.0
    for j in range(n):
        total = total + sign * A[0, j] * det(minor(A, j))
        sign = -sign
    return total


def f(A):
    return det(A)


def args():
    rng = np.random.default_rng(8)
    return (rng.normal(size=(4, 4)) + 2.0 * np.eye(4),)


ARGNUMS = (0,)
ORDER = 2
TAGS = {"recursion", "concatenate", "slicing", "linalg"}
EXPECTED = lambda a: np.linalg.det(a[0])
