"""pb.jacobian and pb.hessian with a tuple of argnums return tuples (nested for
the Hessian), as JAX does (issue 10)."""
import numpy as np
import pytest

import pullback as pb

X = np.array([0.3, 0.7])
Y = np.array([1.5, -0.5, 2.0])


def f(x, y):
    return np.sin(x) * y[0] + x ** 2 * np.sum(y)


def g(x, y):
    return np.sum(np.sin(x) * y[0]) + np.sum(x ** 2) * np.sum(y * y)


def _fd_jac(fn, args, k, h=1e-6):
    x = args[k]
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = h
        a1, a2 = list(args), list(args)
        a1[k], a2[k] = x + e, x - e
        cols.append((np.asarray(fn(*a1)) - np.asarray(fn(*a2))) / (2 * h))
    return np.stack(cols, axis=-1).reshape(np.shape(fn(*args)) + x.shape)


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_jacobian_tuple(mode):
    jx, jy = pb.jacobian(f, argnums=(0, 1), mode=mode, backend="pysource")(X, Y)
    np.testing.assert_allclose(jx, _fd_jac(f, (X, Y), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(jy, _fd_jac(f, (X, Y), 1), rtol=1e-6, atol=1e-8)


def test_hessian_tuple_blocks():
    H = pb.hessian(g, argnums=(0, 1), backend="pysource")(X, Y)
    assert [[b.shape for b in row] for row in H] == [[(2, 2), (2, 3)], [(3, 2), (3, 3)]]
    np.testing.assert_allclose(H[0][1], H[1][0].T, rtol=1e-12)
    gy = pb.grad(g, argnums=1, backend="pysource")
    np.testing.assert_allclose(H[1][1], _fd_jac(gy, (X, Y), 1), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(H[1][0], _fd_jac(gy, (X, Y), 0), rtol=1e-6, atol=1e-8)
