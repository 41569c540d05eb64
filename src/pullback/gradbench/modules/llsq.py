"""llsq: 0.5 * sum_i (s_i - sum_j x_j t_i^j)^2, t_i = -1 + 2i/(n-1), s_i = sign(t_i).

`n` is a size, so it is closed over as a Python int (pullback traces int
arguments, and `np.arange` needs a static length); one staged function per n.
"""
import threading

import numpy as np

import pullback as pb

from ..schema import Array, Int, Limits, Schema
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


_CACHE = {}      # n -> (primal, gradient); the most recent _CACHE_SIZE sizes
_CACHE_SIZE = 16
_LOCK = threading.Lock()


def _compiled(n):
    with _LOCK:
        if n in _CACHE:
            _CACHE[n] = _CACHE.pop(n)  # most recently used last
        else:
            f = _for_n(n)
            _CACHE[n] = (pb.jit(f, backend=backend()), pb.grad(f, backend=backend()))
            while len(_CACHE) > _CACHE_SIZE:
                del _CACHE[next(iter(_CACHE))]
        return _CACHE[n]


def primal(x, n):
    return _compiled(n)[0](x)


def gradient(x, n):
    return _compiled(n)[1](x)


# the loop over the m coefficients saves two length-n arrays per step for the gradient
SCHEMA = Schema("llsq", [Int("n", min=2, why="t_i = -1 + 2i/(n-1) needs n >= 2"), Array("x", "m")],
                sizes={"m": (1, 1 << 62)}, elements=("n*(m+1)", lambda z: z["n"] * (z["m"] + 1)))


def prepare(inp, limits=None):
    """The arguments of FUNCTIONS for a GradBench input; raises InputError (see SCHEMA)."""
    v = SCHEMA.validate(inp, limits or Limits())
    return (v["x"], v["n"])


FUNCTIONS = {"primal": primal, "gradient": gradient}
