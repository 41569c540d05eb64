"""Products of small static shapes on numba are loop nests, not BLAS calls
(`libcalls.linalg`, note [small-matmul]): the 2-D forms through one shared
helper per operand ranks, stacks through the batched helper with the loops
inside; larger products, integer products and mixed dtypes keep their BLAS or
NumPy forms. Values agree with the interpreter (NumPy's matmul) to rounding,
and a gradient through them with the interpreter's."""
import re

import numpy as np
import pytest

pytest.importorskip("numba")

import pullback as pb
from pullback.backends import interp
from pullback.backends import numba_backend as nb
from pullback.backends.libcalls.linalg import SMALL_MATMUL

pytestmark = pytest.mark.usefixtures("private_cache")   # conftest.py

RNG = np.random.default_rng(7)


def chain(a, b, c):                # 4x4 products in a chain, as ht's bone transforms
    return a @ b @ c


def mat_vec(a, v):
    return a @ v


def vec_mat(v, a):
    return v @ a


def vec_vec(v, w):
    return v @ w


def stacked(a, b):                 # (5, 4, 3) @ (5, 3, 2)
    return a @ b


def broadcast_stack(a, b):         # (1, 4, 3) @ (6, 3, 2): the first operand is broadcast
    return a @ b


def big(a, b):                     # 9 x 9 x 9 multiply-adds: above SMALL_MATMUL, BLAS
    return a @ b


CASES = [(chain, [(4, 4)] * 3), (mat_vec, [(4, 3), (3,)]), (vec_mat, [(3,), (3, 5)]),
         (vec_vec, [(6,), (6,)]), (stacked, [(5, 4, 3), (5, 3, 2)]),
         (broadcast_stack, [(1, 4, 3), (6, 3, 2)])]


def _compile(f, args):
    prog = pb.jit(f).staged(*args).prog
    return prog, nb.compile_prog(prog, parallel=False)


def _matmul_lines(src):
    return [ln for ln in src.splitlines() if ln.rstrip().endswith("# pb:matmul")]


@pytest.mark.parametrize("f, shapes", CASES, ids=[c[0].__name__ for c in CASES])
def test_small_products_are_loops(f, shapes):
    args = [RNG.standard_normal(s) for s in shapes]
    prog, fn = _compile(f, args)
    lines = _matmul_lines(fn.source)
    assert lines and not any("@" in ln or "_pb_blas" in ln for ln in lines), fn.source
    assert "xf[b] @ yf[b]" not in fn.source and "np.dot" not in fn.source
    got = fn(*args)[0]
    np.testing.assert_allclose(got, interp.run(prog, *args)[0], rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(got, f(*args), rtol=1e-13, atol=1e-14)


def test_only_a_broadcast_operand_is_broadcast():
    args = [RNG.standard_normal(s) for s in [(1, 4, 3), (6, 3, 2)]]
    _, fn = _compile(broadcast_stack, args)
    assert fn.source.count("np.broadcast_to(") == 1, fn.source
    _, fn = _compile(stacked, [RNG.standard_normal(s) for s in [(5, 4, 3), (5, 3, 2)]])
    assert "np.broadcast_to(" not in fn.source   # numba compiles its shape-error formatting


def test_one_helper_per_operand_ranks():
    _, fn = _compile(chain, [RNG.standard_normal((4, 4))] * 3)
    assert len(set(re.findall(r"_pb_mm22_[0-9a-f]{8}\(", fn.source))) == 1
    assert len(re.findall(r"^def _pb_mm", fn.source, flags=re.M)) == 1


def test_large_and_mixed_products_keep_their_forms():
    a, b = RNG.standard_normal((9, 9)), RNG.standard_normal((9, 9))
    assert 9 * 9 * 9 > SMALL_MATMUL
    prog, fn = _compile(big, [a, b])
    assert all("_pb_blas(" in ln for ln in _matmul_lines(fn.source)) and "_pb_mm" not in fn.source
    np.testing.assert_allclose(fn(a, b)[0], a @ b, rtol=1e-13)


@pytest.mark.parametrize("shapes", [[(3, 3), (3, 3)], [(12, 12), (12, 12)]], ids=["small", "blas"])
def test_mixed_dtypes(shapes):
    """float32 @ float64 and int64 @ float64: NumPy's promotion (numba's `@` takes neither)."""
    a, b = RNG.standard_normal(shapes[0]), RNG.standard_normal(shapes[1])
    for x, y in ((a.astype(np.float32), b), (a, np.round(b * 4).astype(np.int64))):
        _, fn = _compile(big, [x, y])
        got = fn(x, y)[0]
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, x @ y, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("shapes", [[(3, 3), (3, 3)], [(9, 9), (9, 9)], [(2, 9, 9), (2, 9, 9)], [(5,), (5,)],
                                    [(4, 9, 9), (9, 9)], [(7,), (3, 7, 2)]])
def test_integer_products_are_loops_at_any_size(shapes):
    args = [RNG.integers(-5, 5, s) for s in shapes]   # numba's `@` has no integer form
    _, fn = _compile(big, args)
    got = fn(*args)[0]
    assert "_pb_blas" not in fn.source
    assert np.asarray(got).dtype == np.int64
    np.testing.assert_array_equal(got, args[0] @ args[1])


def test_float32_products_stay_float32():
    a, b = RNG.standard_normal((4, 4)).astype(np.float32), RNG.standard_normal((4, 2)).astype(np.float32)
    _, fn = _compile(big, [a, b])
    assert "_pb_mm22" in fn.source
    got = fn(a, b)[0]
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, a @ b, rtol=1e-5)


def test_empty_inner_axis_gives_zeros():
    a, b = np.zeros((3, 0)), np.zeros((0, 2))
    _, fn = _compile(big, [a, b])
    np.testing.assert_array_equal(fn(a, b)[0], np.zeros((3, 2)))


def test_gradient_through_small_products():
    def f(a, b, v):
        return np.sum(np.tanh(a @ b @ v) * (v @ a))

    args = [RNG.standard_normal((4, 4)), RNG.standard_normal((4, 4)), RNG.standard_normal(4)]
    want = pb.grad(f, argnums=(0, 1, 2), backend="interp")(*args)
    got = pb.grad(f, argnums=(0, 1, 2), backend="numba")(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-13)


def test_dot_product_feeds_scalar_code():
    # the vector-vector helper returns a float, not an optional one (a `return` inside its loop
    # did): numba could not type the strong product that reads it
    a, b = RNG.standard_normal((2, 2)), RNG.standard_normal((2, 2))

    def g(a, b, ta, tb):
        return pb.jvp(lambda a, b: np.vdot(a, b) * a, (a, b), (ta, tb))[1]

    want = pb.jit(g, backend="interp")(a, b, b, a)
    np.testing.assert_allclose(pb.jit(g, backend="numba")(a, b, b, a), want, rtol=1e-13)
