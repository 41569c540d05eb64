"""Products of small static shapes on numba are loop nests, not BLAS calls
(`libcalls.linalg`, note [small-matmul]): the 2-D forms through one shared
helper per operand ranks, stacks through the batched helper with the loops
inside; larger products, integer products and mixed dtypes keep their BLAS or
NumPy forms. 2-D products with an inner axis of at most SMALL_K entries are
loops at any other size, through a helper whose text does not depend on the
row count. Values agree with the interpreter (NumPy's matmul) to rounding,
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
    assert all("_pb_matmul(" in ln for ln in _matmul_lines(fn.source)) and "_pb_mm" not in fn.source
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


# -- narrow inner axes: loops at any other size (note [small-matmul], "Narrow inner axes") ---------

from pullback.backends.libcalls.linalg import SMALL_K  # noqa: E402


def skin(p, t):                    # ht's skinning: (vertices, 4) @ (4, 3 * bones), the second a transpose
    return p @ t.T


def narrow_stack(a, b):            # (5, 20, 3) @ (3, 7): the stack folded into 100 rows
    return a @ b


NARROW = [(big, [(95, 4), (4, 66)]), (big, [(95, 3), (3, 3)]), (skin, [(95, 4), (66, 4)]),
          (big, [(40, SMALL_K), (SMALL_K, 20)]), (narrow_stack, [(5, 20, 3), (3, 7)])]


@pytest.mark.parametrize("f, shapes", NARROW, ids=lambda c: str(c) if isinstance(c, list) else c.__name__)
def test_narrow_products_are_loops(f, shapes):
    args = [RNG.standard_normal(s) for s in shapes]
    prog, fn = _compile(f, args)
    lines = _matmul_lines(fn.source)
    assert lines and all("_pb_mmk(" in ln for ln in lines), fn.source
    assert "_pb_blas" not in fn.source
    got = fn(*args)[0]
    np.testing.assert_allclose(got, f(*args), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(got, interp.run(prog, *args)[0], rtol=1e-13, atol=1e-13)


def test_wider_and_larger_products_stay_blas():
    for shapes in ([(40, SMALL_K + 1), (SMALL_K + 1, 20)], [(2000, 4), (4, 200)]):   # 1.6M multiply-adds
        args = [RNG.standard_normal(s) for s in shapes]
        _, fn = _compile(big, args)
        assert "_pb_mmk" not in fn.source and all("_pb_matmul(" in ln for ln in _matmul_lines(fn.source))
        np.testing.assert_allclose(fn(*args)[0], args[0] @ args[1], rtol=1e-12)


def test_narrow_products_keep_dtypes():
    a32, b32 = RNG.standard_normal((50, 3)).astype(np.float32), RNG.standard_normal((3, 20)).astype(np.float32)
    for x, y, want in ((a32, b32, np.float32), (a32, b32.astype(np.float64), np.float64),
                       (np.round(4 * a32).astype(np.int64), b32.astype(np.float64), np.float64)):
        _, fn = _compile(big, [x, y])
        assert "_pb_mmk" in fn.source
        got = fn(x, y)[0]
        assert got.dtype == want
        np.testing.assert_allclose(got, x @ y, rtol=1e-5 if want == np.float32 else 1e-12, atol=1e-5)


def test_gradient_through_narrow_products():
    def f(p, t):
        return np.sum(np.tanh(p @ t.T) ** 2)

    args = [RNG.standard_normal((30, 4)), RNG.standard_normal((18, 4))]
    want = pb.grad(f, argnums=(0, 1), backend="interp")(*args)
    got = pb.grad(f, argnums=(0, 1), backend="numba")(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-13)


def test_narrow_helper_keeps_modules_shape_generic():
    """Row counts and wide column counts come from the operands, so two sizes print
    the same call, and here the same module but for its signature docstrings: one
    compiled module serves both (note [shape-generic])."""
    srcs = [nb.emit_prog(nb.lower(pb.jit(big).staged(RNG.standard_normal((m, 4)),
                                                     RNG.standard_normal((4, n))).prog), parallel=False)
            for m, n in ((40, 30), (70, 50))]
    calls = [re.findall(r"_pb_mmk\(\w+, \w+, \d+, \d+\)", s) for s in srcs]
    assert calls[0] == calls[1] == ["_pb_mmk(a, b, 4, 0)"]
    code = [[ln for ln in s.splitlines() if '"""' not in ln] for s in srcs]
    assert code[0] == code[1]


def test_narrow_products_of_strided_views():
    def f(a, b):                   # both operands strided views (numba layout "A")
        return a[::2, 1:] @ b[:, ::3]

    a, b = RNG.standard_normal((80, 5)), RNG.standard_normal((4, 60))
    prog, fn = _compile(f, [a, b])
    assert "_pb_mmk(" in fn.source
    np.testing.assert_allclose(fn(a, b)[0], f(a, b), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(pb.jit(f, backend="numba", parallel=True)(a, b), f(a, b), rtol=1e-13, atol=1e-13)
