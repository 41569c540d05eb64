"""Zero gates in the numba backend's fused loops (note [zero-gate]): a reverse
sweep skips the inner iterations whose cotangent is zero, only where every
contribution is provably an exact zero, and gives the same numbers as the
interpreter."""
import numpy as np
import pytest

import pullback as pb
from pullback.backends import numba_backend as nb
from pullback.passes.inline import inline_small


def source(jf, *args):
    return nb.emit_prog(inline_small(jf.staged(*args).prog), parallel=False)


def kmeans_cost(C, P):
    D = np.zeros((P.shape[0], C.shape[0]))
    for j in range(C.shape[0]):
        diff = P - C[j]
        D[:, j] = np.sum(diff * diff, axis=1)
    return np.sum(np.min(D, axis=1))


def kmeans_dir(C, P):
    J, H = pb.jvp(pb.grad(kmeans_cost), (C, P), (np.ones_like(C), np.zeros_like(P)))
    return J / H


def relu_cols(W, X):
    # the adjoint of max(., 0) is zero wherever the unit is off
    H = np.zeros((X.shape[0], W.shape[0]))
    for j in range(W.shape[0]):
        H[:, j] = np.maximum(np.sum(X * W[j], axis=1), 0.0)
    return np.sum(np.max(H, axis=1) ** 2)


@pytest.mark.parametrize("fun, argnums", [(kmeans_dir, None), (relu_cols, 0)])
def test_gate_fires_and_matches_interp(fun, argnums):
    rng = np.random.default_rng(1)
    A, B = rng.standard_normal((7, 3)), rng.standard_normal((40, 3))
    f = fun if argnums is None else pb.grad(fun, argnums=argnums)
    jn, ji = pb.jit(f, backend="numba", parallel=False), pb.jit(f, backend="interp")
    assert "zero gate" in source(jn, A, B)
    np.testing.assert_allclose(jn(A, B), ji(A, B), rtol=1e-12, atol=1e-12)


def test_gate_keeps_nonfinite_results():
    # an infinite primal with a zero cotangent: the strong product makes the
    # contribution 0, so the gated loop agrees with the interpreter exactly
    C = np.array([[0.0, 0.0], [5.0, 5.0]])
    P = np.array([[0.1, 0.2], [np.inf, 1.0], [4.9, 5.1]])
    g = pb.grad(kmeans_cost)
    got = pb.jit(g, backend="numba", parallel=False)(C, P)
    want = pb.jit(g, backend="interp")(C, P)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(np.nan_to_num(got), np.nan_to_num(want))


def plain_product_rows(W, X):
    # a plain product in the primal with a row-constant factor: no gate (0 * inf is NaN)
    s = X[:, :1] + 0.0
    Y = np.zeros((X.shape[0], W.shape[0]))
    for j in range(W.shape[0]):
        Y[:, j] = np.sum(np.broadcast_to(s, X.shape) * X * W[j], axis=1)
    return Y


def test_no_gate_without_a_zero_proof():
    rng = np.random.default_rng(2)
    W, X = rng.standard_normal((3, 4)), rng.standard_normal((5, 4))
    assert "zero gate" not in source(pb.jit(plain_product_rows, backend="numba", parallel=False), W, X)


def test_gate_counts_skipped_work():
    """The gated reverse sweep of k-means does O(n d) adjoint arithmetic per centroid
    only for that centroid's points: the interpreter's count is unchanged (it does
    not gate), so this checks the emitted structure: the gate sits outside the
    loop over coordinates."""
    rng = np.random.default_rng(3)
    C, P = rng.standard_normal((4, 3)), rng.standard_normal((30, 3))
    src = source(pb.jit(kmeans_dir, backend="numba", parallel=False), C, P)
    lines = src.splitlines()
    k = next(i for i, ln in enumerate(lines) if "zero gate" in ln)
    indent = len(lines[k]) - len(lines[k].lstrip())
    assert lines[k + 1].lstrip().startswith("for ") and len(lines[k + 1]) - len(lines[k + 1].lstrip()) > indent


def skin(t, P, w):
    # a tangent of ht's skinning: (n, b, 3) positions weighted per (vertex, bone) by w,
    # mostly zero; the jvp's strong product smul(P_tan, w) reads w by broadcasting
    posed = np.tanh(P * t)
    return np.sum(posed * w[:, :, None], axis=1)


def skin_jvp(t, P, w):
    return pb.jvp(lambda s: skin(s, P, w), (t,), (np.ones_like(t),))[1]


def _skin_args(rng, n=6, b=5):
    w = np.zeros((n, b))
    w[np.arange(n), rng.integers(0, b, n)] = rng.uniform(0.5, 1.0, n)
    return rng.standard_normal(3), rng.standard_normal((n, b, 3)), w


def test_operand_gate_fires_and_matches_interp():
    """An operand read by broadcasting (the weights, once per vertex and bone) gates
    the inner loop over coordinates when every contribution is its strong product."""
    rng = np.random.default_rng(4)
    t, P, w = _skin_args(rng)
    jn, ji = pb.jit(skin_jvp, backend="numba", parallel=False), pb.jit(skin_jvp, backend="interp")
    src = nb.emit_prog(nb.lower(jn.staged(t, P, w).prog), parallel=False)   # as compiled
    lines = src.splitlines()
    k = next(i for i, ln in enumerate(lines) if "zero gate" in ln)
    assert "pb:broadcast_to" in lines[k - 1] and "for " in lines[k + 1], lines[k - 1:k + 2]  # the weights, then loops
    np.testing.assert_allclose(jn(t, P, w), ji(t, P, w), rtol=1e-13, atol=1e-13)
    P[0, :, :] = np.inf                  # a zero weight's contribution stays 0 against an inf tangent
    P[1, :, 0] = np.nan
    got, want = jn(t, P, w), ji(t, P, w)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(np.nan_to_num(got), np.nan_to_num(want), rtol=1e-13, atol=1e-13)


def test_no_operand_gate_for_a_plain_product():
    """The primal's `posed * w` is a plain product (0 * inf is NaN): no gate."""
    rng = np.random.default_rng(5)
    t, P, w = _skin_args(rng)
    assert "zero gate" not in nb.emit_prog(nb.lower(pb.jit(skin, backend="numba").staged(t, P, w).prog),
                                           parallel=False)
