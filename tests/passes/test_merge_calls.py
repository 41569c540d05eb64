"""Merging a re-executed primal call into its vjp call (passes/vjp/merge_calls.py)."""
import numpy as np

import pullback as pb
from pullback.ir.core import Apply
from pullback.ir.traverse import iter_lets


def cube(x):
    return np.sum(x * x * x)


def weighted(x, w):
    total = 0.0
    for i in range(3):
        total = total + w[i] * cube(x * (i + 1.0))   # the adjoint of w[i] reads cube's value
    return total


def squared(x):
    c = cube(x)
    return c * c                                       # cube's cotangent reads its value


def _calls(prog, name):
    return sum(1 for f in prog.funcs for st in iter_lets(f.body)
               if isinstance(st.exp, Apply) and st.exp.func == name)


def test_the_vjp_call_supplies_the_primal_value():
    x, w = np.array([0.3, -0.2, 0.5]), np.array([1.5, -0.5, 2.0])
    g = pb.grad(weighted, argnums=(0, 1), backend="interp")
    gx, gw = g(x, w)
    ks = np.arange(1.0, 4.0)
    np.testing.assert_allclose(gw, [np.sum((x * k) ** 3) for k in ks])
    np.testing.assert_allclose(gx, sum(w[i] * 3 * ks[i] ** 3 * x ** 2 for i in range(3)))
    prog = g._jit.staged(x, w).prog
    assert _calls(prog, "cube") == 0                  # each value comes from cube's vjp
    assert sum(_calls(prog, f.name) for f in prog.funcs if f.name.startswith("cube_")) >= 1


def test_a_primal_call_whose_value_feeds_the_cotangent_stays():
    x = np.array([0.3, -0.2, 0.5])
    g = pb.grad(squared, backend="interp")
    np.testing.assert_allclose(g(x), 2 * np.sum(x ** 3) * 3 * x ** 2)
    assert _calls(g._jit.staged(x).prog, "cube") == 1
