"""`while True:` loops whose only exits are `return` statements (issue 10): how
many solvers are written. The code after such a loop never runs, so the loop's
return value is the function's (rewrite.py, point 1)."""
import numpy as np
import pytest

import pullback as pb
from pullback.testing import check_grads


def newton_sqrt(a):
    x = a
    while True:
        x2 = 0.5 * (x + a / x)
        if abs(x2 - x) < 1e-12:
            return x2
        x = x2


def bisect_then_polish(c):
    lo, hi = 0.0, 4.0
    k = 0
    while True:
        mid = 0.5 * (lo + hi)
        if hi - lo < 1e-3:
            x = mid
            for _ in range(4):
                x = x - (x ** 3 - c) / (3 * x ** 2)
            return x, k
        if mid ** 3 > c:
            hi = mid
        else:
            lo = mid
        k += 1


def with_break(a):
    x = a
    while True:
        x = x * 0.5
        if x < 0.1:
            break
    return x + a


@pytest.mark.parametrize("backend", ["interp", "pysource", "numba"])
def test_newton_while_true(backend):
    assert pb.jit(newton_sqrt, backend=backend)(2.0) == pytest.approx(np.sqrt(2.0), rel=1e-14)
    assert pb.grad(newton_sqrt, backend=backend)(2.0) == pytest.approx(0.5 / np.sqrt(2.0), rel=1e-9)


@pytest.mark.parametrize("backend", ["interp", "pysource"])
def test_tuple_return_from_while_true(backend):
    x, k = pb.jit(bisect_then_polish, backend=backend)(5.0)
    want_x, want_k = bisect_then_polish(5.0)
    assert x == pytest.approx(want_x, rel=1e-12) and int(k) == want_k
    check_grads(lambda c: bisect_then_polish(c)[0], (5.0,), modes=("rev", "fwd"), order=1, backend=backend)


def test_while_true_with_a_break_still_works():
    assert pb.jit(with_break, backend="interp")(3.0) == pytest.approx(with_break(3.0))
