"""`passes.hoist_maps` (note [hoist-maps]): in a map that stays a loop, the
statements that do not depend on the iteration run once, in front of it. The
vmap of a jvp (JAX's jacfwd) then computes the primal once, not once per
direction; results agree with the interpreter's, errors are the same errors at
the same places, a width-0 map runs nothing, and an array moved out of a map
that its body updates is copied, never changed under the other iterations."""
import numpy as np
import pytest

import pullback as pb
from pullback.backends import interp
from pullback.errors import PullbackError
from pullback.ir.core import Apply, Map, Prim
from pullback.ir.traverse import iter_lets
from pullback.passes import hoist_maps as hoist_module
from pullback.passes.hoist_maps import hoist_maps
from pullback.passes.vectorize import vectorize
from pullback.pytree import flatten

RNG = np.random.default_rng(4)
N = 128     # the jvp's (N, N) outer product keeps the batched code above vectorize's memory guard


def objective(theta):
    h = np.tanh(np.sin(theta) * np.exp(theta[::-1]))
    return np.sum(np.cos(np.outer(h, h)), axis=1)


def jac_rows(theta, D):
    return pb.vmap(lambda d: pb.jvp(objective, (theta,), (d,))[1])(D)


_TRANSCENDENTAL = ("sin", "cos", "exp", "tanh")


class _Count(interp.OpCount):
    """Also counts the elements transcendental functions compute."""

    def __init__(self):
        super().__init__()
        self.trans = 0

    def prim(self, row, e, outs, loc=None) -> None:
        super().prim(row, e, outs, loc)
        if e.op in _TRANSCENDENTAL:
            self.trans += int(np.prod(outs[0].type.shape))


def _run(prog, *args):
    ops = _Count()
    leaves, _ = flatten(tuple(args))
    return interp.run(prog, *leaves, ops=ops), ops


def _maps(prog):
    return [st for f in prog.funcs for st in iter_lets(f.body) if isinstance(st.exp, Map)]


def test_vmap_of_jvp_computes_the_primal_once():
    theta = RNG.standard_normal(N)
    counts = {}
    for w in (6, 12):
        D = RNG.standard_normal((w, N))
        prog = vectorize(pb.jit(jac_rows).staged(theta, D).prog)
        assert _maps(prog), "the map stays a loop (vectorize's memory guard)"
        out = hoist_maps(prog)
        (before, b_ops), (after, a_ops) = _run(prog, theta, D), _run(out, theta, D)
        np.testing.assert_allclose(after[0], before[0], rtol=1e-12, atol=1e-12)
        counts[w] = (b_ops, a_ops)
    (b6, a6), (b12, a12) = counts[6], counts[12]
    assert b12.trans == 2 * b6.trans            # without the pass: once per direction
    assert a12.trans == a6.trans < b6.trans / 3  # with it: once
    primal = _run(pb.jit(objective).staged(theta).prog, theta)[1].work
    per_direction = (a12.work - a6.work) / 6
    assert per_direction <= (b12.work - b6.work) / 6 - 0.9 * primal, (per_direction, primal)


def test_the_moved_code_comes_from_an_inlined_callee():
    """the jvp is a called function: its calls are inlined into the body, its
    primal part moves out, and the body computes only tangents"""
    theta, D = RNG.standard_normal(N), RNG.standard_normal((6, N))
    prog = vectorize(pb.jit(jac_rows).staged(theta, D).prog)
    out = hoist_maps(prog)
    (m,) = _maps(out)
    body = list(iter_lets(m.exp.lam.body))
    assert not any(isinstance(s.exp, Apply) for s in body)
    assert not any(isinstance(s.exp, Prim) and s.exp.op in ("sin", "exp", "tanh") for s in body)
    got = pb.jit(jac_rows, backend="pysource")(theta, D)
    want = pb.jit(jac_rows, backend="interp")(theta, D)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_inlining_has_a_budget(monkeypatch):
    """beyond `MAX_COPIES` inlined statements per program, calls stay calls (compile time)"""
    theta, D = RNG.standard_normal(N), RNG.standard_normal((6, N))
    prog = vectorize(pb.jit(jac_rows).staged(theta, D).prog)
    monkeypatch.setattr(hoist_module, "MAX_COPIES", 10)
    assert hoist_maps(prog) is prog


def _mapped(order):
    """A map over `idx` whose body reads x[j] (varies) and y[k] (does not), in `order`."""
    def f(x, y, idx, k):
        def one(j):
            if order == "varying first":
                a = x[j]
                b = y[k] * 2.0
            else:
                b = y[k] * 2.0
                a = x[j]
            return a + b
        return pb.map(one, idx)
    return f


def _error(prog, *args):
    try:
        interp.run(prog, *args)
    except PullbackError as e:
        return str(e)
    return None


@pytest.mark.parametrize("order", ["varying first", "invariant first"])
def test_errors_are_the_same_errors(order):
    f = _mapped(order)
    x, y = RNG.standard_normal(5), RNG.standard_normal(3)
    good = (x, y, np.array([0, 4, 2]), np.int64(1))
    prog = pb.jit(f).staged(*good).prog
    out = hoist_maps(prog)
    (m,) = _maps(out)
    moved = not any(isinstance(s.exp, Prim) and s.exp.op == "index" and s.exp.args[0].name == "y"
                    for s in iter_lets(m.exp.lam.body))
    # y[k] may raise: it moves only when nothing that stays before it may raise
    assert moved == (order == "invariant first")
    np.testing.assert_allclose(interp.run(out, *good)[0], interp.run(prog, *good)[0])
    for idx, k in (([0, 9, 1], 1), ([0, 1, 2], 7), ([9, 0, 1], 7), ([0, 1, 9], 7)):
        args = (x, y, np.array(idx), np.int64(k))
        want = _error(prog, *args)
        assert want is not None
        assert _error(out, *args) == want


def test_width_zero_runs_nothing():
    f = _mapped("invariant first")
    x, y = RNG.standard_normal(5), RNG.standard_normal(3)
    args = (x, y, np.zeros(0, dtype=np.int64), np.int64(7))   # y[7] would raise
    prog = pb.jit(f).staged(*args).prog
    out = hoist_maps(prog)
    assert out is prog
    assert interp.run(out, *args)[0].shape == (0,)


def updates_a_moved_array(y, idx, es):
    def one(j, e):
        z = np.sin(y) * 2.0          # the same in every iteration: moved out
        z[j] = e                     # ... and updated by each iteration
        s = np.sum(z)
        if e > 0:                    # an `if` on the element: the map stays a loop
            s = s * 2.0
        return s
    return pb.map(one, idx, es)


@pytest.mark.parametrize("backend", ["pysource", pytest.param("numba", marks=pytest.mark.slow)])
def test_a_moved_array_the_body_updates_is_copied(backend):
    y, idx, es = RNG.standard_normal(6), np.array([0, 3, 3, 5, 1]), np.array([1.0, -2.0, 3.0, 4.0, -5.0])
    prog = vectorize(pb.jit(updates_a_moved_array).staged(y, idx, es).prog)
    out = hoist_maps(prog)
    (m,) = _maps(out)
    assert not any(isinstance(s.exp, Prim) and s.exp.op == "sin" for s in iter_lets(m.exp.lam.body))
    want = interp.run(prog, y, idx, es)[0]
    for parallel in ((False, True) if backend == "numba" else (None,)):
        got = pb.jit(updates_a_moved_array, backend=backend, parallel=parallel)(y, idx, es)
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_nothing_moves_when_the_calls_read_only_the_iteration():
    def g(v):
        return np.sum(np.sin(v) * np.arange(v.shape[0]))

    def f(X):
        def one(r):
            s = g(r)
            if s > 0:
                s = -s
            return s
        return pb.map(one, X)

    X = RNG.standard_normal((4, 5))
    prog = vectorize(pb.jit(f).staged(X).prog)
    assert _maps(prog)
    assert hoist_maps(prog) is prog
