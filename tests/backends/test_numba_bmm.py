"""The batched small product compiled once per process (`numba_bmm._pb_bmm`; note
[small-matmul], "Shared batched products"): a stack of small products whose operands
have the result's batch axes calls one overload with literal sizes instead of a
helper printed into each module, so a second module of the process does not compile
it again; values are those of the batched loops (bit for bit) and NumPy's to
rounding; a broadcast operand keeps the module's helper."""
import numpy as np
import pytest

pytest.importorskip("numba")

import pullback as pb  # noqa: E402
from pullback.backends import interp, numba_bmm  # noqa: E402
from pullback.backends import numba_backend as nb  # noqa: E402

pytestmark = pytest.mark.usefixtures("private_cache")   # conftest.py

RNG = np.random.default_rng(11)


def stacked(a, b):
    return a @ b


def stacked_twice(a, b):           # the same signature, another module
    return (a @ b) * 2.0


def batch2(a, b):                  # two batch axes: flattened to one stack of 6
    return a @ b


def _compile(f, args):
    prog = pb.jit(f).staged(*args).prog
    return prog, nb.compile_prog(prog, parallel=False)


def _bmm_lines(src):
    return [ln for ln in src.splitlines() if "_pb_bmm(" in ln]


@pytest.mark.parametrize("f, shapes, dtype", [
    (stacked, [(5, 4, 3), (5, 3, 2)], np.float64),
    (stacked, [(7, 3, 3), (7, 3, 3)], np.float32),
    (stacked, [(4, 2, 5), (4, 5, 3)], np.int64),
    (batch2, [(2, 3, 4, 4), (2, 3, 4, 1)], np.float64),
], ids=["f64", "f32", "i64", "two-batch-axes"])
def test_stacks_call_the_shared_product(f, shapes, dtype):
    args = [(RNG.standard_normal(s) * 4).astype(dtype) for s in shapes]
    prog, fn = _compile(f, args)
    assert len(_bmm_lines(fn.source)) == 1 and "def _pb_bmatmul" not in fn.source, fn.source
    got = fn(*args)[0]
    assert got.dtype == dtype and got.shape == np.matmul(*args).shape
    np.testing.assert_array_equal(got, interp.run(prog, *args)[0]) if dtype == np.int64 else \
        np.testing.assert_allclose(got, np.matmul(*args), rtol=1e-5 if dtype == np.float32 else 1e-13)


def test_same_bits_as_the_module_helper():
    # sums left to right from zero: the same as the loops of the helper it replaces
    a, b = RNG.standard_normal((22, 4, 4)), RNG.standard_normal((22, 4, 4))
    _, fn = _compile(stacked, [a, b])
    want = np.zeros((22, 4, 4))
    for i in range(4):
        for j in range(4):
            s = np.zeros(22)
            for k in range(4):
                s = s + a[:, i, k] * b[:, k, j]
            want[:, i, j] = s
    np.testing.assert_array_equal(fn(a, b)[0], want)


def test_broadcast_stacks_keep_the_helper():
    a, b = RNG.standard_normal((1, 4, 3)), RNG.standard_normal((6, 3, 2))
    _, fn = _compile(stacked, [a, b])
    assert not _bmm_lines(fn.source) and "def _pb_bmatmul" in fn.source
    np.testing.assert_allclose(fn(a, b)[0], a @ b, rtol=1e-13)


def test_gradient_through_the_shared_product():
    a, b = RNG.standard_normal((3, 4, 3)), RNG.standard_normal((3, 3, 2))

    def loss(a, b):
        return np.sum(np.sin(a @ b))

    g = pb.grad(loss, argnums=(0, 1), backend="numba")(a, b)
    r = pb.grad(loss, argnums=(0, 1), backend="interp")(a, b)
    for x, y in zip(g, r):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-14)


def test_second_module_does_not_compile_it_again(numba_compiles):
    a, b = RNG.standard_normal((9, 2, 3)), RNG.standard_normal((9, 3, 4))   # sizes no other test uses
    for f in (stacked, stacked_twice):
        np.testing.assert_allclose(pb.jit(f, backend="numba")(a, b), f(a, b), rtol=1e-13)
    compiled = list(numba_compiles)
    shared = [m for m, q in compiled if m == numba_bmm.__name__]
    assert shared == [numba_bmm.__name__], compiled   # once, for the first module only
    assert len([m for m, _ in compiled if m.startswith("pullback_numba")]) >= 2, compiled


def test_python_form():
    a, b = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 4, 5))
    np.testing.assert_allclose(numba_bmm._pb_bmm(a, b, 2, 3, 4, 5), a @ b)
