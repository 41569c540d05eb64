"""Concatenations as a numba intrinsic (`numba_alloc._pb_concat`; note
[compile-time], "Concatenations in place"): values, dtype, layout and memory
against NumPy's `np.concatenate` for every axis, piece count, layout and dtype
the IR has; what the typer declines; the form the numba dialect prints; and
derivatives through concatenations on numba against the interpreter."""
import numpy as np
import pytest

pytest.importorskip("numba")

from numba import njit  # noqa: E402

import pullback as pb  # noqa: E402
from pullback.backends import numba_backend  # noqa: E402
from pullback.backends.numba_alloc import _pb_concat  # noqa: E402

pytestmark = pytest.mark.usefixtures("private_cache")   # conftest.py


@njit(cache=False)
def _one(a):
    return _pb_concat((a,), 0)


@njit(cache=False)
def _two0(a, b):
    return _pb_concat((a, b), 0)


@njit(cache=False)
def _two1(a, b):
    return _pb_concat((a, b), 1)


@njit(cache=False)
def _three_last(a, b, c):
    return _pb_concat((a, b, c), 2)


def _layouts(x):
    """x as a C array, an F array and a strided view ('A'), equal values."""
    f = np.asfortranarray(x)
    big = np.zeros(tuple(2 * d for d in x.shape), dtype=x.dtype)
    view = big[tuple(slice(None, None, 2) for _ in x.shape)]
    view[...] = x
    return [np.ascontiguousarray(x), f, view]


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.bool_])
def test_concat_matches_numpy(dtype):
    rng = np.random.default_rng(0)

    def arr(*shape):
        return (rng.standard_normal(shape) * 5).astype(dtype)

    a, b = arr(3, 4), arr(3, 2)
    for x in _layouts(a):
        for y in _layouts(b):
            got = _two1(x, y)
            want = np.concatenate((x, y), axis=1)
            np.testing.assert_array_equal(got, want)
            assert got.dtype == want.dtype and got.flags.c_contiguous
            assert not np.shares_memory(got, x) and not np.shares_memory(got, y)
    c, d = arr(2, 4), arr(5, 4)
    for x in _layouts(c):
        np.testing.assert_array_equal(_two0(x, d), np.concatenate((x, d), axis=0))
    p, q, r = arr(2, 3, 1), arr(2, 3, 4), arr(2, 3, 2)
    for x in _layouts(q):
        np.testing.assert_array_equal(_three_last(p, x, r), np.concatenate((p, x, r), axis=2))
    v = arr(6)
    for x in _layouts(v):
        got = _one(x)
        np.testing.assert_array_equal(got, v)
        assert not np.shares_memory(got, x)


def test_concat_empty_pieces():
    a, e = np.arange(6.0).reshape(2, 3), np.zeros((2, 0))
    np.testing.assert_array_equal(_two1(e, a), a)
    np.testing.assert_array_equal(_two1(a, e), a)
    assert _two1(e, e).shape == (2, 0)
    assert _two0(np.zeros((0, 3)), np.zeros((0, 3))).shape == (0, 3)


def test_concat_declines_mixed_pieces():
    """The typer accepts one dtype and one rank only: anything else is numba's
    typing error, never a silent conversion (the dialect prints np.concatenate there)."""
    from numba.core.errors import TypingError

    with pytest.raises(TypingError):
        _two0(np.zeros(3), np.zeros(3, dtype=np.float32))
    with pytest.raises(TypingError):
        _two0(np.zeros(3), np.zeros((1, 3)))

    @njit(cache=False)
    def dynamic_axis(a, b, k):
        return _pb_concat((a, b), k)

    with pytest.raises(TypingError):
        dynamic_axis(np.zeros(3), np.zeros(3), 0)

    @njit(cache=False)
    def axis_out_of_range(a, b):
        return _pb_concat((a, b), 1)

    with pytest.raises(TypingError):
        axis_out_of_range(np.zeros(3), np.zeros(3))


def _minors(A):
    rest = A[1:, :]
    total = 0.0
    for j in range(A.shape[0]):
        m = np.concatenate([rest[:, :j], rest[:, j + 1:]], axis=1)
        total = total + A[0, j] * np.sum(m * m)
    return total


def _module(f, *args):
    return numba_backend.emit_prog(numba_backend.lower(pb.grad(f)._jit.staged(*args).prog), parallel=False)


def test_gradient_module_prints_the_intrinsic():
    a = np.random.default_rng(1).standard_normal((5, 5))
    code = [ln.split("#")[0] for ln in _module(_minors, a).splitlines()]
    assert any("_pb_concat((" in ln for ln in code)
    assert not any("np.concatenate" in ln for ln in code)
    np.testing.assert_allclose(pb.grad(_minors, backend="numba")(a), pb.grad(_minors, backend="interp")(a),
                               rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(pb.jit(_minors, backend="numba")(a), _minors(a), rtol=1e-13)


def test_mixed_dtypes_keep_numpys_concatenate():
    """The frontend casts pieces to one dtype first; an IR concatenation of mixed
    dtypes (built here by hand) keeps numba's np.concatenate, which promotes."""
    from pullback.ir.builder import Builder
    from pullback.ir.core import Func, Prog
    from pullback.ir.types import TensorType

    b = Builder()
    x, k = b.fresh("x", TensorType("f64", (4,))), b.fresh("k", TensorType("i64", (3,)))
    out = b.concatenate(x, k, axis=0, name="cat")
    assert out.type.dtype == "f64"
    prog = Prog((Func("f", (x, k), b.body([out]), (out.type,)),), "f")
    fn = numba_backend.compile_prog(prog, parallel=False)
    code = [ln.split("#")[0] for ln in fn.source.splitlines()]
    assert any("np.concatenate" in ln for ln in code) and not any("_pb_concat(" in ln for ln in code)
    xs, ks = np.linspace(0.0, 1.0, 4), np.arange(3)
    (got,) = fn(xs, ks)
    np.testing.assert_array_equal(got, np.concatenate([xs, ks]))


def test_det_by_minors_gradient_on_numba():
    from pullback.gradbench.modules import det as gb

    a = np.random.default_rng(2).standard_normal((6, 6)) + 6 * np.eye(6)
    np.testing.assert_allclose(pb.grad(gb.det, backend="numba")(a), pb.grad(gb.det, backend="interp")(a),
                               rtol=1e-12)
    np.testing.assert_allclose(pb.jit(gb.det, backend="numba")(a), np.linalg.det(a), rtol=1e-10)
