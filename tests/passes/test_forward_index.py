"""`passes.forward_index` (note [forward-index]): constant scalar reads of a
sliced or concatenated array read the original element; the minors of det by
minors are then not allocated, and every value is unchanged."""
import numpy as np
import pytest

import pullback as pb
from pullback.backends import interp
from pullback.ir.traverse import iter_lets
from pullback.passes.forward_index import forward_index
from pullback.passes.inline import inline_small


def minor(A, j):
    rest = A[1:, :]
    return np.concatenate([rest[:, :j], rest[:, j + 1:]], axis=1)


def det(A):
    n = A.shape[0]
    if n == 2:
        return A[0, 0] * A[1, 1] - A[0, 1] * A[1, 0]
    total, sign = 0.0, 1.0
    for j in range(n):
        total = total + sign * A[0, j] * det(minor(A, j))
        sign = -sign
    return total


def reads(A):
    B = np.concatenate([A[::2, 1:], A[1::2, :-1]], axis=0)[:, ::-1]
    return B[0, 0] * B[1, 2] + B[-1, 0] - A[1][2]


def ops(prog, name):
    return [st.exp.op for st in iter_lets(prog.func(name).body) if hasattr(st.exp, "op")]


@pytest.mark.parametrize("fun, shape", [(det, (3, 3)), (reads, (4, 5))])
def test_values_unchanged_and_intermediates_gone(fun, shape):
    A = np.random.default_rng(0).standard_normal(shape)
    prog = inline_small(pb.jit(fun).staged(A).prog)
    out = forward_index(prog)
    assert "concatenate" in ops(prog, prog.entry)
    assert "concatenate" not in ops(out, out.entry)
    np.testing.assert_allclose(interp.run(out, A), interp.run(prog, A), rtol=0, atol=0)


def test_gradient_through_the_pass_on_numba():
    A = np.random.default_rng(1).standard_normal((4, 4))
    np.testing.assert_allclose(pb.jit(det, backend="numba")(A), np.linalg.det(A), rtol=1e-12)
    np.testing.assert_allclose(pb.grad(det, backend="numba")(A), np.linalg.det(A) * np.linalg.inv(A).T, rtol=1e-10)
