"""`passes.scalarize` (note [scalarize]): small static arrays become one scalar
per element. Values are bit-for-bit those of the array program, on the
interpreter and on numba (which runs the pass); loops carry scalars, and the
arrays that reach a call or a result are packed."""
import numpy as np
import pytest

import pullback as pb
from pullback.backends import interp
from pullback.ir.core import Loop
from pullback.ir.traverse import iter_lets
from pullback.passes.scalarize import scalarize


def euler(v):
    x = np.array([0.0, 8.0])
    xdot = np.array([0.75, v])
    steps = 0
    while x[1] > 0.0 and steps < 500:
        r = x - np.array([10.0, 0.0])
        a = -r / np.sqrt(np.sum(r * r)) ** 3
        x = x + 0.1 * xdot
        xdot = xdot + 0.1 * a
        steps += 1
    return x[0] ** 2 + np.sum(xdot)


def shapes(A, b):
    M = A.reshape(2, 2).T + np.full((2, 2), -0.0)
    M[0, 1] = b * 2.0
    c = np.concatenate([M[0], M[:, 1]]) * np.array([1.0, -1.0, 0.5, 2.0])
    return np.sum(c) + np.sum(M, axis=0) @ np.array([1.0, 3.0]) + np.max(np.abs(c))


def called(A):
    return np.linalg.norm(A[:3] * 2.0) + A[0]


def reversed_(x):                # slices with open ends and negative steps (x[::-1] has no stop)
    return np.sum(x[::-1] * x) + x[:-4:-1][0] * x[::2][1]


CASES = [(euler, (0.3,)), (shapes, (np.arange(4.0) - 1.5, 0.7)), (called, (np.array([3.0, -4.0, 1.0, 2.0]),)),
         (reversed_, (np.array([0.3, 1.7, 2.5]),))]


def loops_carry_arrays(prog):
    return [p for f in prog.funcs for st in iter_lets(f.body) if isinstance(st.exp, Loop)
            for p in st.exp.params if p.type.shape]


@pytest.mark.parametrize("fun, args", CASES, ids=[c[0].__name__ for c in CASES])
@pytest.mark.parametrize("deriv", [False, True])
def test_same_bits_on_interp(fun, args, deriv):
    f = pb.grad(fun) if deriv else fun
    prog = pb.jit(f, backend="interp").staged(*args).prog
    out = scalarize(prog)
    assert out is not prog
    a, b = interp.run(prog, *args), interp.run(out, *args)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
        assert np.array_equal(np.signbit(np.asarray(x)), np.signbit(np.asarray(y)))


def test_loops_carry_scalars():
    prog = pb.jit(euler, backend="interp").staged(0.3).prog
    assert loops_carry_arrays(prog) and not loops_carry_arrays(scalarize(prog))


@pytest.mark.parametrize("fun, args", CASES, ids=[c[0].__name__ for c in CASES])
def test_numba_matches_interp(fun, args):
    for f in (fun, pb.grad(fun)):
        want = pb.jit(f, backend="interp")(*args)
        got = pb.jit(f, backend="numba")(*args)
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)


def test_negative_zero_kept():
    prog = pb.jit(neg_zero, backend="interp").staged(2.0).prog
    r = interp.run(scalarize(prog), 2.0)[0]
    assert r == 0.0 and np.signbit(r)


def neg_zero(x):
    v = np.array([-0.0, x])
    return np.sum(v[:1]) * 1.0
