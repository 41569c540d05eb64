"""Float min and max reductions through `numba_extrema`'s intrinsics (LLVM's
``llvm.maximum`` / ``llvm.minimum``; note [compile-time], "Vectorised extrema"): NumPy's
values, NaN anywhere in a long vector or column included (the vectorised loop body, its
remainder and the first element), for float64 and float32; integers as before."""
import numpy as np
import pytest

pytest.importorskip("numba")
import pullback as pb  # noqa: E402
from numba import njit  # noqa: E402
from pullback.backends.numba_extrema import _pb_fmax, _pb_fmin  # noqa: E402


@njit
def _pair(a, b):
    return _pb_fmax(a, b), _pb_fmin(a, b)


SPECIAL = [0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("a", SPECIAL)
@pytest.mark.parametrize("b", SPECIAL)
def test_two_scalars(a, b):
    hi, lo = _pair(a, b)
    if np.isnan(a) or np.isnan(b):
        assert np.isnan(hi) and np.isnan(lo)
        return
    assert hi == max(a, b) and lo == min(a, b)
    if a == b == 0.0:
        assert np.signbit(hi) == (np.signbit(a) and np.signbit(b))     # +0.0 is the larger zero
        assert np.signbit(lo) == (np.signbit(a) or np.signbit(b))


def _all(v):
    return np.max(v), np.min(v), np.max(v[::3]), np.min(v[1:])


def _lead(X):
    return np.max(X, axis=0), np.min(X, axis=0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("nan_at", [None, 0, 1, 517, 1022])
def test_vectors_and_columns_against_numpy(dtype, nan_at):
    rng = np.random.default_rng(3)
    v = rng.standard_normal(1023).astype(dtype)
    v[100], v[200] = np.inf, -np.inf
    X = rng.standard_normal((37, 41)).astype(dtype)
    if nan_at is not None:
        v[nan_at] = np.nan
        X[nan_at % 37, nan_at % 41] = np.nan
    got_v = pb.jit(_all, backend="numba")(v)
    got_X = pb.jit(_lead, backend="numba")(X)
    for g, w in zip(got_v, _all(v)):
        np.testing.assert_array_equal(g, w)
        assert np.asarray(g).dtype == dtype
    for g, w in zip(got_X, _lead(X)):
        np.testing.assert_array_equal(g, w)


def test_integers_unchanged():
    v = np.array([3, -7, 12, 12, 0, -7], dtype=np.int64)
    X = v.reshape(3, 2)
    np.testing.assert_array_equal(pb.jit(_all, backend="numba")(v), _all(v))
    for g, w in zip(pb.jit(_lead, backend="numba")(X), _lead(X)):
        np.testing.assert_array_equal(g, w)


def test_printed_through_the_intrinsics():
    from pullback.backends import numba_backend

    v = np.linspace(0.0, 1.0, 9)
    src = numba_backend.emit_prog(numba_backend.lower(pb.jit(_all).staged(v).prog), parallel=False)
    assert "from pullback.backends.numba_extrema import _pb_fmax, _pb_fmin" in src
    assert "out = _pb_fmax(out, x[k])" in src and "out = _pb_fmin(out, x[k])" in src
    assert "v != v" not in src
    X = np.ones((3, 4))
    src = numba_backend.emit_prog(numba_backend.lower(pb.jit(_lead).staged(X).prog), parallel=False)
    assert "out[c] = _pb_fmax(out[c], x[r, c])" in src and "out[c] = _pb_fmin(out[c], x[r, c])" in src
