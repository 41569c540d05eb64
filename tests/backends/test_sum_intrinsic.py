"""The full sum of a float64 array as a numba intrinsic (`numba_reduce._pb_sum_all`;
note [compile-time], "Sums in place"): numba's `np.sum` bit for bit, in numba's
order for every layout, and the form the dialect prints for a sum of every axis."""
import numpy as np
import pytest

pytest.importorskip("numba")

from numba import njit, typeof  # noqa: E402

import pullback as pb  # noqa: E402
from pullback.backends import numba_backend  # noqa: E402
from pullback.backends.numba_reduce import _pb_sum_all  # noqa: E402

pytestmark = pytest.mark.usefixtures("private_cache")   # conftest.py


@njit(cache=False)
def _ours(x):
    return _pb_sum_all(x)


@njit(cache=False)
def _numbas(x):
    return np.sum(x)


def _cases():
    rng = np.random.default_rng(3)
    base = rng.standard_normal((7, 9, 5)) * 10.0 ** rng.uniform(-8, 8, (7, 9, 5))  # order-sensitive
    flat2 = base[:, :, 0]
    return [base, np.asfortranarray(base), base[::2, 1:, ::-1], base.transpose(2, 0, 1), base[:, 3],
            np.asfortranarray(flat2), flat2.T, np.zeros((0, 3)), np.full((2, 2), np.nan),
            np.array([[np.inf, -np.inf], [1.0, 2.0]]), base.reshape(-1)]


@pytest.mark.parametrize("k", range(11))
def test_sum_matches_numbas_bits(k):
    x = _cases()[k]
    got, want = _ours(x), _numbas(x)
    assert np.array_equal(got, want, equal_nan=True), (typeof(x), got, want)


def test_sum_follows_numbas_order_for_f_arrays():
    """Layout F sums in memory order (numba's 'K' iteration), which rounds differently
    from C order on these values: the test would catch a C-order loop."""
    x = np.asfortranarray(_cases()[0])
    assert typeof(x).layout == "F"
    assert _ours(x) == _numbas(x) != _ours(np.ascontiguousarray(x))


def test_dialect_prints_the_intrinsic_for_whole_sums():
    def f(a, b):
        return np.sum(np.sin(a)) * np.sum(b)          # b summed whole, not fused into a loop

    a, b = np.linspace(0.0, 1.0, 30), np.linspace(-2.0, 3.0, 2000).reshape(40, 50)
    src = numba_backend.emit_prog(numba_backend.lower(pb.jit(f).staged(a, b).prog), parallel=False)
    code = [ln.split("#")[0] for ln in src.splitlines()]
    assert any("_pb_sum_all(b)" in ln for ln in code)
    assert not any("np.sum(" in ln for ln in code)
    np.testing.assert_allclose(pb.jit(f, backend="numba")(a, b), f(a, b), rtol=1e-13)
    np.testing.assert_allclose(pb.grad(f, backend="numba")(a, b), pb.grad(f, backend="interp")(a, b), rtol=1e-13)
