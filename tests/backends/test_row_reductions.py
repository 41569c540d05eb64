"""Row reductions and arg-extrema in numba code (notes [pairwise-sums], [strip-sums]
"Row sums", [numba-extrema]): a sum over the last axis alone adds each row in NumPy's
pairwise order (np.sum's bits for C arrays); a fused row sum over long rows is
strip-mined with lanes of its own per row; float row min/max and argmax/argmin use
the vectorised extrema, with NumPy's answers for NaN, ties and signed zeros."""
import numpy as np
import pytest

pytest.importorskip("numba")

import pullback as pb  # noqa: E402
from pullback.backends import numba_backend as nb  # noqa: E402

pytestmark = pytest.mark.usefixtures("private_cache")   # conftest.py


def row_sums(X):
    return np.sum(X, axis=-1)


def row_means(X):
    return np.mean(X, axis=1)


def row_max(X):
    return np.max(X, axis=1)


def row_min(X):
    return np.min(X, axis=1)


def arg_max(x):
    return np.argmax(x)


def arg_min(x):
    return np.argmin(x)


def row_lse(X):
    return np.log(np.sum(np.exp(X), axis=1))


def _code(f, *args):
    src = nb.emit_prog(nb.lower(pb.jit(f).staged(*args).prog), parallel=False)
    return "\n".join(ln.split("#")[0] for ln in src.splitlines())


def _wide(rng, shape):
    return rng.standard_normal(shape) * 10.0 ** rng.uniform(-8, 8, shape)


@pytest.mark.parametrize("shape", [(5, 8), (7, 9), (3, 130), (4, 1000), (2, 3, 300)])
def test_row_sums_have_numpys_bits(shape):
    X = _wide(np.random.default_rng(sum(shape)), shape)
    got = pb.jit(row_sums, backend="numba")(X)
    assert got.tobytes() == np.sum(X, axis=-1).tobytes()
    assert "_pb_sum_rows(" in _code(row_sums, X)
    np.testing.assert_allclose(pb.jit(row_means, backend="numba")(X.reshape(-1, shape[-1])),
                               np.mean(X.reshape(-1, shape[-1]), axis=1), rtol=1e-15)


def test_short_rows_keep_the_loop():
    X = np.ones((50, 7))
    assert "_pb_sum_rows(" not in _code(row_sums, X)
    np.testing.assert_array_equal(pb.jit(row_sums, backend="numba")(X), np.full(50, 7.0))


@pytest.mark.parametrize("f, ref", [(row_max, np.max), (row_min, np.min)])
def test_row_extrema_match_numpy(f, ref):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((6, 40))
    X[1, 7] = np.nan
    X[2, :] = 0.0
    X[2, 5] = -0.0
    X[3, 0] = np.inf
    X[4, 39] = -np.inf
    got = pb.jit(f, backend="numba")(X)
    want = ref(X, axis=1)
    assert np.array_equal(got, want, equal_nan=True)
    assert "_pb_fm" in _code(f, X)


@pytest.mark.parametrize("x", [np.array([1.0, 3.0, 3.0, -2.0]), np.array([-0.0, 0.0, -1.0]),
                               np.array([0.0, np.nan, 5.0, np.nan]), np.array([np.inf, 1.0, np.inf]),
                               np.array([-np.inf, -np.inf]), np.array([2.5])])
def test_arg_extrema_match_numpy(x):
    for f, ref in ((arg_max, np.argmax), (arg_min, np.argmin)):
        assert pb.jit(f, backend="numba")(x) == ref(x), (f.__name__, x)
    assert "_argmax_rows_f64(" in _code(arg_max, x)


def test_long_fused_row_sums_are_strip_mined():
    X = np.random.default_rng(2).standard_normal((5, 1000))
    code = _code(row_lse, X)
    assert "_rl[" in code and "_buf[" in code          # lanes per row, blocks through a buffer
    np.testing.assert_allclose(pb.jit(row_lse, backend="numba")(X), row_lse(X), rtol=1e-14)
    np.testing.assert_allclose(pb.grad(lambda X: np.sum(row_lse(X)), backend="numba")(X),
                               pb.grad(lambda X: np.sum(row_lse(X)), backend="interp")(X), rtol=1e-13)


def arg_max_rows(X):
    return np.argmax(X, axis=1)


def arg_min_rows(X):
    return np.argmin(X, axis=-1)


def test_row_arg_extrema_match_numpy():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((7, 30))
    X[1, [3, 9]] = np.nan
    X[2, :] = 0.0
    X[2, 4] = -0.0
    X[3, [5, 17]] = 9.0
    X[4, [6, 20]] = -9.0
    X[5, 29] = np.inf
    X[6, 0] = -np.inf
    for f, ref in ((arg_max_rows, lambda X: np.argmax(X, axis=1)), (arg_min_rows, lambda X: np.argmin(X, axis=-1))):
        np.testing.assert_array_equal(pb.jit(f, backend="numba")(X), ref(X))
    assert "_argmax_rows_f64(" in _code(arg_max_rows, X)
    X3 = rng.standard_normal((2, 3, 40))
    np.testing.assert_array_equal(pb.jit(arg_min_rows, backend="numba")(X3), np.argmin(X3, axis=-1))
