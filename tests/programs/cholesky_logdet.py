"""Cholesky factorisation written with loops and in-place writes; returns
log det(A) = 2 * sum(log(diag(L)))."""
import numpy as np


def cholesky(A):
    n = A.shape[0]
    L = np.zeros_like(A)
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            s = s - L[j, k] * L[j, k]
        L[j, j] = np.sqrt(s)
        for i in range(j + 1, n):
            t = A[i, j]
            for k in range(j):
                t = t - L[i, k] * L[j, k]
            L[i, j] = t / L[j, j]
    return L


def f(B):
    A = B @ B.T + 0.5 * np.eye(B.shape[0])
    L = cholesky(A)
    return 2.0 * np.sum(np.log(np.diag(L)))


def args():
    rng = np.random.default_rng(25)
    return (rng.normal(size=(4, 4)),)


ARGNUMS = (0,)
ORDER = 2
TAGS = {"inplace", "setitem", "nested_loops", "linalg", "helper", "diag"}
EXPECTED = lambda a: np.linalg.slogdet(a[0] @ a[0].T + 0.5 * np.eye(4))[1]
