"""`passes.scalarize` (note [scalarize]): small static arrays become one scalar
per element. Values are bit-for-bit those of the array program, on the
interpreter and on numba (which runs the pass); loops carry scalars, and the
arrays that reach a call or a result are packed."""
import numpy as np
import pytest

import pullback as pb
from pullback.backends import interp
from pullback.ir.core import Apply, Loop, Prim
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


def det(A):                      # Laplace expansion: 3 x 3 minors, and empty slices at j = 0
    n = A.shape[0]
    if n == 2:
        return A[0, 0] * A[1, 1] - A[0, 1] * A[1, 0]
    total = 0.0
    for j in range(n):
        rest = A[1:, :]
        minor = np.concatenate([rest[:, :j], rest[:, j + 1:]], axis=1)
        total = total + (-1.0) ** j * A[0, j] * det(minor)
    return total


def rotate(w, x):                # a 3 x 3 matrix built and used elementwise
    c, s = np.cos(w), np.sin(w)
    R = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    return np.sum((R * R.T) @ x)


def stacked(r, x):              # nine scalars stacked into a vector, then a 3 x 3 matrix (ht's rotation)
    a, b, c = r[0], r[1], r[2]
    R = np.stack([a * a, a * b - c, a * c + b, a * b + c, b * b, b * c - a, a * c - b, b * c + a,
                  c * c]).reshape(3, 3)
    return np.sum(R @ x) + R[1, 2] * R[2, 1]


def stacked_whole(r, x):         # a built vector of six elements used whole: it is packed once
    v = np.stack([r[0], r[1] * 2.0, -r[2], r[0] * r[1], r[2] + 1.0, r[1]])
    return np.sum(v * x) + np.max(v)


CASES = [(euler, (0.3,)), (shapes, (np.arange(4.0) - 1.5, 0.7)), (called, (np.array([3.0, -4.0, 1.0, 2.0]),)),
         (reversed_, (np.array([0.3, 1.7, 2.5]),)),
         (det, (np.arange(16.0).reshape(4, 4) % 7 - 2.5,)), (rotate, (0.4, np.array([1.0, -2.0, 0.5]))),
         (stacked, (np.array([0.3, -1.2, 0.7]), np.array([1.0, -2.0, 0.5]))),
         (stacked_whole, (np.array([0.3, -1.2, 0.7]), np.arange(6.0) - 2.5))]


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


@pytest.mark.parametrize("shape, small", [((4,), True), ((5,), False), ((8,), False), ((3, 3), True),
                                          ((2, 5), False), ((1, 9), True), ((2, 0), True), ((0,), True),
                                          ((3, 4), False), ((), False)])
def test_which_arrays_are_small(shape, small):
    """Vectors up to 4 elements, matrices up to 9, and empty arrays (note [scalarize])."""
    from pullback.ir.types import TensorType
    from pullback.passes.scalarize import small_type

    assert small_type(TensorType("f64", shape)) == small


def test_det_minors_allocate_nothing():
    """det's 3 x 3 minors and their adjoints (empty slices included) are scalar
    code: the numba gradient of a 4 x 4 determinant makes no 3 x 3 array."""
    from pullback.backends import numba_backend as nb

    A = np.arange(16.0).reshape(4, 4) % 7 - 2.5
    prog = nb.lower(pb.jit(pb.grad(det), backend="numba").staged(A).prog)
    called = {st.exp.func for f in prog.funcs for st in iter_lets(f.body) if isinstance(st.exp, Apply)}
    live = [f for f in prog.funcs if f.name == prog.entry or f.name in called]
    assert all(f.params[0].type.shape != (3, 3) for f in live if f.params)   # the 3 x 3 level is inlined
    for f in live:
        for st in iter_lets(f.body):
            assert not (isinstance(st.exp, Prim) and st.exp.op in ("full", "concatenate")
                        and st.pat[0].type.shape == (3, 3)), st


def empty_sums(x):
    e = x[:0] * 2.0
    return np.sum(e) + np.sum(e.reshape(0, 2), axis=0)[1] + x[0]


def test_a_sum_of_nothing_stays_a_sum():
    """An empty array is small; its sums are zeros (a KeyError in scalarize
    once, an internal error of pb.map over a width of 0 on numba)."""
    x = np.array([0.5, -1.0, 2.0])
    prog = pb.jit(empty_sums, backend="interp").staged(x).prog
    assert interp.run(scalarize(prog), x)[0] == interp.run(prog, x)[0] == 0.5


def _prims(prog, op):
    return [st for f in prog.funcs for st in iter_lets(f.body) if isinstance(st.exp, Prim) and st.exp.op == op]


def test_arrays_built_from_scalars_are_one_pack():
    """A concatenation of scalarised pieces into an array too large to
    scalarise is one pack of its elements, not a one-element pack per piece and
    a concatenation; a reshape of it into a small matrix is scalar again
    (note [scalarize], "Arrays built from scalars")."""
    r, x = np.array([0.3, -1.2, 0.7]), np.array([1.0, -2.0, 0.5])
    for f in (stacked, pb.grad(stacked)):
        prog = pb.jit(f, backend="interp").staged(r, x).prog
        assert _prims(prog, "concatenate")
        out = scalarize(prog)
        assert not _prims(out, "concatenate")
        # no one-element packs; the reversed stack reads the adjoint's elements, not (1,) slices
        assert all(st.pat[0].type.shape != (1,) for st in _prims(out, "full"))
        assert all(st.pat[0].type.shape != (1,) for st in _prims(out, "index"))
    out = scalarize(pb.jit(stacked_whole, backend="interp").staged(r, np.arange(6.0)).prog)
    assert not _prims(out, "concatenate") and [st.pat[0].type.shape for st in _prims(out, "full")] == [(6,)]
