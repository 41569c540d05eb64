"""pb.stop_gradient (issue 10): the value passes, the derivative is zero in
every mode and order, on every backend."""
import numpy as np
import pytest

import pullback as pb


def f(x):
    return x * pb.stop_gradient(x ** 2)


def g(v):
    w = pb.stop_gradient(v / np.sum(v))       # a normalisation treated as a constant
    return np.sum(w * np.sin(v))


@pytest.mark.parametrize("backend", ["interp", "pysource", "numba"])
def test_stop_gradient(backend):
    assert pb.jit(f, backend=backend)(3.0) == 27.0
    assert pb.grad(f, backend=backend)(3.0) == 9.0            # d/dx x * c with c = x**2 frozen
    _, t = pb.jvp(f, (3.0,), (1.0,), backend=backend)
    assert t == 9.0
    v = np.array([0.5, 1.0, 2.0])
    w = v / np.sum(v)
    np.testing.assert_allclose(pb.grad(g, backend=backend)(v), w * np.cos(v), rtol=1e-12)


def test_second_order_and_outside_staging():
    assert pb.hessian(f, backend="interp")(3.0) == 0.0
    assert pb.stop_gradient(2.5) == 2.5
