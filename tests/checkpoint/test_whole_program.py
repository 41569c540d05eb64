"""Whole-program checkpointing (note [loop-checkpointing]): a recursive program
under a loop strategy runs as its step machine, whose loop the schedule
reverses; and the slides' step counter and interrupt/resume capsules."""
from __future__ import annotations

import math

import numpy as np
import pytest

import pullback as pb


def chain(x, d):
    if d == 0:
        return x
    return np.sin(chain(x, d - 1)) * 1.01 + 0.1 * x


def tree(x, d):
    if d == 0:
        return np.sin(x)
    return tree(x * 0.9, d - 1) + tree(x * 1.1, d - 1) * 0.5


def _vt(v, d):
    if d == 0:
        return np.tanh(v)
    return _vt(v * 0.9, d - 1) * _vt(v[::-1] + 0.1, d - 1)


def vec_tree(v, d):
    return np.sum(_vt(v, d))


CASES = {"chain": (chain, (0.3, np.int64(25))), "tree": (tree, (0.7, np.int64(6))),
         "vec_tree": (vec_tree, (np.linspace(-0.5, 0.5, 4), np.int64(4)))}
STRATEGIES = {"bisection": pb.Bisection(), "binomial3": pb.Binomial(snapshots=3), "strip2": pb.StripMine(levels=2)}


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
@pytest.mark.parametrize("case", sorted(CASES))
def test_recursive_gradients_agree_with_store(case, strategy):
    f, args = CASES[case]
    ref = pb.grad(f, backend="interp")(*args)
    got = pb.grad(f, backend="interp", checkpoint=STRATEGIES[strategy])(*args)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-14)


def test_recursive_gradient_pysource():
    f, args = CASES["vec_tree"]
    np.testing.assert_allclose(pb.grad(f, backend="pysource", checkpoint=pb.Bisection())(*args),
                               pb.grad(f, backend="interp")(*args), rtol=1e-12)


def test_the_derivative_program_is_a_step_machine():
    src = pb.derivative_source(chain, 0.3, np.int64(3), checkpoint=pb.Bisection())
    assert "def chain_step(" in src and "_ckpt(" in src and "store_copy" in src


def test_bisection_memory_grows_with_log_of_the_steps():
    """A tree recursion: its state (the call stack) is O(d) values and its run
    t = O(2**d) steps; bisection keeps O(log t) states, so memory grows like
    d * log t = d**2, where the steps grow like 2**d."""
    peaks = {}
    for d in (5, 9):
        r = pb.memory_report(tree, 0.7, np.int64(d), checkpoint=pb.Bisection())
        t = pb.primops(tree, 0.7, np.int64(d))
        w_max = 16 * (d + 2) + 64  # the stack: a tag and a value per level, plus the registers
        assert r.peak_bytes <= 2 * w_max * math.ceil(math.log2(t)), (d, r, t)
        peaks[d] = (r.peak_bytes, t)
    (p5, t5), (p9, t9) = peaks[5], peaks[9]
    assert t9 / t5 > 12 and p9 / p5 < 4


def test_primops_interrupt_resume():
    args = (0.7, np.int64(5))
    t = pb.primops(tree, *args)
    assert t > 2 ** 5
    want = tree(*args)
    for steps in (0, 1, t // 3, t - 1, t, t + 10):
        c = pb.interrupt(tree, *args, steps=steps)
        assert c.steps == min(steps, t) and c.done == (steps >= t)
        assert pb.resume(c) == want and pb.resume(c) == want  # a capsule resumes any number of times


def test_capsule_on_pysource_with_arrays():
    args = (np.linspace(-0.5, 0.5, 4), np.int64(3))
    c = pb.interrupt(vec_tree, *args, steps=7, backend="pysource")
    np.testing.assert_allclose(pb.resume(c), vec_tree(*args), rtol=1e-14)


def test_machine_errors():
    with pytest.raises(pb.PullbackError, match="steps=-1 must be an int >= 0") as ei:
        pb.interrupt(tree, 0.7, np.int64(3), steps=-1)
    assert "test_whole_program.py" in str(ei.value)
    with pytest.raises(pb.PullbackError, match="resume needs a Capsule"):
        pb.resume((1, 2))
    with pytest.raises(pb.PullbackError, match="backend='numba' is not supported"):
        pb.primops(tree, 0.7, np.int64(3), backend="numba")


def test_store_copy_is_independent_of_the_original():
    from pullback.ir.prims.stores import StoreValue, _copy_impl

    s = StoreValue(8)
    s.push(1.0).push(2.0)
    c = _copy_impl(s)
    s.pop()
    s.push(5.0)
    assert c.pop()[1] == 2.0 and c.pop()[1] == 1.0 and s.items == [1.0, 5.0]


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["bisection", "binomial3"])
def test_recursive_gradients_numba(strategy):
    for case in ("tree", "vec_tree"):
        f, args = CASES[case]
        np.testing.assert_allclose(pb.grad(f, backend="numba", checkpoint=STRATEGIES[strategy])(*args),
                                   pb.grad(f, backend="interp")(*args), rtol=1e-12)
