"""Determinant by Gaussian elimination WITH partial pivoting: argmax picks
the pivot row (integer, not differentiated) and rows are swapped in place."""
import numpy as np


def f(A):
    U = A.copy()
    n = U.shape[0]
    sign = 1.0
    for i in range(n):
        p = i + int(np.argmax(np.abs(U[i:, i])))
        if p != i:
            U[[i, p]] = U[[p, i]]
            sign = -sign
        for j in range(i + 1, n):
            factor = U[j, i] / U[i, i]
            U[j, i:] = U[j, i:] - factor * U[i, i:]
    return sign * np.prod(np.diag(U))


def args():
    rng = np.random.default_rng(33)
    return (rng.normal(size=(4, 4)),)


ARGNUMS = (0,)
ORDER = 2
TAGS = {"inplace", "argmax", "row_swap", "fancy_setitem", "linalg", "diag", "prod"}
EXPECTED = lambda a: np.linalg.det(a[0])
