"""llsq by hand in Numba: r_i = s_i - sum_j x_j t_i^j (Horner), primal 0.5 sum r_i^2,
gradient g_j = -sum_i r_i t_i^j (powers built up along j)."""
import numba
import numpy as np


@numba.njit(cache=False, fastmath=False)
def _t(i, n):
    return -1.0 + 2.0 * i / (n - 1)


@numba.njit(cache=False, fastmath=False)
def _residual(x, i, n):
    t = _t(i, n)
    s = 1.0 if t > 0.0 else (-1.0 if t < 0.0 else 0.0)
    acc = 0.0
    p = 1.0
    for j in range(x.shape[0]):
        acc += x[j] * p
        p *= t
    return s - acc, t


@numba.njit(cache=False, fastmath=False)
def primal(x, n):
    total = 0.0
    for i in range(n):
        r, _ = _residual(x, i, n)
        total += r * r
    return 0.5 * total


@numba.njit(cache=False, fastmath=False)
def gradient(x, n):
    g = np.zeros(x.shape[0])
    for i in range(n):
        r, t = _residual(x, i, n)
        p = 1.0
        for j in range(x.shape[0]):
            g[j] -= r * p
            p *= t
    return g
