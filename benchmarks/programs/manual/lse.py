"""lse by hand in Numba: max, then sum of exp; gradient = softmax."""
import math

import numba
import numpy as np


@numba.njit(cache=False, fastmath=False)
def primal(x):
    m = x[0]
    for i in range(1, x.shape[0]):
        if x[i] > m:
            m = x[i]
    s = 0.0
    for i in range(x.shape[0]):
        s += math.exp(x[i] - m)
    return m + math.log(s)


@numba.njit(cache=False, fastmath=False)
def gradient(x):
    m = x[0]
    for i in range(1, x.shape[0]):
        if x[i] > m:
            m = x[i]
    g = np.empty_like(x)
    s = 0.0
    for i in range(x.shape[0]):
        e = math.exp(x[i] - m)
        g[i] = e
        s += e
    r = 1.0 / s
    for i in range(x.shape[0]):
        g[i] *= r
    return g
