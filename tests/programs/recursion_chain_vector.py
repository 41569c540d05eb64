"""Chain recursion with a traced depth carrying an array state.

Each level applies s <- tanh(A @ s + c) * 0.9 + 0.1 * s; the weights A and c
are passed to every call and differentiated. The output is a scalar.
"""
import numpy as np


def chain(s, A, c, d):
    if d == 0:
        return s
    h = chain(s, A, c, d - 1)
    return np.tanh(A @ h + c) * 0.9 + 0.1 * h


def f(s, A, c, d):
    h = chain(s, A, c, d)
    return np.sum(h * h) + np.sum(np.sin(h))


def args():
    rng = np.random.default_rng(91)
    return (rng.normal(size=4), rng.normal(size=(4, 4)) * 0.5, rng.normal(size=4) * 0.3, np.int64(12))


def _loop(a):
    s, A, c, d = a
    for _ in range(int(d)):
        s = np.tanh(A @ s + c) * 0.9 + 0.1 * s
    return np.sum(s * s) + np.sum(np.sin(s))


ARGNUMS = (0, 1, 2)
ORDER = 2
TAGS = {"recursion", "int_arg", "matmul"}
EXPECTED = _loop
