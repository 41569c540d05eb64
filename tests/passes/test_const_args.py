"""Interprocedural constant arguments and the zero rules (passes/const_args.py, simplify.py)."""
import numpy as np

import pullback as pb


def cost(C, P):
    d = P - C[0]
    return np.sum(d * d * d)


def hess_diag(C, P):
    g, h = pb.jvp(pb.grad(cost), (C, P), (np.ones_like(C), np.zeros_like(P)))
    return h


def test_a_zero_tangent_is_propagated_into_the_callee():
    C, P = np.array([[0.2, -0.1]]), np.array([[1.0, 2.0], [0.5, -1.0], [0.3, 0.7]])
    f = pb.jit(hess_diag, backend="interp")
    np.testing.assert_allclose(f(C, P), 6 * np.sum(P - C[0], axis=0)[None, :])
    prog = f.staged(C, P).prog
    callee = [fn for fn in prog.funcs if fn.name != prog.entry and fn.name.endswith("jvp")]
    assert callee and all(len(fn.params) == 2 for fn in callee)  # only (C, P): the constant tangents moved inside
    assert pb.jit(hess_diag, backend="numba")(C, P).tolist() == f(C, P).tolist()


def zeros_times(x):
    return np.sum(np.zeros(3) * x)


def test_zero_times_inf_stays_nan():
    # only exact rules: 0 * inf is NaN, so `zeros * x` is not folded to zeros
    with np.errstate(invalid="ignore"):
        assert np.isnan(pb.jit(zeros_times, backend="interp")(np.array([1.0, np.inf, 2.0])))
