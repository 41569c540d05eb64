"""The zero and one rules of `passes/simplify.py` (note [symbolic-zeros]): a
gradient of one row of a stacked result propagates no adjoint through the
other rows, and the seed's ones multiply nothing. The rules see across a call
once the callee is inlined (the numba backend's `lower`)."""
import numpy as np
import pytest

import pullback as pb
from pullback.backends import numba_backend as nb
from pullback.ir.core import Prim
from pullback.ir.traverse import iter_lets, prune_prog


def rows(a, w):
    return np.stack([w * np.sin(a), w * np.cos(a), np.exp(a)])


def row0_grad(a, w):
    return pb.grad(lambda a, w: np.sum(rows(a, w)[0]), argnums=(0, 1))(a, w)


def ops(prog):
    return [st.exp.op for f in prog.funcs for st in iter_lets(f.body) if isinstance(st.exp, Prim)]


def test_the_other_rows_get_no_adjoint():
    a, w = np.linspace(-1.0, 2.0, 7), np.linspace(0.5, 1.5, 7)
    f = pb.jit(row0_grad, backend="interp")
    got = f(a, w)
    np.testing.assert_allclose(got[0], w * np.cos(a), rtol=1e-15)
    np.testing.assert_array_equal(got[1], np.sin(a))
    o = ops(prune_prog(nb.lower(f.staged(a, w).prog)))
    # no seed array updated and sliced, no adjoint of exp or of the cos row, one strong product
    assert "index_update" not in o and "index" not in o and "exp" not in o, o
    assert o.count("smul") == 1 and o.count("sin") == 1 and o.count("cos") == 1, o
    for be in ("pysource", "numba"):
        for g, h in zip(pb.jit(row0_grad, backend=be)(a, w), got):
            np.testing.assert_array_equal(g, h)


def update_zeros(x, i):
    # row i's adjoint is zero, added at a traced index: the update stays (and its bounds check)
    return pb.grad(lambda x: np.sum(np.stack([np.sin(x[0]), x[i]])[0]))(x)


def test_a_traced_index_keeps_its_bounds_check():
    x = np.arange(12.0).reshape(3, 4)
    for be in ("interp", "numba"):
        f = pb.jit(update_zeros, backend=be)
        np.testing.assert_allclose(f(x, 1)[0], np.cos(x[0]))
        assert not f(x, 1)[1:].any()
        with pytest.raises(IndexError):
            f(x, 5)


def test_a_zero_product_with_inf_stays_exact():
    # the strong product of a zero adjoint with inf is 0 by definition, the same as without the rule
    a = np.array([0.0, np.inf, 1.0])
    w = np.array([1.0, 2.0, np.inf])
    with np.errstate(all="ignore"):
        got = pb.jit(row0_grad, backend="interp")(a, w)
        prog = prune_prog(nb.lower(pb.jit(row0_grad).staged(a, w).prog))
    assert "exp" not in ops(prog)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got[1], np.sin(a))
        np.testing.assert_array_equal(got[0][[0, 2]], (w * np.cos(a))[[0, 2]])


def lowered_work(jitted, *args):
    """Arithmetic work (the cost rules) of one interpreted run of the program numba prints."""
    from pullback.backends import interp

    ops = interp.OpCount()
    interp.run(prune_prog(nb.lower(jitted.staged(*args).prog)), *args, ops=ops)
    return ops.work


def test_row_gradient_costs_a_constant_times_its_row():
    # cheap gradients: the gradient of row 0 costs a fixed multiple of row 0's primal at any size, and
    # less than the whole stack's primal (before the rules it also paid the other rows' adjoints)
    ratios = []
    for n in (50, 800):
        a, w = np.linspace(-1.0, 2.0, n), np.linspace(0.5, 1.5, n)
        grad = lowered_work(pb.jit(row0_grad), a, w)
        row0 = lowered_work(pb.jit(lambda a, w: np.sum(w * np.sin(a))), a, w)
        whole = lowered_work(pb.jit(lambda a, w: np.sum(rows(a, w))), a, w)
        assert grad < whole, (grad, whole)
        ratios.append(grad / row0)
    assert abs(ratios[1] - ratios[0]) < 0.05 * ratios[0] and ratios[1] < 4, ratios
