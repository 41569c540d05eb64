"""det_lu by hand in Numba: Gaussian elimination without pivoting, as in the program.

Gradient by a hand-written reverse sweep. Step i reads the pivot p_i = U[i, i], the multipliers
f_ji = A[j, i] / p_i (j > i) and row i of U, all final after step i, so the forward sweep keeps
the factors (U in the upper triangle, the multipliers below it) and the prefix products of the
pivots, and needs no undo log. Reverse of step i, with Abar the adjoint of the working matrix:
fbar_j = -sum_{k>i} Abar[j, k] U[i, k] and Abar[i, k] -= sum_{j>i} f_ji Abar[j, k];
Abar[j, i] += fbar_j / p_i, pbar -= sum_j fbar_j f_ji / p_i; d = d p_i gives pbar += dbar d_{i-1},
dbar = dbar p_i; finally Abar[i, i] += pbar.
"""
import numba
import numpy as np


@numba.njit(cache=False, fastmath=False)
def primal(A0):
    n = A0.shape[0]
    A = A0.copy()
    d = 1.0
    for i in range(n):
        p = A[i, i]
        d = d * p
        for j in range(i + 1, n):
            f = A[j, i] / p
            for k in range(i + 1, n):
                A[j, k] -= f * A[i, k]
    return d


@numba.njit(cache=False, fastmath=False)
def gradient(A0):
    n = A0.shape[0]
    A = A0.copy()
    prefix = np.empty(n + 1)      # prefix[i] = product of the first i pivots
    prefix[0] = 1.0
    for i in range(n):
        p = A[i, i]
        prefix[i + 1] = prefix[i] * p
        for j in range(i + 1, n):
            f = A[j, i] / p
            A[j, i] = f           # column i below the pivot is never read again: keep f there
            for k in range(i + 1, n):
                A[j, k] -= f * A[i, k]
    G = np.zeros((n, n))
    dbar = 1.0
    for i in range(n - 1, -1, -1):
        p = A[i, i]
        pbar = 0.0
        for j in range(i + 1, n):
            f = A[j, i]
            fbar = 0.0
            for k in range(i + 1, n):
                fbar -= G[j, k] * A[i, k]
                G[i, k] -= f * G[j, k]
            G[j, i] += fbar / p
            pbar -= fbar * f / p
        pbar += dbar * prefix[i]
        dbar = dbar * p
        G[i, i] += pbar
    return G
