"""Output dtypes follow the staged program's result types on every backend: a
gradient has its argument's dtype (JAX's rule), a primal output its IR dtype
(note [output-dtypes] in docs/design.md)."""
import os

import numpy as np
import pytest

import pullback as pb
from pullback.api import _to_output

F32 = np.float32


def loss(x, w):
    return np.sum(np.sin(x) * w) * 2.0


def vec(x):
    return np.sin(x) * x


def scalar(x):
    return x * x


X = np.array([0.5, -1.0, 2.0], F32)
W = np.array([1.0, 2.0, 3.0], F32)


def _all_transforms(backend):
    """(name, result) pairs for every transformation on float32 inputs."""
    out = [("jit", pb.jit(loss, backend=backend)(X, W)),
           ("grad", pb.grad(loss, backend=backend)(X, W)),
           ("grad_argnums", pb.grad(loss, argnums=(0, 1), backend=backend)(X, W)),
           ("value_and_grad", pb.value_and_grad(loss, backend=backend)(X, W)),
           ("jacobian_rev", pb.jacobian(vec, backend=backend)(X)),
           ("jacobian_fwd", pb.jacobian(vec, mode="fwd", backend=backend)(X)),
           ("hessian", pb.hessian(lambda x: loss(x, W), backend=backend)(X)),
           ("jvp", pb.jvp(vec, (X,), (np.ones(3, F32),), backend=backend)),
           ("vjp", pb.vjp(vec, X, backend=backend)[1](np.ones(3, F32))),
           ("grad_scalar", pb.grad(scalar, backend=backend)(F32(3.0)))]
    return out


def _leaves(v):
    if isinstance(v, (tuple, list)):
        return [x for c in v for x in _leaves(c)]
    return [v]


@pytest.mark.parametrize("backend", ["pysource", "interp"])
def test_float32_in_float32_out(backend):
    for name, res in _all_transforms(backend):
        for leaf in _leaves(res):
            assert isinstance(leaf, (np.ndarray, np.generic)), (name, type(leaf))
            assert leaf.dtype == F32, (backend, name, leaf.dtype)


def test_float64_results_stay_float64_and_values_agree():
    g32 = pb.grad(loss)(X, W)
    g64 = pb.grad(loss)(X.astype(float), W.astype(float))
    assert g64.dtype == np.float64
    np.testing.assert_allclose(g32, g64, rtol=1e-6)


def test_mixed_precision_gradients_follow_each_argument():
    gx, gw = pb.grad(loss, argnums=(0, 1))(X, W.astype(np.float64))
    assert gx.dtype == F32 and gw.dtype == np.float64


def test_integer_and_bool_outputs_keep_their_types():
    i = pb.jit(lambda x: np.argmax(x))(X)
    b = pb.jit(lambda x: x > 0)(X)
    assert i.dtype == np.int64 and b.dtype == np.bool_


def test_conversion_does_not_copy_arrays_of_the_right_dtype():
    a = np.ones(3, F32)
    assert _to_output(a, np.dtype(F32)) is a
    assert _to_output(a, np.dtype(np.float64)).dtype == np.float64
    assert type(_to_output(2.0, np.dtype(np.float64))) is float
    assert _to_output(2.0, np.dtype(F32)).dtype == F32
    assert _to_output(np.array(2.0), np.dtype(F32)).dtype == F32


@pytest.fixture
def numba_cache(tmp_path, monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_numba_float32_gradient(numba_cache):
    g = pb.grad(loss, backend="numba")(X, W)
    assert g.dtype == F32
    np.testing.assert_allclose(g, pb.grad(loss, backend="interp")(X, W), rtol=1e-6)
    assert os.environ["PULLBACK_CACHE_DIR"] == str(numba_cache)
