"""Determinant by Gaussian elimination without pivoting, in-place row updates."""
import numpy as np


def f(A):
    A = A.copy()
    n = A.shape[0]
    det = 1.0
    for i in range(n):
        pivot = A[i, i]
        det = det * pivot
        for j in range(i + 1, n):
            factor = A[j, i] / pivot
            for k in range(i, n):
                A[j, k] -= factor * A[i, k]
    return det


def args():
    rng = np.random.default_rng(7)
    A = rng.normal(size=(4, 4)) + 4.0 * np.eye(4)
    return (A,)


ARGNUMS = (0,)
ORDER = 2
TAGS = {"inplace", "loop", "nested_loops", "linalg"}
EXPECTED = lambda a: np.linalg.det(a[0])
