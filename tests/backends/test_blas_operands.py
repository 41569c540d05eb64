"""Matmul operands reach numba's BLAS without copies where their layout allows
(note [blas-operands]): transposed fresh matrices are passed as they are,
strided views are still made contiguous, and values agree with the
interpreter."""

import numpy as np
import pytest

pytest.importorskip("numba")

import pullback as pb  # noqa: E402
from pullback.backends import numba_backend  # noqa: E402

pytestmark = pytest.mark.usefixtures("private_cache")   # conftest.py

RNG = np.random.default_rng(3)
# above libcalls.linalg.SMALL_MATMUL multiply-adds, every inner axis above SMALL_K: these products
# (and their adjoints) are BLAS calls
A = RNG.standard_normal((17, 9))
B = RNG.standard_normal((17, 10))
M = RNG.standard_normal((9, 9))


def gram(a, b):
    return np.sum((a - 0.5).T @ (b * b))        # a fresh (17, 9) matrix, transposed: layout F


def strided(a, b):
    return np.sum(a[::2, :].T @ b[::2, :])      # strided views: layout A, not contiguous


def rows(a, m):
    return np.sum(a[1:, :] @ m.T)               # a row slice: layout A, contiguous at run time


def _src(f, *args):
    return numba_backend.emit_prog(numba_backend.lower(
        pb.jit(lambda *a: pb.grad(f, argnums=(0, 1))(*a), backend="numba").staged(*args).prog))


def test_transposed_operands_are_not_copied():
    src = _src(gram, A, B)
    assert "from pullback.backends.numba_operands import _pb_matmul" in src
    mm = [ln for ln in src.splitlines() if "# pb:matmul" in ln]
    # the product intrinsic takes C and F operands as they are (note [compile-time], "Products in place")
    assert mm and all("_pb_matmul(" in ln and "ascontiguousarray" not in ln for ln in mm)


@pytest.mark.parametrize("f,args", [(gram, (A, B)), (strided, (A, B)), (rows, (A, M))])
def test_values_agree_with_the_interpreter(f, args):
    want = pb.grad(f, argnums=(0, 1), backend="interp")(*args)
    got = pb.grad(f, argnums=(0, 1), backend="numba")(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(pb.jit(f, backend="numba")(*args), f(*args), rtol=1e-12)


def test_blas_operand_copies_only_what_blas_cannot_take():
    from numba import njit

    from pullback.backends.numba_operands import _pb_blas

    same = njit(lambda a: _pb_blas(a))
    base = np.ascontiguousarray(A)
    for a in (base, base.T, base[1:, :]):          # C, F, and A but contiguous: no copy
        out = same(a)
        assert np.shares_memory(out, base) and np.array_equal(out, a)
    out = same(base[::2, ::2])                       # not contiguous: a C copy
    assert not np.shares_memory(out, base) and out.flags.c_contiguous
    np.testing.assert_array_equal(out, base[::2, ::2])
