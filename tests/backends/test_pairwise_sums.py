"""Full sums of float64 arrays in numba code, in NumPy's pairwise order (note
[pairwise-sums]): `numba_reduce._pb_sum_vec` for vectors, of any strides, and over
`numba_reduce._pb_memory_vector` for higher ranks give np.sum's bits for vectors and
for C- and F-contiguous arrays, and the dialect prints them for a sum of every axis."""
import numpy as np
import pytest

pytest.importorskip("numba")

from numba import njit, typeof  # noqa: E402

import pullback as pb  # noqa: E402
from pullback.backends import numba_backend  # noqa: E402
from pullback.backends.numba_reduce import _pb_memory_vector, _pb_sum_vec  # noqa: E402

pytestmark = pytest.mark.usefixtures("private_cache")   # conftest.py

@njit(cache=False)
def _vsum(x):
    return _pb_sum_vec(x)


@njit(cache=False)
def _ours(x):
    return _pb_sum_vec(_pb_memory_vector(x))


@njit(cache=False)
def _ours_a(x):
    """The same, for x typed layout 'A' (reversed twice: contiguous at run time)."""
    return _pb_sum_vec(_pb_memory_vector(x[::-1][::-1]))


def _bits(v):
    return np.float64(v).tobytes()


def _wide(rng, shape):
    return rng.standard_normal(shape) * 10.0 ** rng.uniform(-8, 8, shape)   # order-sensitive


@pytest.mark.parametrize("n", [*range(0, 140), 255, 256, 257, 1000, 1031, 4096, 12345, 100_003])
def test_vector_sum_has_numpys_bits(n):
    rng = np.random.default_rng(n)
    x = _wide(rng, 2 * n)
    for v in (x[:n], x[::2], x[::-1][:n], np.full(n, -0.0)):
        assert _bits(_vsum(v)) == _bits(np.sum(v)), (n, v.strides)


def test_vector_sum_special_values():
    for v in ([np.inf, 1.0] * 100, [np.nan] + [1.0] * 300, [np.inf, -np.inf] + [1.0] * 200, [1e308] * 300):
        v = np.array(v)
        with np.errstate(all="ignore"):
            want = np.sum(v)
        assert np.array_equal(_vsum(v), want, equal_nan=True)


def _arrays():
    rng = np.random.default_rng(3)
    base = _wide(rng, (17, 19, 5))
    flat2 = base[:, :, 0]
    return {"C 3-d": base, "F 3-d": np.asfortranarray(base), "F 2-d": np.asfortranarray(flat2),
            "transposed (F)": np.ascontiguousarray(flat2).T, "empty": np.zeros((0, 3)),
            "nan": np.full((2, 2), np.nan), "inf": np.array([[np.inf, -np.inf], [1.0, 2.0]])}


@pytest.mark.parametrize("name", list(_arrays()))
def test_contiguous_sum_has_numpys_bits(name):
    x = _arrays()[name]
    assert typeof(x).layout in "CF"
    with np.errstate(all="ignore"):
        want = np.sum(x)
    assert np.array_equal(_ours(x), want, equal_nan=True)
    assert np.array_equal(_ours_a(x), want, equal_nan=True)      # a layout-A view, tested at run time


def test_f_arrays_sum_in_memory_order():
    """An F array adds in memory order, as NumPy's iterator does, which rounds differently
    from C order on these values: the test would catch a C-order copy."""
    x = np.asfortranarray(_arrays()["C 3-d"])
    assert _ours(x) == np.sum(x) != np.sum(np.ascontiguousarray(x).reshape(-1))


def test_non_contiguous_arrays_sum_a_c_ordered_copy():
    base = _arrays()["C 3-d"]
    for x in (base[::2, 1:, ::-1], base.transpose(2, 0, 1), base[:, 3]):
        assert typeof(x).layout == "A" or not (x.flags.c_contiguous or x.flags.f_contiguous)
        assert _bits(_ours(x)) == _bits(np.sum(np.ascontiguousarray(x).reshape(-1)))


def test_dialect_prints_pairwise_sums_and_backends_agree():
    def f(a, b):
        return np.sum(np.sin(a)) * np.sum(b) + np.sum(a)   # b and a summed whole, not fused

    a, b = np.linspace(0.0, 1.0, 300), np.linspace(-2.0, 3.0, 2000).reshape(40, 50) ** 3
    src = numba_backend.emit_prog(numba_backend.lower(pb.jit(f).staged(a, b).prog), parallel=False)
    code = [ln.split("#")[0] for ln in src.splitlines()]
    assert any("_pb_sum_vec(_pb_memory_vector(b))" in ln for ln in code)
    assert any("_pb_sum_vec(a)" in ln for ln in code)
    assert not any("np.sum(" in ln for ln in code)
    got = pb.jit(f, backend="numba")(a, b)
    np.testing.assert_allclose(got, f(a, b), rtol=1e-13)
    # the whole sums are NumPy's bits, as the NumPy backends compute them
    g = lambda b: np.sum(b) + np.sum(b[0])   # noqa: E731
    assert _bits(pb.jit(g, backend="numba")(b)) == _bits(pb.jit(g, backend="pysource")(b)) == _bits(g(b))
    np.testing.assert_allclose(pb.grad(f, backend="numba")(a, b), pb.grad(f, backend="interp")(a, b), rtol=1e-13)
