"""Loop checkpointing (note [loop-checkpointing]): the schedules' counts, the
memory bounds (as byte counts, never timings), agreement with "store" across
backends and nesting, and the errors for bad strategies.

Counting convention (stated in the note): the initial state is one of the
`snapshots`; the forward sweep (which computes the loop's result, and counts
a `while` loop's iterations) is not part of the schedule; a step reversed right
after it is re-executed ("fused") runs only what its adjoint reads, so the
schedule's forward steps are exactly the advances the return sweep makes.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import pytest

import pullback as pb
from pullback.backends.interp import OpCount, run
from pullback.frontend import stage
from pullback.ir.prims.schedule import revolve_split


def griewank(t: int, s: int) -> int:
    """Griewank's optimum r*t - beta(s+1, r-1), beta(s, r) = C(s+r, s), r least with beta(s, r) >= t."""
    r = 0
    while math.comb(s + r, s) < t:
        r += 1
    return r * t - (math.comb(s + r, s + 1) if r >= 1 else 0)


@lru_cache(None)
def _dp(t: int, s: int) -> int:
    """The least forward steps by dynamic programming over every first advance m."""
    if t <= 1:
        return 0
    if s <= 1:
        return (t - 1) + _dp(t - 1, 1)
    return min(m + _dp(t - m, s - 1) + _dp(m, s) for m in range(1, t))


def _by_split(t: int, s: int) -> int:
    if t <= 1:
        return 0
    m = revolve_split(t, s)
    return m + (_by_split(t - m, s - 1) if s > 1 else 0) + _by_split(m, s)


def test_griewank_formula_is_the_dp_optimum():
    for s in range(1, 6):
        for t in range(1, 70):
            assert _dp(t, s) == griewank(t, s), (t, s)


def test_revolve_split_is_optimal():
    for s in range(1, 8):
        for t in range(1, 400):
            assert _by_split(t, s) == griewank(t, s), (t, s)


class _SinCount(OpCount):
    def __init__(self):
        super().__init__()
        self.sin = 0

    def prim(self, row, e, outs, loc=None):
        super().prim(row, e, outs, loc)
        self.sin += e.op == "sin"


def _loop(t):
    def f(x):
        s = x
        for i in range(t):
            s = np.sin(s) * 0.9 + 0.1 * s
        return np.sum(s)
    return f


def _grad_prog(f, x, cp):
    return stage(pb.grad(f, checkpoint=cp), (x,)).prog


@pytest.mark.parametrize("s", [1, 2, 3, 5])
@pytest.mark.parametrize("t", [1, 2, 7, 30, 100])
def test_binomial_forward_steps_are_griewanks_optimum(t, s):
    x = np.linspace(0.1, 1.0, 4)
    ops = _SinCount()
    g = run(_grad_prog(_loop(t), x, pb.Binomial(snapshots=s)), x, ops=ops)
    # the forward sweep evaluates sin t times; every other sin is an advance
    assert ops.sin - t == griewank(t, s)
    np.testing.assert_allclose(g[0], pb.grad(_loop(t), backend="interp")(x), rtol=1e-12, atol=1e-14)


def test_bisection_memory_is_logarithmic_and_recompute_bounded():
    x = np.linspace(0.1, 1.0, 16)
    w = x.nbytes
    prev = None
    for t in (2 ** 6, 2 ** 10, 3000):
        r = pb.memory_report(_loop(t), x, checkpoint=pb.Bisection())
        lg = math.ceil(math.log2(t))
        assert r.peak_bytes <= 2 * w * lg, (t, r)
        assert r.recompute_factor <= 1 + lg, (t, r)
        assert r.schedule == "pb.Bisection()"
        if prev is not None:  # grows with log t, not t
            assert r.peak_bytes <= prev * (lg + 1) / prev_lg
        prev, prev_lg = r.peak_bytes, lg
    store = pb.memory_report(_loop(3000), x)
    assert store.peak_bytes >= 3000 * w  # store-all keeps every iteration's state


def test_binomial_memory_is_its_snapshots():
    x = np.linspace(0.1, 1.0, 16)
    for s in (1, 3, 6):
        r = pb.memory_report(_loop(200), x, checkpoint=pb.Binomial(snapshots=s))
        assert r.peak_bytes <= (s + 1) * x.nbytes  # s snapshots and the working state


def test_budget_stores_ranges_that_fit():
    """A traced trip count: the store-all reversal of any range that fits in half
    the budget, binomial splits above it; memory stays within the budget."""
    def f(x, n):
        s = x
        for i in range(n):
            s = np.sin(s) * 0.9 + 0.1 * s
        return np.sum(s)
    x = np.linspace(0.1, 1.0, 16)
    w = x.nbytes
    for budget in (8 * w, 40 * w, 10 ** 9):
        r = pb.memory_report(f, x, np.int64(300), checkpoint=pb.Budget(bytes=budget))
        assert r.peak_bytes <= budget + w, (budget, r)
        np.testing.assert_allclose(pb.grad(f, checkpoint=pb.Budget(bytes=budget), backend="interp")(x, np.int64(300)),
                                   pb.grad(f, backend="interp")(x, np.int64(300)), rtol=1e-12)
    # everything fits: one re-execution stores the whole run (no splitting)
    assert pb.memory_report(f, x, np.int64(300), checkpoint="auto").recompute_factor < 3.1


def test_budget_fits_and_prefers_storing():
    x = np.linspace(0.1, 1.0, 16)
    w = x.nbytes
    r = pb.memory_report(_loop(400), x, checkpoint=pb.Budget(bytes=8 * w))
    assert r.peak_bytes <= 8 * w + w
    roomy = pb.memory_report(_loop(400), x, checkpoint=pb.Budget(bytes=10 ** 9))
    assert roomy.peak_bytes == pb.memory_report(_loop(400), x).peak_bytes  # fits: store every iteration


def test_strip_mining_memory_and_recompute():
    """k levels: about k * t**(1/k) states, each iteration executed k + 2 times at most
    (the forward sweep, one advance per level above the last, the store-all level's two)."""
    x = np.linspace(0.1, 1.0, 16)
    w = x.nbytes
    for k in (2, 3):
        for t in (200, 3000):
            r = pb.memory_report(_loop(t), x, checkpoint=pb.StripMine(levels=k))
            assert r.peak_bytes <= 2 * k * math.ceil(t ** (1 / k)) * w, (k, t, r)
            assert r.recompute_factor <= k + 2, (k, t, r)


def test_online_is_the_binomial_schedule_on_the_counted_trips():
    def f(x):
        s = x
        while s[0] < 50.0:
            s = s * 1.05 + np.sin(s) * 0.1 + 0.05
        return np.sum(s)
    x = np.linspace(0.5, 1.0, 8)
    r = pb.memory_report(f, x, checkpoint=pb.Online(snapshots=3))
    assert r.peak_bytes <= 4 * (x.nbytes + 1)  # 3 snapshots and the working state (the array and the bool condition)
    np.testing.assert_allclose(pb.grad(f, checkpoint=pb.Online(snapshots=3), backend="interp")(x),
                               pb.grad(f, backend="interp")(x), rtol=1e-10)


def test_auto_is_a_budget():
    x = np.linspace(0.1, 1.0, 16)
    r = pb.memory_report(_loop(100), x, checkpoint="auto")
    assert r.schedule == '"auto"' and r.peak_bytes == pb.memory_report(_loop(100), x).peak_bytes


# -- agreement with "store" ----------------------------------------------------------

def f_for(x):
    s = x
    for i in range(23):
        s = np.sin(s) + 0.3 * s + 0.01 * i
    return np.sum(s * s)


def f_while(x):
    s = x[0]
    k = 0
    while s < 10.0:
        s = s * 1.3 + x[1] * x[1]
        k += 1
    return s * k


def f_inplace(A):
    A = A.copy()
    n = A.shape[0]
    d = 1.0
    for i in range(n):
        d = d * A[i, i]
        for j in range(i + 1, n):
            f = A[j, i] / A[i, i]
            for k in range(i, n):
                A[j, k] = A[j, k] - f * A[i, k]
    return d


def f_free_array(x, W):
    h = x
    for i in range(W.shape[0]):
        h = np.tanh(W[i] * h + h)
    return np.sum(h)


def _helper(v, n):
    for _ in range(n):
        v = np.cos(v) * v
    return v


def f_branch_call(x):
    if x[0] > 0:
        y = _helper(x, 9)
    else:
        y = x
    for i in range(5):
        y = _helper(y, 3) + x
    return np.sum(y)


RNG = np.random.default_rng(0)
CASES = {
    "for": (f_for, (np.linspace(0.1, 1, 3),)),
    "while": (f_while, (np.array([1.0, 0.5]),)),
    "inplace": (f_inplace, (RNG.normal(size=(5, 5)) + 5 * np.eye(5),)),
    "free_array": (f_free_array, (RNG.normal(size=3), RNG.normal(size=(9, 3)))),
    "branch_call": (f_branch_call, (np.linspace(0.2, 0.9, 4),)),
}
STRATEGIES = {"bisection": pb.Bisection(), "binomial1": pb.Binomial(snapshots=1),
              "binomial3": pb.Binomial(snapshots=3), "budget": pb.Budget(bytes=1000),
              "strip2": pb.StripMine(levels=2), "strip3": pb.StripMine(levels=3),
              "online": pb.Online(snapshots=2), "auto": "auto"}


def _agree(f, args, cp, backend):
    argnums = tuple(range(len(args)))
    ref = pb.grad(f, argnums=argnums, backend="interp")(*args)
    got = pb.grad(f, argnums=argnums, backend=backend, checkpoint=cp)(*args)
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
@pytest.mark.parametrize("case", sorted(CASES))
def test_agrees_with_store_interp(case, strategy):
    f, args = CASES[case]
    _agree(f, args, STRATEGIES[strategy], "interp")


@pytest.mark.parametrize("case", sorted(CASES))
def test_agrees_with_store_pysource(case):
    f, args = CASES[case]
    _agree(f, args, STRATEGIES[sorted(STRATEGIES)[len(case) % len(STRATEGIES)]], "pysource")


@pytest.mark.slow
@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
@pytest.mark.parametrize("case", sorted(CASES))
def test_agrees_with_store_numba(case, strategy):
    f, args = CASES[case]
    _agree(f, args, STRATEGIES[strategy], "numba")


@pytest.mark.parametrize("strategy", ["bisection", "binomial3"])
def test_second_order(strategy):
    x = np.linspace(0.1, 1, 3)
    cp = STRATEGIES[strategy]
    np.testing.assert_allclose(pb.hessian(f_for, checkpoint=cp)(x), pb.hessian(f_for)(x), rtol=1e-9, atol=1e-11)
    # reverse over reverse: the gradient of a component of the checkpointed gradient
    g = pb.grad(lambda v: pb.grad(f_for, checkpoint=cp)(v)[1], checkpoint=cp)(x)
    np.testing.assert_allclose(g, pb.hessian(f_for)(x)[1], rtol=1e-9, atol=1e-11)


def test_cheap_gradient_under_bisection():
    """Work of the checkpointed gradient over the primal's grows like log t, not t."""
    x = np.linspace(0.1, 1.0, 8)
    ratios = []
    for t in (64, 1024):
        prim_ops, grad_ops = OpCount(), OpCount()
        run(stage(_loop(t), (x,)).prog, x, ops=prim_ops)
        run(_grad_prog(_loop(t), x, pb.Bisection()), x, ops=grad_ops)
        ratios.append(grad_ops.work / prim_ops.work)
    assert ratios[1] <= ratios[0] * (10 + 2) / (6 + 2) * 1.1, ratios


# -- errors ---------------------------------------------------------------------------

@pytest.mark.parametrize("bad, msg", [(lambda: pb.Binomial(snapshots=0), "snapshots must be an int >= 1"),
                                      (lambda: pb.Binomial(snapshots=2.5), "snapshots must be an int >= 1"),
                                      (lambda: pb.Budget(bytes=-3), "bytes must be a positive int"),
                                      (lambda: pb.StripMine(levels=0), "levels must be an int >= 1"),
                                      (lambda: pb.Online(snapshots=None), r"pb.Online\(snapshots=None\)")])
def test_bad_strategy_arguments(bad, msg):
    with pytest.raises(pb.PullbackError, match=msg) as ei:
        bad()
    assert "test_loop_schedules.py" in str(ei.value)


def test_budget_too_small_names_the_loop():
    x = np.linspace(0.1, 1.0, 16)
    with pytest.raises(pb.PullbackError, match=r"cannot hold two snapshots of this loop's state \(128 bytes each\)") as ei:
        pb.grad(_loop(50), checkpoint=pb.Budget(bytes=100))(x)
    assert "test_loop_schedules.py" in str(ei.value) and "for i in range(t)" in str(ei.value)


def test_strategy_class_instead_of_instance():
    with pytest.raises(pb.PullbackError, match="is a class; pass an instance"):
        pb.grad(f_for, checkpoint=pb.Bisection)(np.ones(3))
