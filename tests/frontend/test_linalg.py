"""np.linalg and stacked matmul (issue 10, frontend/numpy_linalg.py, ir/prims/linalg.py
and decomp.py): values equal NumPy's on interp and pysource, derivatives pass
check_grads in both modes (order 2 for the core functions), stacked inputs map
over their leading axes, and the refused cases are located errors."""
import numpy as np
import pytest

import pullback as pb
from pullback.testing import check_grads

RNG = np.random.default_rng(7)
SQ = RNG.normal(size=(3, 3))
TALL = RNG.normal(size=(4, 3))
WIDE = RNG.normal(size=(3, 5))
STACK = RNG.normal(size=(2, 3, 3))
STACK_T = RNG.normal(size=(2, 4, 3))
VEC = RNG.normal(size=3)
I3 = np.eye(3)


def spd(a):
    """A symmetric positive definite matrix (stack) made from a."""
    return a @ np.swapaxes(a, -1, -2) + 3.0 * np.eye(a.shape[-1])


def sym(a):
    return a + np.swapaxes(a, -1, -2)


def _svd_uv(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    # column j of U times Vh[j, 0]: independent of the sign of the pair (u_j, v_j)
    return u * np.expand_dims(vh[..., 0], -2), s


def _eigvec(a):
    w, v = np.linalg.eigh(sym(a))
    return v * v[..., :1, :]   # each column times its first entry: independent of its sign


# name: (function, arguments, derivative order checked)
CASES = {
    "cholesky": (lambda a: np.linalg.cholesky(spd(a)), (SQ,), 2),
    "cholesky_upper": (lambda a: np.linalg.cholesky(spd(a), upper=True), (SQ,), 1),
    "cholesky_raw": (lambda a: np.linalg.cholesky(a + 4 * I3), (SQ,), 2),   # reads the lower triangle only
    "cholesky_raw_upper": (lambda a: np.linalg.cholesky(a + 4 * I3, upper=True), (SQ,), 1),   # the upper one
    "solve": (lambda a, b: np.linalg.solve(a + 3 * I3, b), (SQ, VEC), 2),
    "solve_mat": (lambda a, b: np.linalg.solve(a + 3 * I3, b), (SQ, TALL.T), 1),
    "inv": (lambda a: np.linalg.inv(a + 3 * I3), (SQ,), 2),
    "det": (lambda a: np.linalg.det(a), (SQ,), 2),
    "slogdet": (lambda a: np.linalg.slogdet(a)[1], (SQ,), 2),
    "eigvalsh": (lambda a: np.linalg.eigvalsh(sym(a)), (SQ,), 2),
    "eigh_w": (lambda a: np.linalg.eigh(sym(a))[0], (SQ,), 2),
    "eigh_upper": (lambda a: np.linalg.eigvalsh(a, UPLO="U"), (SQ,), 2),   # reads the upper triangle only
    "eigh_raw": (lambda a: np.linalg.eigh(a)[0], (SQ,), 2),
    "eigh_v": (_eigvec, (SQ,), 2),
    "svd_s": (lambda a: np.linalg.svd(a, compute_uv=False), (TALL,), 2),
    "svd_s_wide": (lambda a: np.linalg.svd(a, compute_uv=False), (WIDE,), 2),
    "svd_square_full": (lambda a: np.linalg.svd(a)[1] + np.abs(np.linalg.svd(a)[0][0]), (SQ,), 1),
    "svd_uv_tall": (lambda a: _svd_uv(a)[0], (TALL,), 2),
    "svd_uv_wide": (lambda a: _svd_uv(a)[0], (WIDE,), 1),
    "svd_vh_wide": (lambda a: (lambda u, s, vh: vh * u[0][:, None])(*np.linalg.svd(a, full_matrices=False)),
                    (WIDE,), 1),
    "qr_q": (lambda a: np.linalg.qr(a)[0], (TALL,), 2),
    "qr_r": (lambda a: np.linalg.qr(a, mode="r"), (TALL,), 1),
    "qr_square": (lambda a: np.linalg.qr(a).Q * 2.0 + np.linalg.qr(a).R, (SQ,), 1),
    "qr_wide": (lambda a: np.linalg.qr(a)[0] @ np.linalg.qr(a)[1] ** 2, (WIDE,), 1),
    "qr_complete_wide": (lambda a: np.linalg.qr(a, mode="complete")[1], (WIDE,), 1),
    "pinv": (lambda a: np.linalg.pinv(a), (TALL,), 2),
    "pinv_wide": (lambda a: np.linalg.pinv(a), (WIDE,), 1),
    "lstsq": (lambda a, b: np.linalg.lstsq(a, b)[0], (TALL, RNG.normal(size=4)), 1),
    "lstsq_mat": (lambda a, b: np.linalg.lstsq(a, b)[0], (WIDE, RNG.normal(size=(3, 2))), 1),
    "lstsq_resid": (lambda a, b: np.linalg.lstsq(a, b)[1] + np.linalg.lstsq(a, b)[3][0], (TALL, RNG.normal(size=4)), 1),
    "matrix_power": (lambda a: np.linalg.matrix_power(a, 5), (SQ * 0.5,), 2),
    "matrix_power_neg": (lambda a: np.linalg.matrix_power(a + 3 * I3, -3), (SQ,), 1),
    "matrix_power_0": (lambda a: np.linalg.matrix_power(a, 0) + a, (SQ,), 1),
    "norm_2": (lambda a: np.linalg.norm(a, 2), (TALL,), 2),
    "norm_m2": (lambda a: np.linalg.norm(a, -2), (WIDE,), 1),
    "norm_nuc": (lambda a: np.linalg.norm(a, "nuc"), (TALL,), 2),
    "norm_2_axes": (lambda a: np.linalg.norm(a, 2, axis=(2, 0), keepdims=True), (STACK_T.transpose(1, 0, 2),), 1),
    # stacks: every function maps over the leading axes
    "b_matmul_mat": (lambda a, b: a @ b, (STACK_T, SQ), 2),
    "b_mat_matmul": (lambda a, b: a @ b, (TALL, STACK), 2),
    "b_matmul_bcast": (lambda a, b: a @ b, (STACK_T.reshape(2, 1, 4, 3), STACK), 1),
    "b_matmul_vec": (lambda a, b: a @ b, (STACK_T, VEC), 1),
    "b_vec_matmul": (lambda a, b: b @ a, (STACK_T, RNG.normal(size=4)), 1),
    "b_np_matmul": (lambda a, b: np.matmul(a, np.swapaxes(b, -1, -2)), (STACK_T, STACK_T), 1),
    "b_solve": (lambda a, b: np.linalg.solve(a + 3 * I3, b), (STACK, VEC), 1),
    "b_solve_mat": (lambda a, b: np.linalg.solve(a + 3 * I3, b), (STACK, TALL.T), 1),
    "b_inv": (lambda a: np.linalg.inv(a + 3 * I3), (STACK,), 2),
    "b_det": (lambda a: np.linalg.det(a), (STACK,), 2),
    "b_slogdet": (lambda a: np.linalg.slogdet(a + 3 * I3).logabsdet, (STACK,), 1),
    "b_cholesky": (lambda a: np.linalg.cholesky(spd(a)), (STACK,), 2),
    "b_eigvalsh": (lambda a: np.linalg.eigvalsh(sym(a)), (STACK,), 2),
    "b_eigh_v": (_eigvec, (STACK,), 1),
    "b_svd_s": (lambda a: np.linalg.svd(a, compute_uv=False), (STACK_T,), 2),
    "b_svd_uv": (lambda a: _svd_uv(a)[0], (STACK_T,), 1),
    "b_qr": (lambda a: np.linalg.qr(a)[0] + np.linalg.qr(a)[1][..., :1, :], (STACK_T,), 1),
    "b_pinv": (lambda a: np.linalg.pinv(a), (STACK_T,), 1),
    "b_matrix_power": (lambda a: np.linalg.matrix_power(a, 3), (STACK,), 1),
    "b_norm_2": (lambda a: np.linalg.norm(a, 2, axis=(-2, -1)), (STACK_T,), 1),
    "multi_dot": (lambda a, b, c: np.linalg.multi_dot([a, b, c, a]), (SQ, WIDE, WIDE.T), 2),
    "multi_dot_vec": (lambda a, b, v: np.linalg.multi_dot([v, a, b]), (SQ, WIDE, VEC), 1),
    "cond": (lambda a: np.linalg.cond(a), (STACK_T,), 2),
    "cond_fro": (lambda a: np.linalg.cond(a + 3 * I3, "fro"), (SQ,), 1),
    "matrix_transpose": (lambda a: np.linalg.matrix_transpose(a), (STACK_T,), 1),
    "la_diagonal": (lambda a: np.linalg.diagonal(a, offset=-1), (STACK_T,), 1),
    "la_trace": (lambda a: np.linalg.trace(a, offset=1), (STACK_T,), 1),
    "vecdot": (lambda a, b: np.linalg.vecdot(a, b, axis=1), (STACK_T, STACK_T[::-1]), 1),
    "la_outer": (lambda a: np.linalg.outer(a, a[:2]), (VEC,), 1),
    "la_tensordot": (lambda a, b: np.linalg.tensordot(a, b, axes=1), (TALL, SQ), 1),
    "la_cross": (lambda a, b: np.linalg.cross(a, b), (VEC, VEC[::-1] * 2.0), 1),
    "matrix_norm": (lambda a: np.linalg.matrix_norm(a, ord="nuc", keepdims=True), (STACK_T,), 1),
    "vector_norm": (lambda a: np.linalg.vector_norm(a, axis=(0, 2), ord=3), (STACK_T,), 1),
    "vector_norm_all": (lambda a: np.linalg.vector_norm(a), (STACK_T,), 1),
    "dot_stack": (lambda a, b: np.dot(a, b), (STACK_T, RNG.normal(size=(2, 3, 2))), 1),
    "dot_method_stack": (lambda a, b: a.dot(b), (STACK, VEC), 1),
}


@pytest.mark.parametrize("backend", ["interp", "pysource"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_numpy(name, backend):
    f, args, _ = CASES[name]
    got = pb.jit(f, backend=backend)(*args)
    np.testing.assert_allclose(got, f(*args), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("backend", ["interp", "pysource"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_derivatives(name, backend):
    f, args, order = CASES[name]
    check_grads(f, args, modes=("fwd", "rev"), order=order, backend=backend, rtol=1e-4, atol=1e-6)


def test_stacks_match_a_loop():
    """A stacked call equals the per-matrix calls, derivatives included."""
    def stacked(a):
        return np.sum(np.linalg.cholesky(spd(a)) ** 2) + np.sum(np.linalg.svd(a, compute_uv=False))

    def looped(a):
        return sum(np.sum(np.linalg.cholesky(spd(a[i])) ** 2) + np.sum(np.linalg.svd(a[i], compute_uv=False))
                   for i in range(a.shape[0]))

    a = RNG.normal(size=(3, 4, 4))
    np.testing.assert_allclose(pb.grad(stacked, backend="interp")(a), pb.grad(looped, backend="interp")(a),
                               rtol=1e-10, atol=1e-12)


def test_repeated_values_keep_values_only_derivatives_finite():
    """At repeated eigen/singular values the value-only rules stay defined (no NaN),
    also when the vectors are an unused result of a called function (zero cotangent)."""
    def inner(a):
        u, s, vh = np.linalg.svd(a, full_matrices=False)
        w, v = np.linalg.eigh(a)
        return s, u, w, v

    def f(a):
        r = inner(a)
        return np.sum(r[0]) + np.sum(r[2] ** 2)

    a = np.eye(3)   # all eigen/singular values equal
    for backend in ("interp", "pysource"):
        g = pb.grad(f, backend=backend)(a)
        np.testing.assert_allclose(g, np.eye(3) + 2 * np.eye(3), atol=1e-12)
        _, t = pb.jvp(lambda x: np.sum(np.linalg.eigvalsh(x) ** 2) + np.linalg.norm(x, "nuc"), (a,), (SQ + SQ.T,),
                      backend=backend)
        assert np.isfinite(t) and abs(t - (2 * np.trace(SQ + SQ.T) + np.trace(SQ + SQ.T) / 1.0)) < 1e-10
    # the norm ord 2 of a matrix with a repeated largest singular value: a subgradient, not NaN
    assert np.all(np.isfinite(pb.grad(lambda x: np.linalg.norm(x, 2), backend="interp")(np.eye(3))))


def test_eigenvector_derivative_at_repeated_values():
    """The eigenvector rule divides by eigenvalue gaps: at a repeated eigenvalue it is
    inf/NaN (as JAX), never a finite wrong number, unless the cotangent has no
    component mixing the repeated pair (then that part is an exact zero)."""
    a = np.diag([1.0, 1.0, 2.0])
    c = np.array([1.0, 2.0, 3.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        g = pb.grad(lambda x: np.sum(np.linalg.eigh(x)[1][:, 0] * c), backend="interp")(a)
    assert not np.all(np.isfinite(g))
    g = pb.grad(lambda x: np.sum(np.linalg.eigh(x)[1] ** 3), backend="interp")(a)
    np.testing.assert_array_equal(g, np.zeros((3, 3)))   # rotating the pair leaves the sum of cubes flat
    _, t = pb.jvp(lambda x: np.linalg.eigh(x)[1], (a,), (np.diag([0.5, -1.0, 2.0]),), backend="interp")
    np.testing.assert_array_equal(t, np.zeros((3, 3)))   # a diagonal tangent keeps the eigenvectors


def test_lstsq_returns_numpy_tuple():
    a, b = TALL, RNG.normal(size=(4, 2))
    for backend in ("interp", "pysource"):
        x, res, rank, s = pb.jit(lambda a, b: np.linalg.lstsq(a, b), backend=backend)(a, b)
        wx, wres, wrank, ws = np.linalg.lstsq(a, b)
        np.testing.assert_allclose(x, wx, rtol=1e-10)
        np.testing.assert_allclose(res, wres, rtol=1e-10)
        assert int(rank) == wrank
        np.testing.assert_allclose(s, ws, rtol=1e-12)
    x, res, rank, s = pb.jit(lambda a, b: np.linalg.lstsq(a, b), backend="interp")(WIDE, VEC)
    assert res.shape == (0,) and int(rank) == 3


def test_complete_qr_value_matches_numpy():
    q, r = pb.jit(lambda a: np.linalg.qr(a, mode="complete"), backend="interp")(TALL)
    wq, wr = np.linalg.qr(TALL, mode="complete")
    np.testing.assert_allclose(q, wq, atol=1e-12)
    np.testing.assert_allclose(r, wr, atol=1e-12)
    u, s, vh = pb.jit(lambda a: np.linalg.svd(a), backend="pysource")(TALL)
    assert u.shape == (4, 4) and vh.shape == (3, 3)


def _located(fn, *args, match, how=pb.grad):
    with pytest.raises(pb.PullbackError) as ei:
        how(fn, backend="interp")(*args)
    msg = str(ei.value)
    assert "test_linalg.py" in msg, msg
    assert match in msg, msg
    return msg


def test_full_matrices_svd_of_non_square_is_a_located_error():
    def f(a):
        u, s, vh = np.linalg.svd(a)
        return np.sum(u) + np.sum(s)

    msg = _located(f, TALL, match="full_matrices=True")
    assert "full_matrices=False" in msg
    assert "np.linalg.svd(a)" in msg   # the user's line is quoted
    _located(lambda a: np.sum(np.linalg.svd(a)[2]), WIDE, match="full_matrices=True",
             how=lambda f, backend: lambda x: pb.jvp(f, (x,), (x,), backend=backend))


def test_complete_qr_of_tall_matrix_is_a_located_error():
    msg = _located(lambda a: np.sum(np.linalg.qr(a, mode="complete")[0]), TALL, match="mode='complete'")
    assert "mode='reduced'" in msg


@pytest.mark.parametrize("fn,args,match", [
    (lambda a: np.linalg.cholesky(a), (TALL,), "square matrix"),
    (lambda a: np.linalg.inv(a), (VEC,), "square matrix"),
    (lambda a: np.linalg.eigh(a)[0], (TALL,), "square matrix"),
    (lambda a: np.linalg.svd(a, hermitian=True)[1], (SQ,), "hermitian=True"),
    (lambda a: np.linalg.lstsq(a, a[..., 0])[0], (STACK_T,), "one matrix"),
    (lambda a: np.linalg.qr(a, mode="raw")[0], (TALL,), "mode='raw'"),
    (lambda a: a @ a, (STACK_T,), "inner dimensions"),
    (lambda a: a @ np.ones((3, 3, 3)), (STACK,), "do not broadcast"),
    (lambda a: np.linalg.norm(a, 3), (SQ,), "unknown ord=3"),
], ids=["cholesky", "inv", "eigh", "svd_hermitian", "lstsq_stack", "qr_raw", "matmul_inner", "matmul_batch",
        "norm_ord"])
def test_bad_input_is_a_located_error(fn, args, match):
    _located(fn, *args, match=match, how=pb.jit)


def test_cheap_gradients():
    """The gradient's work is a small constant times the primal's, at two sizes
    (operation counts on the interpreter): decompositions and stacked matmul."""
    from pullback.backends import interp
    from pullback.frontend import stage
    from pullback.passes.vjp import vjp_prog

    def f(a):
        s = spd(a)
        return (np.sum(np.linalg.cholesky(s)) + np.sum(np.linalg.eigvalsh(s)) + np.linalg.norm(a, "nuc")
                + np.sum(np.linalg.qr(a)[1]) + np.sum(np.linalg.pinv(a)) + np.sum(a @ a))

    def g(a):
        return np.sum(np.tanh(a @ a[0]) @ a)

    for fn, shapes in ((f, ((6, 6), (24, 24))), (g, ((4, 5, 5), (64, 5, 5)))):
        ratios = []
        for shape in shapes:
            x = np.random.default_rng(0).normal(size=shape)
            st = stage(fn, (x,))
            p, q = interp.OpCount(), interp.OpCount()
            interp.run(st.prog, x, ops=p)
            vprog, name = vjp_prog(st.prog)
            interp.run(vprog, x, 1.0, fname=name, ops=q)
            ratios.append(q.work / p.work)
        assert ratios[1] <= 1.5 * ratios[0] and ratios[1] < 12, ratios
