"""Chain recursion with a traced depth: y_d = sin(y_{d-1}) * 1.01, y_0 = x.

The depth `d` is an np.int64 argument, so the staged program holds a real
recursive IR function (one call level per step), not an unrolled chain.
"""
import numpy as np


def chain(x, d):
    if d == 0:
        return x
    return np.sin(chain(x, d - 1)) * 1.01


def f(x, d):
    return chain(x, d)


def args():
    return (0.3, np.int64(25))


def _loop(a):
    y = a[0]
    for _ in range(int(a[1])):
        y = np.sin(y) * 1.01
    return y


ARGNUMS = (0,)
ORDER = 2
TAGS = {"recursion", "int_arg", "scalar"}
EXPECTED = _loop
