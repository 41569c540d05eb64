"""New arrays and matrix products lowered in the caller (note [compile-time],
"Allocations in place" and "Products in place"): `numba_alloc`'s intrinsics
and text rewrite, `numba_operands._pb_matmul` / `_pb_matmul_out`. Values are compared
bit for bit with numba's own `np.empty`/`np.zeros`/`np.full` and `@`/`np.dot`
(the same BLAS routine for every shape), and a fresh process compiles none of
numba's constructor or product functions for a generated module."""
import inspect

import numpy as np
import pytest

pytest.importorskip("numba")

from numba import njit  # noqa: E402

import pullback as pb  # noqa: E402
from pullback.backends import numba_backend  # noqa: E402
from pullback.backends.numba_alloc import _pb_empty, _pb_full, _pb_zeros, rewrite  # noqa: E402
from pullback.backends.numba_operands import _pb_matmul, _pb_matmul_out  # noqa: E402

pytestmark = pytest.mark.usefixtures("private_cache")   # conftest.py

RNG = np.random.default_rng(11)


# -- allocations ------------------------------------------------------------------------------

@njit
def _allocs(n):
    a = _pb_zeros((n, 3), np.float64)
    b = _pb_zeros(n, np.int64)
    c = _pb_full((2, n), np.float64(2.5))
    d = _pb_full(n, True)
    e = _pb_empty((n, 2, 2), np.float32)
    f = _pb_zeros((), np.float64)
    g = _pb_zeros(n, a.dtype)
    return a, b, c, d, e, f, g


def test_allocations_match_numpy():
    a, b, c, d, e, f, g = _allocs(4)
    for got, want in ((a, np.zeros((4, 3))), (b, np.zeros(4, np.int64)), (c, np.full((2, 4), 2.5)),
                      (d, np.full(4, True)), (f, np.zeros(())), (g, np.zeros(4))):
        assert got.dtype == want.dtype and got.flags.c_contiguous
        np.testing.assert_array_equal(got, want)
    assert e.shape == (4, 2, 2) and e.dtype == np.float32 and e.flags.c_contiguous
    z = _allocs(0)
    assert z[0].shape == (0, 3) and z[2].shape == (2, 0)


def test_negative_extent_raises_as_numba():
    with pytest.raises(ValueError, match="negative dimensions"):
        _allocs(-1)


def test_rewrite_forms():
    src = "\n".join([
        "    a = np.zeros((5, 1), dtype=np.float64)  # pb:full np.zeros(3)",
        "    # f.py:3: b = np.zeros((k, 1))",
        "    c = np.empty(n, np.int64)",
        "    d = np.full((2, 3), np.float64(x))",
        "    e = np.zeros((max(s[1], 1), 3), dtype=a.dtype)",
        "    f = np.zeros(5, dtype=bool)",              # another dtype form: numba's own
        "    g = np.full((2,), 1.0, dtype=np.float32)",  # a dtype keyword: numba's own
        "    h = np.full(np.zeros(3, np.int64).shape, 1.0)",
        '    raise ValueError("np.zeros(3) is text")',
        "    i = np.zeros(n)",
        "    j = np.empty((4,",                          # not closed on its line: kept
    ])
    got = rewrite(src).split("\n")
    assert got == [
        "    a = _pb_zeros((5, 1), np.float64)  # pb:full np.zeros(3)",
        "    # f.py:3: b = np.zeros((k, 1))",
        "    c = _pb_empty(n, np.int64)",
        "    d = _pb_full((2, 3), np.float64(x))",
        "    e = _pb_zeros((max(s[1], 1), 3), a.dtype)",
        "    f = np.zeros(5, dtype=bool)",
        "    g = np.full((2,), 1.0, dtype=np.float32)",
        "    h = _pb_full(_pb_zeros(3, np.int64).shape, 1.0)",
        '    raise ValueError("np.zeros(3) is text")',
        "    i = _pb_zeros(n, np.float64)",
        "    j = np.empty((4,",
    ]


# -- products ---------------------------------------------------------------------------------

@njit
def _mm(x, y):
    return _pb_matmul(x, y)


@njit
def _mm_numba(x, y):
    return x @ y


@njit
def _mm_out(x, y, out):
    return _pb_matmul_out(x, y, out)


def _cases(dtype):
    r = lambda *s: RNG.standard_normal(s).astype(dtype)   # noqa: E731
    big = r(20, 30)
    return [
        (r(7, 5), r(5, 6)),                 # gemm
        (r(5, 7).T, r(5, 6)),               # F times C
        (r(7, 5), r(6, 5).T),               # C times F
        (big[::2, ::3], r(10, 4)),          # strided: layout A, copied
        (big[2:9, :], r(30, 3)),            # a row slice: layout A, contiguous
        (r(1, 5), r(5, 6)),                 # one row: gemv
        (r(7, 5), r(5, 1)),                 # one column: gemv
        (r(1, 5), r(5, 1)),                 # 1 x 1: dot
        (r(7, 0), r(0, 6)),                 # k = 0: zeros
        (r(0, 5), r(5, 6)),                 # m = 0
        (r(5), r(5, 6)),                    # vector times matrix
        (r(5), r(6, 5).T),
        (r(7, 5), r(5)),                    # matrix times vector
        (r(5, 7).T, r(5)),
        (r(0), r(0, 3)),
    ]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_products_match_numba_bit_for_bit(dtype):
    for x, y in _cases(dtype):
        got, want = _mm(x, y), _mm_numba(np.ascontiguousarray(x) if x.ndim == 2 and not (
            x.flags.c_contiguous or x.flags.f_contiguous) else x, y)
        assert got.dtype == want.dtype and got.shape == want.shape == (x @ y).shape
        assert got.flags.c_contiguous
        np.testing.assert_array_equal(got, want)
        np.testing.assert_allclose(got, x @ y, rtol=1e-4 if dtype == np.float32 else 1e-12, atol=1e-5)


def test_product_into_a_slot():
    x, y = RNG.standard_normal((6, 4)), RNG.standard_normal((4, 3))
    buf = np.full((2, 6, 3), np.nan)
    out = _mm_out(x, y, buf[1])
    assert np.shares_memory(out, buf)
    np.testing.assert_array_equal(buf[1], _mm_numba(x, y))
    assert np.isnan(buf[0]).all()


def test_product_size_errors():
    with pytest.raises(ValueError, match="incompatible sizes"):
        _mm(np.ones((3, 4)), np.ones((5, 2)))
    with pytest.raises(ValueError, match="incompatible sizes"):
        _mm(np.ones(4), np.ones((5, 2)))
    with pytest.raises(ValueError, match="incompatible sizes"):   # the output slot
        _mm_out(np.ones((3, 4)), np.ones((4, 2)), np.empty((3, 3)))


def test_products_decline_other_dtypes():
    from numba.core.errors import TypingError

    with pytest.raises(TypingError):
        _mm(np.ones((3, 4), np.int64), np.ones((4, 2), np.int64))
    with pytest.raises(TypingError):
        _mm(np.ones((3, 4)), np.ones((4, 2), np.float32))


# -- end to end -------------------------------------------------------------------------------

def layer(w, x, b):
    h = np.tanh(x @ w + b)
    return np.sum(h @ w.T) + np.sum(np.zeros((3, 4)) + h[:3, :4])


W, X, Bias = RNG.standard_normal((40, 40)), RNG.standard_normal((30, 40)), RNG.standard_normal(40)


def test_generated_module_uses_the_intrinsics_and_agrees():
    src = numba_backend.emit_prog(numba_backend.lower(
        pb.jit(lambda *a: pb.grad(layer, argnums=(0, 2))(*a), backend="numba").staged(W, X, Bias).prog))
    code = [ln.split("#")[0] for ln in src.splitlines()]
    assert any("_pb_matmul(" in ln for ln in code)
    assert not any(k in ln for ln in code for k in ("np.empty(", "np.zeros(", "np.full(", " @ "))
    want = pb.grad(layer, argnums=(0, 2), backend="interp")(W, X, Bias)
    got = pb.grad(layer, argnums=(0, 2), backend="numba")(W, X, Bias)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-11)


def test_fresh_process_compiles_no_constructor_or_product(tmp_path):
    from _compile_events import compiled_names

    names = compiled_names(tmp_path, "import numpy as np\n\n\n" + inspect.getsource(layer),
                           "pb.grad(layer, argnums=(0, 2), backend='numba')("
                           "*(np.random.default_rng(0).standard_normal(s) for s in ((40, 40), (30, 40), (40,))))")
    assert any("layer" in n for n in names)          # the listener saw the compile
    numbas = [n for n in names if any(k in n for k in ("ol_np_empty", "ol_np_zeros", "impl_np_full",
                                                       "dot_2_impl", "dot_3"))]
    assert not numbas, names
