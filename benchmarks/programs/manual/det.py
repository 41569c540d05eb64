"""det by hand in Numba: the same Laplace expansion along the first row as the program (2 x 2
base case), over the rows r..l-1 and the columns not yet used (a bit mask), recursively.

Gradient in one recursive pass: det(M) = sum_j sign_j M[r, c_j] det(minor_j), so with `scale` the
adjoint of det(M), d/dM[r, c_j] += scale * sign_j * det(minor_j) and the minor's adjoint is
scale * sign_j * M[r, c_j]; each call returns its determinant, so the primal comes along.
"""
import numba
import numpy as np


@numba.njit(cache=False, fastmath=False)
def _det(A, r, used):
    n = A.shape[0]
    if r == n - 2:
        c0 = -1
        c1 = -1
        for c in range(n):
            if not (used >> c) & 1:
                if c0 < 0:
                    c0 = c
                else:
                    c1 = c
        return A[r, c0] * A[r + 1, c1] - A[r, c1] * A[r + 1, c0]
    total = 0.0
    sign = 1.0
    for c in range(n):
        if not (used >> c) & 1:
            total += sign * A[r, c] * _det(A, r + 1, used | (1 << c))
            sign = -sign
    return total


@numba.njit(cache=False, fastmath=False)
def _det_grad(A, r, used, scale, G):
    n = A.shape[0]
    if r == n - 2:
        c0 = -1
        c1 = -1
        for c in range(n):
            if not (used >> c) & 1:
                if c0 < 0:
                    c0 = c
                else:
                    c1 = c
        G[r, c0] += scale * A[r + 1, c1]
        G[r + 1, c1] += scale * A[r, c0]
        G[r, c1] -= scale * A[r + 1, c0]
        G[r + 1, c0] -= scale * A[r, c1]
        return A[r, c0] * A[r + 1, c1] - A[r, c1] * A[r + 1, c0]
    total = 0.0
    sign = 1.0
    for c in range(n):
        if not (used >> c) & 1:
            a = sign * A[r, c]
            m = _det_grad(A, r + 1, used | (1 << c), scale * a, G)
            G[r, c] += scale * sign * m
            total += a * m
            sign = -sign
    return total


@numba.njit(cache=False, fastmath=False)
def primal(A):
    n = A.shape[0]
    if n == 1:
        return A[0, 0]
    return _det(A, 0, 0)


@numba.njit(cache=False, fastmath=False)
def gradient(A):
    n = A.shape[0]
    G = np.zeros((n, n))
    if n == 1:
        G[0, 0] = 1.0
        return G
    _det_grad(A, 0, 0, 1.0, G)
    return G
