"""Loops save the results of transcendental statements instead of re-executing them
in the return sweep (note [saved-values])."""
import numpy as np
import pytest

import pullback as pb
from pullback.ir.core import Loop, Prim
from pullback.ir.traverse import iter_lets


def tanh_chain(x, w):
    h = x
    for _ in range(5):
        h = np.tanh(w * h)          # the adjoint reads tanh's output
    return np.sum(h)


def exp_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.exp(x[i])        # the adjoint reads exp's output too
    return s


def _ops_in_loops(prog):
    ops = []
    for f in prog.funcs:
        for st in iter_lets(f.body):
            if isinstance(st.exp, Loop):
                ops += [s.exp.op for s in iter_lets(st.exp.body) if isinstance(s.exp, Prim)]
    return ops


def test_return_sweep_pops_tanh_instead_of_recomputing():
    x, w = np.array([0.3, -0.5, 0.8]), np.array([1.1, 0.9, -1.2])
    g = pb.grad(tanh_chain, argnums=(0, 1), backend="interp")
    gx, gw = g(x, w)
    eps = 1e-6
    for i in range(3):
        d = np.zeros(3)
        d[i] = eps
        assert np.isclose(gx[i], (tanh_chain(x + d, w) - tanh_chain(x - d, w)) / (2 * eps), atol=1e-7)
        assert np.isclose(gw[i], (tanh_chain(x, w + d) - tanh_chain(x, w - d)) / (2 * eps), atol=1e-7)
    ops = _ops_in_loops(g._jit.staged(x, w).prog)
    assert ops.count("tanh") == 1          # the forward loop only
    assert "store_pop" in ops


def test_saved_values_agree_on_every_backend():
    x = np.linspace(-1.0, 1.0, 7)
    for backend in ("interp", "pysource", "numba"):
        np.testing.assert_allclose(pb.grad(exp_sum, backend=backend)(x), np.exp(x), rtol=1e-12)


def projections(x, W):
    h = x
    for _ in range(3):
        h = np.sin(h @ W)           # the adjoint reads h @ W's operands, and sin reads its output
    return np.sum(h)


def _count_ops(prog, op):
    return _ops_in_loops(prog).count(op)


def test_long_contractions_are_saved_short_ones_recomputed():
    """A matmul over >= 8 terms per element is saved by the forward loop; over fewer
    it is recomputed (note [saved-values])."""
    rng = np.random.default_rng(0)
    for d, saved in ((8, True), (3, False)):
        x, W = rng.standard_normal((4, d)), rng.standard_normal((d, d)) / d
        g = pb.grad(projections, argnums=(0, 1), backend="interp")
        prog = g._jit.staged(x, W).prog
        # forward loop: 1 matmul; return sweep: 2 for the adjoint, plus 1 if recomputed
        assert _count_ops(prog, "matmul") == (3 if saved else 4), d
        gx, gW = g(x, W)
        for backend in ("pysource", "numba"):
            for a, b in zip(pb.grad(projections, argnums=(0, 1), backend=backend)(x, W), (gx, gW)):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
        eps, i = 1e-6, (1, 2)
        dW = np.zeros_like(W)
        dW[i] = eps
        fd = (projections(x, W + dW) - projections(x, W - dW)) / (2 * eps)
        assert np.isclose(gW[i], fd, atol=1e-7)


def _work(f, args):
    """(primal work, gradient work) on the interpreter, from the rows' cost rules."""
    from pullback.backends import interp
    from pullback.checkpointing import Store
    from pullback.frontend import stage
    from pullback.passes.vjp import vjp_prog

    st = stage(f, args)
    p_ops, g_ops = interp.OpCount(), interp.OpCount()
    interp.run(st.prog, *args, ops=p_ops)
    vprog, name = vjp_prog(st.prog, checkpoint=Store())
    interp.run(vprog, *args, 1.0, fname=name, ops=g_ops)
    return p_ops.work, g_ops.work


@pytest.mark.parametrize("steps", [1, 2])
def test_saved_products_keep_the_gradient_cheap(steps):
    """Saving a long contraction costs its result's size, never its multiply-adds: the
    gradient's work over the primal's stays the same when the width doubles, and is
    below what recomputing the product would add (`projections`, d = 16 and 32)."""
    rng = np.random.default_rng(steps)
    ratios = []
    for d in (16, 32):
        x, W = rng.standard_normal((6 * steps, d)), rng.standard_normal((d, d)) / d
        p, g = _work(projections, (x, W))
        ratios.append(g / p)
    assert ratios[1] <= ratios[0] * 1.1, ratios
    assert ratios[1] < 4.0, ratios


def two_saves(x, w):
    h = x
    for _ in range(4):
        a = np.exp(w * h)
        b = np.tanh(a * x)
        h = a * b + 0.5 * h
    return np.sum(h)


def _loops(prog):
    return [st.exp for f in prog.funcs for st in iter_lets(f.body) if isinstance(st.exp, Loop)]


def test_saved_values_are_pushed_last_and_popped_first():
    """The forward loop pushes the saved values after its other statements and the
    return sweep pops them before its own, so the elementwise statements between
    two saved ones are not split apart (the numba backend fuses them into one loop)."""
    x, w = np.array([0.3, -0.5, 0.8]), np.array([1.1, 0.9, -1.2])
    g = pb.grad(two_saves, argnums=(0, 1), backend="interp")
    prog = g._jit.staged(x, w).prog
    pushes = pops = 0
    for loop in _loops(prog):
        ops = [s.exp.op if isinstance(s.exp, Prim) else "" for s in loop.body.stmts]
        if "exp" in ops and "store_push" in ops:          # the forward loop
            last = max(i for i, o in enumerate(ops) if o != "store_push")
            assert ops[last + 1:].count("store_push") == 2, ops   # exp's and tanh's, after the rest
            pushes += 1
        if "store_pop" in ops and "exp" not in ops:        # the return sweep
            first = min(i for i, o in enumerate(ops) if o not in ("store_pop", "sub"))
            assert ops[:first].count("store_pop") >= 2, ops
            pops += 1
    assert pushes == 1 and pops == 1
    ref = g(x, w)
    np.testing.assert_allclose(pb.grad(two_saves, argnums=(0, 1), backend="numba")(x, w)[0], ref[0], rtol=1e-12)
    eps, d = 1e-6, np.array([0.0, 1e-6, 0.0])
    fd = (two_saves(x + d, w) - two_saves(x - d, w)) / (2 * eps)
    assert np.isclose(ref[0][1], fd, atol=1e-7)


def test_a_static_trip_count_sizes_the_stores():
    """A `for` loop of static trip count makes stores of that many slots
    (`store_new(cap=n)`), which numba allocates at once; a loop bounded by a traced
    value keeps the default."""
    from pullback.backends import numba_backend as nb

    def traced_bound(x, n):
        h = x
        for _ in range(n):
            h = np.tanh(h * 0.9)
        return np.sum(h)

    x, w = np.array([0.3, -0.5, 0.8]), np.array([1.1, 0.9, -1.2])
    prog = pb.jit(lambda *a: pb.grad(two_saves)(*a), backend="numba").staged(x, w).prog
    caps = [dict(st.exp.params).get("cap") for f in prog.funcs for st in iter_lets(f.body)
            if isinstance(st.exp, Prim) and st.exp.op == "store_new"]
    assert caps and all(c == 4 for c in caps), caps
    src = nb.emit_prog(nb.lower(prog), parallel=False)
    assert "_st_newn" in src and "(4)" in src
    np.testing.assert_allclose(pb.grad(two_saves, backend="numba")(x, w), pb.grad(two_saves, backend="interp")(x, w),
                               rtol=1e-12)
    prog = pb.jit(lambda *a: pb.grad(traced_bound)(*a), backend="numba").staged(x, np.int64(3)).prog
    caps = [dict(st.exp.params).get("cap") for f in prog.funcs for st in iter_lets(f.body)
            if isinstance(st.exp, Prim) and st.exp.op == "store_new"]
    assert caps and all(c is None for c in caps), caps
    np.testing.assert_allclose(pb.grad(traced_bound, backend="numba")(x, 7), pb.grad(traced_bound, backend="interp")(x, 7),
                               rtol=1e-12)
