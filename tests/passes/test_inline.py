"""Inlining small functions (passes/inline.py), as the numba backend does before codegen."""
import numpy as np

import pullback as pb
from pullback.backends import interp
from pullback.ir.core import Apply
from pullback.ir.traverse import iter_lets
from pullback.passes.inline import inline_small

from ._irprogs import recursive


def sq(v):
    return v * v


def scaled(v, c):
    return sq(v) * c, c + 1.0


def looped(x):
    s = 0.0
    for i in range(x.shape[0]):
        a, b = scaled(x[i], 2.0)
        s = s + a + b
    return s


def _calls(prog):
    return [st.exp.func for f in [prog.func(prog.entry)] for st in iter_lets(f.body) if isinstance(st.exp, Apply)]


def test_small_calls_in_loops_are_inlined_and_results_unchanged():
    x = np.array([0.5, -1.0, 2.0])
    prog = pb.jit(looped, backend="interp").staged(x).prog
    assert _calls(prog)  # the staged program calls scaled
    out = inline_small(prog)
    assert not _calls(out)
    assert interp.run(out, x) == interp.run(prog, x)
    assert np.isclose(interp.run(out, x)[0], np.sum(2 * x * x + 3.0))


def test_recursive_functions_stay_calls():
    prog = recursive()  # g(x, n) calls itself: a small body, but never inlined
    assert inline_small(prog) == prog
    assert np.isclose(interp.run(prog, 0.3, 3)[0], interp.run(inline_small(prog, max_stmts=100), 0.3, 3)[0])


def test_numba_gradient_through_inlined_helpers():
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(pb.grad(looped, backend="numba")(x), 4 * x)
