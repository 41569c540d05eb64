"""llsq: 0.5 * sum_i (s_i - sum_j x_j t_i^j)^2, t_i = -1 + 2i/(n-1), s_i = sign(t_i).

`n` is a size, so it is closed over as a Python int (pullback traces int
arguments, and `np.arange` needs a static length); one staged function per n.
"""
import numpy as np

import pullback as pb

from . import backend


def llsq(x, n):
    m = x.shape[0]
    t = -1.0 + 2.0 * np.arange(n) / (n - 1)
    s = np.sign(t)
    acc = np.zeros(n)
    p = np.ones(n)  # t_i ** j, with 0 ** 0 = 1
    for j in range(m):
        acc = acc + x[j] * p
        p = p * t
    r = s - acc
    return 0.5 * np.sum(r * r)


def _for_n(n):
    def llsq_n(x):
        return llsq(x, n)
    return llsq_n


_CACHE = {}


def _compiled(n):
    if n not in _CACHE:
        f = _for_n(n)
        _CACHE[n] = (pb.jit(f, backend=backend()), pb.grad(f, backend=backend()))
    return _CACHE[n]


def primal(x, n):
    return _compiled(n)[0](x)


def gradient(x, n):
    return _compiled(n)[1](x)


def prepare(inp):
    n = int(inp["n"])
    if n < 2:
        raise ValueError("llsq needs n >= 2")
    return (np.asarray(inp["x"], dtype=np.float64), n)


FUNCTIONS = {"primal": primal, "gradient": gradient}
