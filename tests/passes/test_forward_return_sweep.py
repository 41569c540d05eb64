"""Return sweeps whose iterations commute run forward and recompute the loop's
state instead of saving it (passes/vjp/loop_forward.py, note [forward-return-sweep])."""
import numpy as np
import pytest

import pullback as pb
from pullback.ir.builder import Builder
from pullback.ir.core import Prim
from pullback.ir.traverse import iter_lets
from pullback.ir.types import TensorType
from pullback.passes.vjp import loop_forward


def poly_fit(x):
    """llsq's objective: the powers p = t**j are inactive state (t is a constant, as in
    the GradBench module), acc's adjoint passes through."""
    t = -1.0 + 2.0 * np.arange(40) / 39
    s = np.sign(t)
    acc = np.zeros(t.shape[0])
    p = np.ones(t.shape[0])
    for j in range(x.shape[0]):
        acc = acc + x[j] * p
        p = p * t
    r = s - acc
    return 0.5 * np.sum(r * r)


def running_product(x):
    """y's adjoint changes every iteration: the return sweep must run backwards."""
    y = 1.0
    for i in range(x.shape[0]):
        y = y * x[i] + 0.1
    return y


def exp_terms(x, t):
    """The forward loop saves exp's results (note [saved-values]): stays store-all."""
    acc = 0.0
    p = np.ones(t.shape[0])
    for j in range(x.shape[0]):
        acc = acc + np.sum(np.exp(x[j] * p))
        p = p * t
    return acc


def _fd(f, args, argnum, eps=1e-6):
    x = np.asarray(args[argnum], dtype=float)
    out = np.zeros(x.shape)
    for i in np.ndindex(x.shape):
        d = np.zeros(x.shape)
        d[i] = eps
        hi, lo = list(args), list(args)
        hi[argnum], lo[argnum] = x + d, x - d
        out[i] = (f(*hi) - f(*lo)) / (2 * eps)
    return out


def _pushes(f, *args):
    prog = pb.grad(f, backend="interp")._jit.staged(*args).prog
    return sum(1 for fn in prog.funcs for st in iter_lets(fn.body)
               if isinstance(st.exp, Prim) and st.exp.op == "store_push")


def _poly_args(m, seed=0):
    return (np.random.default_rng(seed).standard_normal(m),)


def test_poly_fit_gradient_and_no_saves():
    args = _poly_args(6)
    g = pb.grad(poly_fit, backend="interp")(*args)
    np.testing.assert_allclose(g, _fd(poly_fit, args, 0), rtol=1e-6, atol=1e-6)
    assert _pushes(poly_fit, *args) == 0
    for backend in ("pysource", "numba"):
        np.testing.assert_allclose(pb.grad(poly_fit, backend=backend)(*args), g, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("f, args", [
    (running_product, (np.linspace(0.5, 1.5, 5),)),
    (exp_terms, (np.linspace(-0.5, 0.5, 4), np.linspace(-1.0, 1.0, 6))),
])
def test_loops_that_must_run_backwards_keep_their_saves(f, args):
    g = pb.grad(f, backend="interp")(*args)
    np.testing.assert_allclose(g, _fd(f, args, 0), rtol=1e-6, atol=1e-7)
    assert _pushes(f, *args) > 0


def test_gradient_work_stays_a_constant_times_the_primal():
    """Interpreter work of the gradient over the primal's, at m = 8 and 16 coefficients."""
    from pullback.backends import interp
    from pullback.checkpointing import Store
    from pullback.frontend import stage
    from pullback.passes.vjp import vjp_prog

    ratios = []
    for m in (8, 16):
        args = _poly_args(m)
        st = stage(poly_fit, args)
        p_ops, g_ops = interp.OpCount(), interp.OpCount()
        interp.run(st.prog, *args, ops=p_ops)
        vprog, name = vjp_prog(st.prog, checkpoint=Store())
        interp.run(vprog, *args, 1.0, fname=name, ops=g_ops)
        ratios.append(g_ops.work / p_ops.work)
    assert ratios[1] <= ratios[0] * 1.1 and ratios[1] < 4, ratios


def _frame():
    b = Builder()
    f64 = TensorType("f64", (3,))
    pa, fa = b.fresh("pa", f64), b.fresh("fa", f64)
    c = b.fresh("c", f64)
    return b, pa, fa, c


def test_order_free_accepts_accumulation_and_pass_through():
    b, pa, fa, c = _frame()
    t = b.emit("mul", pa, c)             # reads the pass-through adjoint: same every iteration
    new = b.emit("add", fa, t)
    assert loop_forward.order_free(b.body([pa, new]), [pa], [pa], [fa], [new])


@pytest.mark.parametrize("case", ["reads_fa", "pa_changes", "fa_scaled"])
def test_order_free_refuses(case):
    b, pa, fa, c = _frame()
    if case == "reads_fa":               # a term that reads the carried adjoint
        t = b.emit("mul", fa, c)
        new, new_pa = b.emit("add", fa, t), pa
    elif case == "pa_changes":           # the parameter's adjoint changes per iteration
        new, new_pa = b.emit("add", fa, c), b.emit("mul", pa, c)
    else:                                # not an accumulation
        new, new_pa = b.emit("mul", fa, c), pa
    assert not loop_forward.order_free(b.body([new_pa, new]), [pa], [new_pa], [fa], [new])
