"""Small products inside loops are loop nests in place (`numba_small_mm`, note
[small-matmul], "Inside loops"): no helper call per iteration, a result that
dies in its iteration written into a scratch array allocated once, a carried
result (`a = a @ r`) in a fresh array, and values bit for bit those of the
shared helper (the same sums in the same order) and equal to the interpreter's
to rounding."""
import re

import numpy as np
import pytest

pytest.importorskip("numba")

import pullback as pb  # noqa: E402
from pullback.backends import numba_backend as nb  # noqa: E402

pytestmark = pytest.mark.usefixtures("private_cache")   # conftest.py

RNG = np.random.default_rng(5)


def chain(a, r, v):
    out = np.zeros((6, 4))
    s = 0.0
    for t in range(6):
        a = a @ r              # carried to the next iteration: not scratch
        b = a @ r              # dies in the iteration: scratch
        w = b @ v              # matrix-vector
        u = v @ b              # vector-matrix
        s = s + v @ w + np.sum(u)   # a dot product: a scalar
        out[t] = w
    return out, s, a


def int_chain(a, r):
    for _ in range(5):
        a = a @ r + 1
    return a


def mixed(a, r):                   # float32 @ float64 in a loop
    acc = np.zeros((3, 3))
    for _ in range(4):
        acc = acc + a @ r
    return acc


def source(f, *args):
    return nb.emit_prog(nb.lower(pb.jit(f, backend="numba").staged(*args).prog), parallel=False)


def loop_body(src, fname):
    body = src.split(f"\ndef {fname}(")[1].split("\n@njit")[0]
    return [ln for ln in body.splitlines() if ln.startswith("        ")]   # below the top level


def _args():
    return 0.5 * RNG.standard_normal((4, 4)), 0.5 * RNG.standard_normal((4, 4)), RNG.standard_normal(4)


def test_products_in_loops_are_loop_nests():
    src = source(chain, *_args())
    body = loop_body(src, "chain")
    assert not [ln for ln in body if "_pb_mm" in ln], src
    assert sum("# pb:matmul" in ln for ln in body) > 20
    # b, w, u: written straight into their scratch arrays (no alias: `numba_scratch.bind`)
    assert len(re.findall(r"^\s+scratch\w*\[[\w, ]+\] = s\w*  # pb:matmul", src, flags=re.M)) == 3, src
    assert re.search(r"^\s+mm\w* = _pb_empty\(\(4, 4\), np\.float64\)  # pb:matmul", src, flags=re.M)


def test_values():
    args = _args()
    got = pb.jit(chain, backend="numba", parallel=False)(*args)
    want = pb.jit(chain, backend="interp")(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-13)
    a, r, _ = args
    np.testing.assert_allclose(got[2], a @ np.linalg.matrix_power(r, 6), rtol=1e-12)


def test_same_bits_as_the_shared_helper():
    """The same statement outside a loop calls the shared helper: one step of the
    chain, taken both ways, agrees bit for bit."""
    a, r, _ = _args()

    def once(a, r):
        return a @ r

    def looped(a, r):
        for _ in range(1):
            a = a @ r
        return a

    outside = pb.jit(once, backend="numba")(a, r)
    assert "_pb_mm22" in source(once, a, r)
    inside = pb.jit(looped, backend="numba")(a, r)
    np.testing.assert_array_equal(inside, outside)


def test_integer_and_mixed_products():
    a, r = RNG.integers(-2, 3, (3, 3)), RNG.integers(-2, 3, (3, 3))
    got = pb.jit(int_chain, backend="numba")(a, r)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, int_chain(a, r))
    a32, r64 = RNG.standard_normal((3, 3)).astype(np.float32), RNG.standard_normal((3, 3))
    assert not [ln for ln in loop_body(source(mixed, a32, r64), "mixed") if "_pb_mm" in ln]
    np.testing.assert_allclose(pb.jit(mixed, backend="numba")(a32, r64), mixed(a32, r64), rtol=1e-12)


def test_gradient_through_a_loop_of_products():
    def f(a, r, v):
        out, s, a = chain(a, r, v)
        return np.sum(out * out) + s + np.sum(a)

    args = _args()
    want = pb.grad(f, argnums=(0, 1, 2), backend="interp")(*args)
    got = pb.grad(f, argnums=(0, 1, 2), backend="numba")(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-12)
