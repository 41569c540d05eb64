"""A short nested loop's transcendental results are saved by the enclosing loop's
forward sweep, not recomputed in its return sweep (passes/vjp/saved.py, note
[nested-saves]); loops it does not apply to still re-execute."""
from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.backends import interp
from pullback.checkpointing import Binomial, Store
from pullback.frontend import stage
from pullback.passes.vjp import vjp_prog
from pullback.pytree import flatten


def stacked(x, W, n):
    """lstm's shape: an outer loop over steps, an inner one over the rows of W,
    a state updated in place."""
    st = np.zeros_like(W) + 0.1
    total = 0.0
    for t in range(n):
        h = x * (t + 1.0) / n
        for i in range(W.shape[0]):
            a = np.tanh(h * W[i] + st[i])
            st[i] = a
            h = np.exp(-a * a)
        total = total + np.sum(h)
    return total


def stacked_traced(x, W, n, m):
    """The inner trip count is a traced value: not a short static loop."""
    st = np.zeros_like(W) + 0.1
    total = 0.0
    for t in range(n):
        h = x * (t + 1.0) / n
        for i in range(m):
            a = np.tanh(h * W[i] + st[i])
            st[i] = a
            h = np.exp(-a * a)
        total = total + np.sum(h)
    return total


class _Count(interp.OpCount):
    """Also counts the elements `tanh` and `exp` compute."""

    def __init__(self):
        super().__init__()
        self.transc = 0

    def prim(self, row, e, outs, loc=None) -> None:
        super().prim(row, e, outs, loc)
        if e.op in ("tanh", "exp"):
            self.transc += int(np.prod(outs[0].type.shape))


def _counts(f, args, checkpoint=None):
    st = stage(f, args)
    leaves, _ = flatten(tuple(args))
    p = _Count()
    interp.run(st.prog, *leaves, ops=p)
    vprog, name = vjp_prog(st.prog, checkpoint=checkpoint or Store())
    g = _Count()
    out = interp.run(vprog, *leaves, 1.0, fname=name, ops=g)
    return p, g, out


def _args(L, b=3):
    rng = np.random.default_rng(L)
    return rng.standard_normal(b), 0.5 * rng.standard_normal((L, b))


def _fd_W(f, x, W, *rest, eps=1e-6):
    out = np.zeros_like(W)
    for idx in np.ndindex(W.shape):
        d = np.zeros_like(W)
        d[idx] = eps
        out[idx] = (f(x, W + d, *rest) - f(x, W - d, *rest)) / (2 * eps)
    return out


@pytest.mark.parametrize("n", [3, 24])
def test_the_inner_loops_transcendentals_are_evaluated_once(n):
    """Cheap-gradient check at two sizes: the gradient evaluates tanh and exp as often
    as the primal (re-executing the inner loop doubled them)."""
    x, W = _args(2)
    p, g, _ = _counts(stacked, (x, W, np.int64(n)))
    assert p.transc == 2 * n * 2 * 3
    assert g.transc == p.transc, (p.transc, g.transc)
    assert g.work <= 8 * p.work, (p.work, g.work)


@pytest.mark.parametrize("backend", ["interp", pytest.param("numba", marks=pytest.mark.slow)])   # ~6 s cold
def test_nested_saves_give_the_right_gradient(backend):
    _check_gradient(stacked, backend, 5)


def _check_gradient(f, backend, steps):
    """f's gradient on `backend` against finite differences (W) and against Binomial
    checkpointing, which saves nothing of nested loops (x and W)."""
    x, W = _args(3)
    gx, gW = pb.grad(f, argnums=(0, 1), backend=backend)(x, W, steps)
    np.testing.assert_allclose(gW, _fd_W(f, x, W, steps), rtol=1e-6, atol=1e-8)
    rx, rW = pb.grad(f, argnums=(0, 1), backend="interp", checkpoint=Binomial(snapshots=2))(x, W, steps)
    np.testing.assert_allclose(gx, rx, rtol=1e-10)
    np.testing.assert_allclose(gW, rW, rtol=1e-10)
    return x, W


def test_a_traced_inner_trip_count_still_re_executes():
    x, W = _args(2)
    p, g, out = _counts(stacked_traced, (x, W, np.int64(6), np.int64(2)))
    assert g.transc == 2 * p.transc                       # forward, and once more per return step
    _, _g2, out2 = _counts(stacked, (x, W, np.int64(6)))
    for a, b in zip(out, out2):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_a_long_inner_loop_still_re_executes():
    x, W = _args(20)                                      # over MAX_TRIPS = 16 rows
    p, g, _ = _counts(stacked, (x, W, np.int64(3)))
    assert g.transc == 2 * p.transc
    np.testing.assert_allclose(pb.grad(stacked, argnums=1, backend="interp")(x, W, 3),
                               _fd_W(stacked, x, W, 3), rtol=1e-6, atol=1e-8)


def test_loop_checkpointing_is_left_alone():
    x, W = _args(2)
    p, g, _ = _counts(stacked, (x, W, np.int64(8)), checkpoint=Binomial(snapshots=2))
    assert g.transc > 2 * p.transc                        # segments re-execute, by design


def stacked_late(x, W, n):
    """`stacked` with the state written after the layer's arithmetic (as lstm does)."""
    st = np.zeros_like(W) + 0.1
    total = 0.0
    for t in range(n):
        h = x * (t + 1.0) / n
        for i in range(W.shape[0]):
            a = np.tanh(h * W[i] + st[i])
            h = np.exp(-a * a)
            st[i] = a
        total = total + np.sum(h)
    return total


def test_rows_are_written_right_after_the_elementwise_run():
    """The row writes come right after the statements that compute the values,
    before the inner loop's own in-place update of the state, where numba's fusion
    writes them from its fused loop (note [nested-saves])."""
    from pullback.ir.core import Loop, Prim
    from pullback.ir.traverse import iter_lets

    x, W = _args(2)
    vprog = vjp_prog(stage(stacked_late, (x, W, np.int64(3))).prog)[0]
    inner = [st.exp for f in vprog.funcs for st in iter_lets(f.body)
             if isinstance(st.exp, Loop) and any(p.name.startswith("rows") and "saved" not in p.name
                                                 for p in st.exp.params)]
    assert inner
    for loop in inner:
        names = [s.exp.args[0].name for s in loop.body.stmts if isinstance(s.exp, Prim) and s.exp.op == "index_update"]
        rows = [i for i, a in enumerate(names) if a.startswith("rows")]
        assert len(rows) == 2 and max(rows) < min(i for i, a in enumerate(names) if not a.startswith("rows")), names
    gW = pb.grad(stacked_late, argnums=1, backend="numba")(x, W, 4)
    np.testing.assert_allclose(gW, _fd_W(stacked_late, x, W, 4), rtol=1e-6, atol=1e-8)


def three_levels(x, W, n):
    """Two short loops nested in a long one: each level saves the one below it."""
    st = np.zeros_like(W) + 0.1
    total = 0.0
    for t in range(n):
        h = x * (t + 1.0) / n
        for i in range(W.shape[0]):
            g = np.sin(h * W[i])
            for r in range(2):
                g = np.tanh(g + st[i] * (r + 1.0))
            st[i] = g
            h = np.exp(-g * g) * h
        total = total + np.sum(h)
    return total


@pytest.mark.parametrize("backend", ["interp", pytest.param("numba", marks=pytest.mark.slow)])   # ~12 s cold
def test_three_nested_levels(backend):
    x, W = _check_gradient(three_levels, backend, 4)
    p, g, _ = _counts(three_levels, (x, W, np.int64(4)))
    assert g.transc <= 2 * p.transc, (p.transc, g.transc)
