"""det by minors (issue 13 §2): the staged program grows with the source program,
not with the recursion tree. Laplace expansion makes l! products at run time, but
`det` and `minor` are staged once per argument signature (matrix size, and the
static column j), so the program has O(l^2) functions and statements."""
import numpy as np

import pullback as pb
from pullback.gradbench.modules.det import det
from pullback.ir.traverse import iter_lets


def _size(f, l):
    prog = getattr(f, "_jit", f).staged(np.eye(l) * 2 + 0.1).prog   # pb.grad stages through its jit
    return sum(1 for fn in prog.funcs for _ in iter_lets(fn.body)), len(prog.funcs)


def test_staged_det_grows_polynomially():
    for f in (pb.jit(det, backend="interp"), pb.grad(det, backend="interp")):
        (s6, f6), (s9, f9) = _size(f, 6), _size(f, 9)
        # (9/6)^2 = 2.25 for quadratic growth, 9!/6! = 504 for the recursion tree
        assert s9 / s6 < 3.0 and f9 / f6 < 3.0, (s6, s9, f6, f9)
