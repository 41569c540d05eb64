"""Interprocedural dead-result elimination (passes/dead_results.py)."""
import numpy as np

import pullback as pb
from pullback.passes.dead_results import dead_results


def helper(x):
    return np.sum(x * x * x)     # no transcendental: reverse mode keeps the call (note [inline-for-ad])


def f(x):
    return helper(x) * 2.0


def test_grad_drops_the_primal_call_it_does_not_read():
    x = np.linspace(0.1, 1.0, 5)
    g = pb.grad(f, backend="interp")
    np.testing.assert_allclose(g(x), 6.0 * x * x)
    prog = g._jit.staged(x).prog
    names = {fn.name for fn in prog.funcs}
    assert "helper" not in names, names          # only its vjp is left
    assert any(n.startswith("helper") for n in names), names
    entry = prog.func(prog.entry)
    assert len(entry.ret_types) == 1


def test_entry_results_are_kept_and_program_is_a_fixpoint():
    x = np.linspace(0.1, 1.0, 5)
    vg = pb.value_and_grad(f, backend="interp")
    v, gx = vg(x)
    np.testing.assert_allclose(v, 2.0 * np.sum(x ** 3))
    np.testing.assert_allclose(gx, 6.0 * x * x)
    prog = vg._jit.staged(x).prog
    assert dead_results(prog) == prog
