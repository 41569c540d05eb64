"""kmeans by hand in Numba: cost = sum_i min_j |C_j - P_i|^2; dir = J / H with the closed forms
J_j = 2 (count_j C_j - sum of the points nearest C_j), H_j = 2 count_j (the Hessian is diagonal),
from one pass that finds each point's nearest centroid (first one on ties, like argmin)."""
import numba
import numpy as np


@numba.njit(cache=False, fastmath=False)
def _nearest(C, P, i):
    k, d = C.shape
    best = np.inf
    arg = 0
    for j in range(k):
        s = 0.0
        for a in range(d):
            t = P[i, a] - C[j, a]
            s += t * t
        if s < best:
            best = s
            arg = j
    return best, arg


@numba.njit(cache=False, fastmath=False)
def primal(C, P):
    total = 0.0
    for i in range(P.shape[0]):
        best, _ = _nearest(C, P, i)
        total += best
    return total


@numba.njit(cache=False, fastmath=False)
def direction(C, P):
    k, d = C.shape
    counts = np.zeros(k)
    sums = np.zeros((k, d))
    for i in range(P.shape[0]):
        _, j = _nearest(C, P, i)
        counts[j] += 1.0
        for a in range(d):
            sums[j, a] += P[i, a]
    out = np.empty((k, d))
    for j in range(k):
        for a in range(d):
            out[j, a] = (2.0 * (counts[j] * C[j, a] - sums[j, a])) / (2.0 * counts[j])
    return out
