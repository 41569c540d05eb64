"""The numba backend compiles every np.linalg function and stacked matmul
(LAPACK/BLAS through numba's np.linalg, stacks looped in generated helpers):
one bundle per test, so numba compiles a few modules, not one per function.
Slow: compiling the bundles takes minutes on a small machine."""
import numpy as np
import pytest

import pullback as pb

pytestmark = pytest.mark.slow

RNG = np.random.default_rng(3)
X = RNG.normal(size=(3, 3))
Y = RNG.normal(size=(4, 3))
Z = RNG.normal(size=(2, 3, 4))


def bundle(x, y, z):
    """A weighted sum of every function's result (2-D and stacked operands)."""
    s = x @ x.T + 3 * np.eye(3)
    L = np.linalg.cholesky(s)
    q, r = np.linalg.qr(y)
    qw, rw = np.linalg.qr(y.T)
    w, v = np.linalg.eigh(s + np.diag([0.0, 4.0, 8.0]))
    u, sv, vh = np.linalg.svd(y, full_matrices=False)
    uw, svw, vhw = np.linalg.svd(y.T, full_matrices=False)
    p = np.linalg.pinv(y)
    xl = np.linalg.lstsq(y, y[:, 0] + 1.0)[0]
    b = z @ y                                     # a stack times one matrix: one BLAS call
    c = np.swapaxes(z, -1, -2) @ z[0]             # broadcast over the left stack
    d = z @ np.swapaxes(z, -1, -2)                # stack times stack
    zs = d + 5 * np.eye(3)
    e = np.linalg.det(zs) + np.sum(np.linalg.inv(zs)) + np.sum(np.linalg.solve(zs, z)) + np.linalg.slogdet(s)[1]
    bl = np.linalg.cholesky(zs)
    bw = np.linalg.eigvalsh(zs)
    bs = np.linalg.svd(z, compute_uv=False)
    bq = np.linalg.qr(z)[1]
    bp = np.linalg.pinv(z)
    mp = np.linalg.matrix_power(s * 0.1, 3) + np.linalg.matrix_power(s, -1)
    return (np.sum(L) + np.sum(q * 1.5) + np.sum(r) + np.sum(qw * rw[:, :1]) + np.sum(w)
            + np.sum(v * v[:1]) + np.sum(sv) + np.sum(u * vh[:, 0]) + np.sum(svw * uw[0])
            + 0.1 * np.sum(vhw * uw[0][:, None]) + np.sum(p) + np.sum(xl) + np.sum(b) + np.sum(c) + np.sum(d)
            + np.sum(e) + np.sum(bl) + np.sum(bw) + np.sum(bs) + np.sum(bq) + np.sum(bp)
            + np.linalg.norm(y, 2) + np.linalg.norm(y, "nuc") + np.sum(mp))


def test_numba_bundle_values_and_gradient():
    np.testing.assert_allclose(pb.jit(bundle, backend="numba")(X, Y, Z), bundle(X, Y, Z), rtol=1e-10)
    g = pb.grad(bundle, argnums=(0, 1, 2), backend="numba")(X, Y, Z)
    want = pb.grad(bundle, argnums=(0, 1, 2), backend="interp")(X, Y, Z)
    for a, b in zip(g, want):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)


def test_numba_forward_mode_and_complete_factors():
    def f(x, z):
        s = x @ x.T + 3 * np.eye(3)
        return (np.linalg.cholesky(s), np.linalg.eigvalsh(z @ np.swapaxes(z, -1, -2)),
                np.linalg.svd(z, compute_uv=False), np.linalg.qr(z)[1], np.linalg.inv(s) @ z)

    tx, tz = RNG.normal(size=X.shape), RNG.normal(size=Z.shape)
    _, got = pb.jvp(f, (X, Z), (tx, tz), backend="numba")
    _, want = pb.jvp(f, (X, Z), (tx, tz), backend="interp")
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)

    def full(y):
        return np.linalg.qr(y, mode="complete"), np.linalg.svd(y)[0] @ np.linalg.svd(y)[0].T

    (q, r), uu = pb.jit(full, backend="numba")(Y)
    wq, wr = np.linalg.qr(Y, mode="complete")
    np.testing.assert_allclose(q, wq, atol=1e-12)
    np.testing.assert_allclose(r, wr, atol=1e-12)
    np.testing.assert_allclose(uu, np.eye(4), atol=1e-12)
