"""Forms of the numba dialect chosen for compile time (note [compile-time]):
scalar strong products and selections print as calls of small njit helpers,
not conditional expressions; buffer stores print their pushes, pops and news
as statements in the caller (growing through one shared helper per dtype),
not as calls of `inline="always"` helpers; values agree with the interpreter,
growth and the strong product's zeros included. (Mutually recursive modules
keep calling the store helpers: tests/passes/test_split_calls.py and
tests/robustness/test_mutual_recursion_cache.py run them on numba.)"""
import pathlib
import re
import sys

import numpy as np
import pytest

pytest.importorskip("numba")

_SRC = str(pathlib.Path(__file__).resolve().parent.parent.parent / "src")
if _SRC not in sys.path:
    sys.path.insert(0, _SRC)

import pullback as pb  # noqa: E402
from pullback.backends import numba_backend  # noqa: E402

pytestmark = pytest.mark.usefixtures("private_cache")   # conftest.py


def _module(fun, *args, argnums=0):
    prog = pb.grad(fun, argnums=argnums)._jit.staged(*args).prog
    return numba_backend.emit_prog(numba_backend.lower(prog), parallel=False)


def _bodies(src):
    """The generated functions' lines, without the module-level helpers'."""
    out, keep = [], False
    for line in src.splitlines():
        if line.startswith("def "):
            keep = not line.startswith(("def _pb_", "def _st_"))
        if keep:
            out.append(line.split("#")[0])
    return out


def scalar_products(x, y):
    a = x[0] * y[1] + x[1] * y[0]
    return a * a + np.where(x[0] > 0.0, x[0] * y[0], y[1])


def test_scalar_smul_and_where_are_helper_calls():
    x, y = np.array([0.5, -1.5]), np.array([2.0, 0.25])
    src = _module(scalar_products, x, y, argnums=(0, 1))
    body = _bodies(src)
    assert any("_pb_smul_s(" in line for line in body)
    assert not any(re.search(r"\bif\b.*\belse\b", line) for line in body), "a conditional expression is left"
    ref = pb.grad(scalar_products, argnums=(0, 1), backend="interp")(x, y)
    out = pb.grad(scalar_products, argnums=(0, 1), backend="numba")(x, y)
    for r, o in zip(ref, out):
        np.testing.assert_allclose(o, r, rtol=1e-14)


def test_strong_product_zero_times_inf_through_the_helper():
    # d/dy (x * y) at x = 0 is 0 * the seed, and d/dx is y = inf: 0 * inf is 0 for the strong product
    x, y = np.array([0.0, 1.0]), np.array([np.inf, 2.0])
    ref = pb.grad(scalar_products, argnums=(0, 1), backend="interp")(x, y)
    out = pb.grad(scalar_products, argnums=(0, 1), backend="numba")(x, y)
    for r, o in zip(ref, out):
        np.testing.assert_array_equal(o, r)


def grow_rows(x, n):
    # a while loop of data-dependent length saving a 64-element row per iteration:
    # 300 iterations overflow the buffer's first 128 slots twice
    v = x.copy()
    k = 0
    s = 0.0
    while k < n:
        v = np.sin(v) * 0.5 + x
        s = s + np.sum(v * v)
        k = k + 1
    return s


def test_buffer_stores_print_in_place_and_grow():
    x = np.linspace(-1.0, 1.0, 64)
    src = _module(grow_rows, x, 300)
    body = _bodies(src)
    assert not any(re.search(r"_st_(push|pop|new)\d", line) for line in body), "a store helper is still called"
    assert any("_st_grow_float64(" in line for line in body)
    ref = pb.grad(grow_rows, backend="interp")(x, 300)
    out = pb.grad(grow_rows, backend="numba")(x, 300)
    np.testing.assert_allclose(out, ref, rtol=1e-12)



def vector_extremes(v):
    return np.max(v) * 2.0 + np.min(v[1:]) + np.max(v[::2])


@pytest.mark.parametrize("v", [np.array([0.5, -2.0, 3.0, 1.0]), np.array([0.5, np.nan, 3.0, -1.0]),
                               np.array([np.nan, 1.0, 2.0, 0.0]), np.array([-np.inf, -np.inf, 1.0, 7.0])])
def test_vector_min_max_loop_helpers(v):
    # full min/max of a vector print as a loop helper (NaN wins, as in NumPy), strided views too
    src = numba_backend.emit_prog(numba_backend.lower(pb.jit(vector_extremes).staged(v).prog), parallel=False)
    body = _bodies(src)
    assert any("_reduce_all_max_f64(" in line for line in body) and any("_reduce_all_min_f64(" in line for line in body)
    assert not any("np.max(" in line or "np.min(" in line for line in body)
    ref = vector_extremes(v)
    out = pb.jit(vector_extremes, backend="numba")(v)
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_allclose(pb.grad(vector_extremes, backend="numba")(v),
                               pb.grad(vector_extremes, backend="interp")(v), rtol=1e-14)


def _pair(A, i):
    return A[i, 0] * A[i, 1] - A[i, 1]


def reads_twice(A):
    # both calls of the small helper are inlined; their copies compute the same values
    return _pair(A, 0) * _pair(A, 0) + A[0, 0] * A[1, 1]


def test_inlined_copies_are_merged():
    A = np.array([[1.5, -2.0], [0.5, 3.0]])
    src = numba_backend.emit_prog(numba_backend.lower(pb.jit(reads_twice).staged(A).prog), parallel=False)
    body = src.split("def reads_twice(")[1].split("\n@njit")[0].splitlines()
    rhs = [m.group(1) for m in (re.match(r"\s+\w+ = (.+?)  # pb:", line) for line in body) if m]
    assert rhs and len(rhs) == len(set(rhs)), body   # no statement computes what an earlier one did
    assert pb.jit(reads_twice, backend="numba")(A) == reads_twice(A)
    np.testing.assert_allclose(pb.grad(reads_twice, backend="numba")(A), pb.grad(reads_twice, backend="interp")(A),
                               rtol=1e-14)
