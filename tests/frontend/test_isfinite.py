"""np.isfinite / np.isinf and math.isfinite / isinf / isnan on traced values
(staged as isnan(x - x): NaN exactly where x is infinite or NaN), on every
backend, against NumPy; integers are always finite."""
import math

import numpy as np
import pytest

import pullback as pb

X = np.array([1.0, np.inf, -np.inf, np.nan, -2.0, 0.0])


def masked_sum(x):
    return np.where(np.isfinite(x), x, 0.0).sum() + np.sum(np.isinf(x) * 10.0)


def scalar_loop(x):
    s = 0.0
    for v in x:
        if math.isfinite(v):
            s = s + v * v
        elif math.isinf(v):
            s = s + 100.0
        elif math.isnan(v):
            s = s + 1000.0
    return s


def ints(k):
    return np.isfinite(k).sum() * 10 + np.isinf(k).sum()


@pytest.mark.parametrize("backend", ["interp", "pysource", "numba"])
def test_values(backend):
    assert pb.jit(masked_sum, backend=backend)(X) == masked_sum(X)
    assert pb.jit(scalar_loop, backend=backend)(X) == scalar_loop(X)
    assert pb.jit(ints, backend=backend)(np.arange(4)) == ints(np.arange(4))


def test_gradient_flows_where_finite():
    g = pb.grad(masked_sum, backend="interp")(X)
    np.testing.assert_array_equal(g, np.isfinite(X) * 1.0)
