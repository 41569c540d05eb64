"""`x[mask] = v` and `x[mask] += v` with a boolean mask of x's shape and a scalar
value (issue 10): lowered to `where`, static shapes; other mask assignments are
located errors that say what to write."""
import numpy as np
import pytest

import pullback as pb
from pullback.testing import check_grads


def relu_sq(x):
    y = x.copy()
    y[y < 0] = 0.0
    return np.sum(y ** 2)


def shift(x):
    y = x * 1.0
    y[x > 0.5] += 2.0
    return y


def int_array(k):
    a = np.arange(6)
    a[a > 2] = k
    return a


X = np.array([-1.0, 0.3, 0.7, 2.0])


@pytest.mark.parametrize("backend", ["interp", "pysource", "numba"])
def test_mask_assignment_values(backend):
    assert pb.jit(relu_sq, backend=backend)(X) == pytest.approx(relu_sq(X))
    np.testing.assert_allclose(pb.jit(shift, backend=backend)(X), shift(X))
    got = pb.jit(int_array, backend=backend)(7)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, int_array(7))


@pytest.mark.parametrize("backend", ["interp", "pysource"])
def test_mask_assignment_gradients(backend):
    check_grads(relu_sq, (X,), modes=("rev", "fwd"), order=1, backend=backend)
    check_grads(lambda x: np.sum(np.sin(shift(x))), (X,), modes=("rev", "fwd"), order=1, backend=backend)


def test_array_of_values_is_a_located_error():
    def f(x):
        y = x.copy()
        y[y < 0] = np.array([1.0, 2.0])
        return y

    with pytest.raises(pb.PullbackError) as ei:
        pb.jit(f, backend="interp")(X)
    assert "test_mask_assign.py" in str(ei.value) and "np.where" in str(ei.value)
