"""The NumPy functions of frontend/numpy_shape.py (issue 10): values equal
NumPy's on interp and pysource, and derivatives pass check_grads in both modes."""
import numpy as np
import pytest

import pullback as pb
from pullback.testing import check_grads

M = np.arange(1.0, 13.0).reshape(3, 4) / 7
V = np.linspace(-1.0, 2.0, 6)
W = np.array([[1.0, -2.0, 3.0, 0.5], [-0.3, 0.7, -1.1, 2.0], [0.9, 1.3, -0.4, -2.5]])

CASES = {
    "flip": (lambda a: np.flip(a), M),
    "flip_axis": (lambda a: np.flip(a, axis=1), M),
    "flipud": (lambda a: np.flipud(a), M),
    "fliplr": (lambda a: np.fliplr(a), M),
    "roll": (lambda a: np.roll(a, 2), V),
    "roll_axis": (lambda a: np.roll(a, -1, axis=1), M),
    "roll_flat": (lambda a: np.roll(a, 5), M),
    "moveaxis": (lambda a: np.moveaxis(a.reshape(3, 2, 2), 0, -1), M),
    "swapaxes": (lambda a: np.swapaxes(a, 0, 1), M),
    "tril": (lambda a: np.tril(a), M),
    "triu_k": (lambda a: np.triu(a, 1), M),
    "tril_neg": (lambda a: np.tril(a, -1), M),
    "diagonal": (lambda a: np.diagonal(a), M),
    "diagonal_off": (lambda a: np.diagonal(a, 1), M),
    "diagonal_neg": (lambda a: np.diagonal(a, -1), M),
    "diff": (lambda a: np.diff(a), V),
    "diff2_axis0": (lambda a: np.diff(a, n=2, axis=0), M),
    "repeat": (lambda a: np.repeat(a, 2), V),
    "repeat_axis": (lambda a: np.repeat(a, [1, 0, 2], axis=0), M),
    "tile": (lambda a: np.tile(a, 2), V),
    "tile_2d": (lambda a: np.tile(a, (2, 1)), M),
    "atleast_2d": (lambda a: np.atleast_2d(a), V),
    "atleast_3d": (lambda a: np.atleast_3d(a), V),
    "atleast_3d_m": (lambda a: np.atleast_3d(a), M),
    "append": (lambda a: np.append(a, a[:2]), V),
    "append_axis": (lambda a: np.append(a, a[:1], axis=0), M),
    "column_stack": (lambda a: np.column_stack([a, a * 2]), V),
    "dstack": (lambda a: np.dstack([a, a]), M),
    "split": (lambda a: np.concatenate(np.split(a, 3)[::-1]), V),
    "array_split": (lambda a: np.array_split(a, 4)[1], V),
    "hsplit": (lambda a: np.hsplit(a, 2)[1], M),
    "vsplit": (lambda a: np.vsplit(a, [1])[1], M),
    "select": (lambda a: np.select([a < 0, a > 1], [a * 2, a ** 2], 0.5), V),
    "average_w": (lambda a: np.average(a, weights=np.arange(1.0, 7.0)), V),
    "average_axis": (lambda a: np.average(a, axis=1, weights=np.array([1.0, 2.0, 3.0, 4.0])), M),
    "linspace": (lambda a: np.linspace(a[0], a[1], 5), V),
    "deg2rad": (lambda a: np.deg2rad(a), V),
    "rad2deg": (lambda a: np.degrees(a), V),
    "exp2": (lambda a: np.exp2(a), V),
    "reciprocal": (lambda a: np.reciprocal(a + 3.0), V),
    "logaddexp2": (lambda a: np.logaddexp2(a, 0.5 * a), V),
    "heaviside": (lambda a: np.heaviside(a, 0.5) * a, V),
    "var_ddof": (lambda a: np.var(a, ddof=1), W),
    "std_ddof_axis": (lambda a: np.std(a, axis=0, ddof=1), W),
    "method_std": (lambda a: a.std(axis=1, ddof=1), W),
    "norm_1_mat": (lambda a: np.linalg.norm(a, 1), W),
    "norm_inf_mat": (lambda a: np.linalg.norm(a, np.inf), W),
    "norm_m1_mat": (lambda a: np.linalg.norm(a, -1), W),
    "norm_inf_vec": (lambda a: np.linalg.norm(a[0], np.inf), W),
    "norm_1_vec": (lambda a: np.linalg.norm(a[0], 1), W),
    "norm_axis_ord3": (lambda a: np.linalg.norm(a, 3, axis=0), W),
    "norm_fro": (lambda a: np.linalg.norm(a, "fro"), W),
    "norm_keep": (lambda a: np.linalg.norm(a, axis=1, keepdims=True), W),
    "trace_off": (lambda a: np.trace(a, 1), W),
    "method_trace": (lambda a: a.trace(-1), W),
    "diag_k": (lambda a: np.diag(a, 1), W),
    "diag_vec_k": (lambda a: np.diag(a[0], -1), W),
    "tensordot": (lambda a: np.tensordot(a, a, axes=([1], [1])), W),
    "tensordot_2": (lambda a: np.tensordot(a.reshape(3, 2, 2), a.reshape(2, 2, 3), axes=2), W),
    "inner_mat": (lambda a: np.inner(a, a[:2]), W),
    "inner_vec": (lambda a: np.inner(a[0], a[1]), W),
    "kron": (lambda a: np.kron(a[:2, :2], a[1:, 2:]), W),
    "kron_vec": (lambda a: np.kron(a[0], a[1, :2]), W),
    "cross": (lambda a: np.cross(a[0, :3], a[1, :3]), W),
    "cross_rows": (lambda a: np.cross(a[:, :3], a[:, 1:]), W),
    "einsum_mm": (lambda a: np.einsum("ij,kj->ik", a, a), W),
    "einsum_implicit": (lambda a: np.einsum("ij,jk", a, a.T), W),
    "einsum_sum": (lambda a: np.einsum("ij->j", a), W),
    "einsum_t": (lambda a: np.einsum("ij->ji", a), W),
    "einsum_outer": (lambda a: np.einsum("i,j->ij", a[0], a[1]), W),
    "einsum_lone": (lambda a: np.einsum("ij,kl->ik", a, a), W),
    "einsum_dot": (lambda a: np.einsum("ij,ij->", a, a), W),
    "sort": (lambda a: np.sort(a), W),
    "sort_axis0": (lambda a: np.sort(a, axis=0), W),
    "sort_flat": (lambda a: np.sort(a, axis=None), W),
    "argsort_gather": (lambda a: a[0][np.argsort(a[1])], W),
    "partition": (lambda a: np.partition(a[0], 2)[2], W),
    "median": (lambda a: np.median(a), W),
    "median_axis": (lambda a: np.median(a, axis=1), W),
    "median_odd": (lambda a: np.median(a[:, 1]), W),
    "quantile": (lambda a: np.quantile(a, 0.3), W),
    "quantile_list_axis": (lambda a: np.quantile(a, [0.25, 0.9], axis=0), W),
    "percentile_keep": (lambda a: np.percentile(a, 40, axis=1, keepdims=True), W),
    "cumsum": (lambda a: np.cumsum(a), W),
    "cumsum_axis1": (lambda a: np.cumsum(a, axis=1), W),
    "cumprod_axis0": (lambda a: np.cumprod(a, axis=0), W),
    "method_cumsum": (lambda a: a[0].cumsum(), W),
    "gradient": (lambda a: np.gradient(a[0]), W),
    "gradient_h_axis": (lambda a: np.gradient(a, 0.5, axis=1), W),
    "pad_constant": (lambda a: np.pad(a, 1), W),
    "pad_edge": (lambda a: np.pad(a, ((1, 2), (0, 1)), mode="edge"), W),
    "pad_reflect": (lambda a: np.pad(a, 2, mode="reflect"), W),
    "rot90": (lambda a: np.rot90(a), W),
    "rot90_k3": (lambda a: np.rot90(a, 3), W),
    "arcsin": (lambda a: np.arcsin(a * 0.3), W),
    "arccos": (lambda a: np.arccos(a * 0.3), W),
    "arctan": (lambda a: np.arctan(a), W),
    "arcsinh": (lambda a: np.arcsinh(a * 3.0), W),
    "arccosh": (lambda a: np.arccosh(np.abs(a) + 1.5), W),
    "arctanh": (lambda a: np.arctanh(a * 0.3), W),
    "cbrt": (lambda a: np.cbrt(a), W),
    "sinc": (lambda a: np.sinc(a), W),
    "nan_to_num": (lambda a: np.nan_to_num(a), W),
    "solve_vec": (lambda a: np.linalg.solve(a[:, :3] + 3 * np.eye(3), a[:, 3]), W),
    "solve_mat": (lambda a: np.linalg.solve(a[:, 1:] + 3 * np.eye(3), a[:, :2]), W),
    "inv": (lambda a: np.linalg.inv(a[:, :3] + 3 * np.eye(3)), W),
    "det": (lambda a: np.linalg.det(a[:, :3]), W),
    "slogdet": (lambda a: np.linalg.slogdet(a[:, 1:])[1], W),
}


@pytest.mark.parametrize("backend", ["interp", "pysource"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_numpy(name, backend):
    f, x = CASES[name]
    np.testing.assert_allclose(pb.jit(f, backend=backend)(x), f(x), rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("name", sorted(CASES))
def test_derivatives(name):
    f, x = CASES[name]
    check_grads(lambda a: np.sum(np.sin(f(a))), (x,), modes=("rev", "fwd"), order=1, backend="interp")


def test_static_arguments_are_required():
    def f(a, k):
        return np.roll(a, k)

    with pytest.raises(pb.PullbackError) as ei:
        pb.jit(f, backend="interp")(V, 2)
    assert "test_numpy_shape.py" in str(ei.value)


@pytest.mark.slow
def test_numba_compiles_a_bundle():
    """One compiled module exercising the numba forms (argsort rows, take, where)."""
    def f(a):
        return (np.sum(np.sort(a) * np.arange(4.0)) + np.median(a) + np.sum(np.tril(a)) + np.sum(np.roll(a, 1))
                + np.sum(np.einsum("ij,kj->ik", a, a)) + np.linalg.norm(a, 1) + np.std(a, ddof=1))

    np.testing.assert_allclose(pb.jit(f, backend="numba")(W), f(W), rtol=1e-12)
    np.testing.assert_allclose(pb.grad(f, backend="numba")(W), pb.grad(f, backend="interp")(W), rtol=1e-10)


def _mat(a):
    """A well-conditioned matrix made from the vector a."""
    return np.outer(a, a) * 0.1 + 3.0 * np.eye(a.shape[0])


@pytest.mark.parametrize("f", [lambda a: np.sum(np.sin(np.cumsum(a))), lambda a: np.sum(np.sort(a) * a),
                               lambda a: np.median(np.cumprod(a * 0.01 + 1.0)),
                               lambda a: np.sum(np.linalg.solve(_mat(a), a)) + np.linalg.det(_mat(a)),
                               lambda a: np.sum(np.einsum("ij,kj->ik", _mat(a), _mat(a)))],
                         ids=["cumsum", "sort", "cumprod_median", "solve_det", "einsum"])
def test_cheap_gradients(f):
    """The gradient's work is a small constant times the primal's, at two sizes
    (operation counts on the interpreter)."""
    from pullback.backends import interp
    from pullback.frontend import stage
    from pullback.passes.vjp import vjp_prog

    ratios = []
    for n in (8, 64):
        x = np.linspace(0.1, 1.0, n)
        st = stage(f, (x,))
        p, g = interp.OpCount(), interp.OpCount()
        interp.run(st.prog, x, ops=p)
        vprog, name = vjp_prog(st.prog)
        interp.run(vprog, x, 1.0, fname=name, ops=g)
        ratios.append(g.work / p.work)
    assert ratios[1] <= 1.5 * ratios[0] and ratios[1] < 10, ratios


def test_elementwise_edges():
    import math

    assert pb.grad(lambda x: np.sinc(x), backend="interp")(0.0) == 0.0
    assert pb.jit(lambda x: np.sinc(x), backend="interp")(0.0) == 1.0
    assert pb.jit(lambda x: np.arcsinh(x), backend="interp")(-1e8) == pytest.approx(np.arcsinh(-1e8), rel=1e-14)
    assert pb.grad(lambda x: np.arcsinh(x), backend="interp")(0.0) == pytest.approx(1.0)
    assert pb.grad(lambda x: np.cbrt(x), backend="interp")(-8.0) == pytest.approx(1.0 / 12.0)
    assert pb.grad(lambda x: math.asin(x), backend="interp")(0.5) == pytest.approx(1 / math.sqrt(0.75))
    x = np.array([1.0, np.nan, np.inf, -np.inf, -2.0])
    np.testing.assert_array_equal(pb.jit(np.nan_to_num, backend="pysource")(x), np.nan_to_num(x))
    np.testing.assert_array_equal(pb.grad(lambda v: np.sum(np.nan_to_num(v) * 0.5), backend="pysource")(x),
                                  [0.5, 0.0, 0.0, 0.0, 0.5])
