"""Mutual recursion on a traced int (even/odd style), float work on the way.

`ev` and `od` call each other with n - 1 until n reaches 0; each level does a
different smooth update of the float state, so which function ends the chain
depends on the parity of n.
"""
import numpy as np


def ev(x, n):
    if n == 0:
        return x
    return np.cos(od(x, n - 1)) + 0.3 * x


def od(x, n):
    if n == 0:
        return 0.5 * x
    return np.sin(ev(x * 1.1, n - 1)) * 1.2


def f(x, n):
    return ev(x, n) + od(x, n + 1) * 0.5


def _ev(x, n):
    # independent iterative evaluation: unwind the call chain into a list of steps
    xs = [x]
    kinds = []
    k = 0
    while n > 0:
        kinds.append(k)
        if k == 1:
            xs.append(xs[-1] * 1.1)
        else:
            xs.append(xs[-1])
        k = 1 - k
        n -= 1
    y = xs[-1] if k == 0 else 0.5 * xs[-1]
    for j in reversed(range(len(kinds))):
        if kinds[j] == 0:
            y = np.cos(y) + 0.3 * xs[j]
        else:
            y = np.sin(y) * 1.2
    return y


def _expected(a):
    x, n = a
    # od(x, n + 1) = sin(ev(1.1 x, n)) * 1.2
    return _ev(x, int(n)) + np.sin(_ev(x * 1.1, int(n))) * 1.2 * 0.5


def args():
    return (0.4, np.int64(9))


ARGNUMS = (0,)
ORDER = 2
TAGS = {"recursion", "mutual_recursion", "int_arg", "scalar"}
EXPECTED = _expected
