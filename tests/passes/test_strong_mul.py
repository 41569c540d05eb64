"""`passes.strong_mul` (note [strong-mul]): derivative code's guarded products
become one `smul` each, with the same values (0 * inf is 0), on numba too."""
import numpy as np

import pullback as pb
from pullback.backends import interp
from pullback.ir.core import Prim
from pullback.ir.traverse import iter_lets
from pullback.passes.strong_mul import strong_mul


def f(x, y):
    return np.sum(np.sin(x) * y * y)


def ops(prog):
    return [st.exp.op for fn in prog.funcs for st in iter_lets(fn.body) if isinstance(st.exp, Prim)]


def test_fold_and_values():
    x = np.array([0.0, 1.0, np.pi, 2.0])
    y = np.array([np.inf, 0.0, 3.0, -1.0])
    prog = pb.jit(pb.grad(f, argnums=(0, 1)), backend="interp").staged(x, y).prog
    out = strong_mul(prog)
    assert "smul" in ops(out) and ops(out).count("isnan") < ops(prog).count("isnan")
    for a, b in zip(interp.run(prog, x, y), interp.run(out, x, y)):
        np.testing.assert_array_equal(a, b)
    got = pb.jit(pb.grad(f, argnums=(0, 1)), backend="numba")(x, y)
    want = pb.jit(pb.grad(f, argnums=(0, 1)), backend="interp")(x, y)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
