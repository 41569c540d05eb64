"""Concatenations written straight into a later concatenation (`numba_slots`,
note [concat-slots]) and the copies of a concatenation along a later axis
sharing one loop over the leading axes (`numba_regions.copy_pieces`), and a
gradient's stores into rows after an update hoisted before the fused loop
(`numba_fusion`). Results are bit for bit the interpreter's and NumPy's."""
import re

import numpy as np
import pytest

pytest.importorskip("numba")

import pullback as pb
from pullback.backends import interp
from pullback.backends import numba_backend as nb

_PLACED = "in place (note [concat-slots])"


def flat_then_tail(A, B, w):       # ba's vals: a stack of columns, flattened, then more entries
    return np.concatenate([np.stack([A[0], A[1], B[0], B[1]], axis=1).reshape(-1), -2.0 * w])


def nested(x, y):                  # inner into middle into outer
    m = np.concatenate([np.concatenate([x, y, x]), y])
    return np.concatenate([m, np.sin(x)])


def two_pieces(x, y):              # numba's own np.concatenate otherwise
    return np.concatenate([np.concatenate([x, y]), y])


def read_again(x, y):              # the inner result is read twice: copied, not placed
    a = np.concatenate([x, y, x])
    return np.concatenate([a, y]) * np.sum(a)


def strided_slot(A, B):            # along axis 1 of 3 rows: the slot is not contiguous
    return np.concatenate([np.concatenate([A, B, A], axis=1), B], axis=1)


def rows_slot(A, B):               # along axis 0, after a unit axis: contiguous
    return np.concatenate([np.concatenate([A, B, A])[None], B[None, :1]], axis=1)


CASES = [(flat_then_tail, [(2, 5), (2, 5), (3,)], 1), (nested, [(4,), (3,)], 2),
         (two_pieces, [(4,), (3,)], 1), (read_again, [(4,), (3,)], 0),
         (strided_slot, [(3, 2), (3, 4)], 0), (rows_slot, [(2, 3), (1, 3)], 1)]


@pytest.mark.parametrize("f, shapes, placed", CASES, ids=[c[0].__name__ for c in CASES])
def test_inner_concatenations_are_written_in_place(f, shapes, placed):
    rng = np.random.default_rng(3)
    args = [rng.standard_normal(s) for s in shapes]
    prog = pb.jit(f).staged(*args).prog
    fn = nb.compile_prog(prog, parallel=False)
    assert fn.source.count(_PLACED) == placed, fn.source
    (got,) = fn(*args)
    np.testing.assert_array_equal(got, interp.run(prog, *args)[0])
    np.testing.assert_array_equal(got, f(*args))


def test_gradient_through_placed_concatenations():
    A, B, w = (np.random.default_rng(4).standard_normal(s) for s in ((2, 5), (2, 5), (3,)))

    def loss(A, B, w):
        return np.sum(np.sin(flat_then_tail(A, B, w)) * np.arange(23.0))

    got = pb.grad(loss, argnums=(0, 1, 2), backend="numba")(A, B, w)
    want = pb.grad(loss, argnums=(0, 1, 2), backend="interp")(A, B, w)
    for g, h in zip(got, want):
        np.testing.assert_allclose(g, h, rtol=1e-13, atol=1e-13)


def columns(M):                    # 6 columns of length 50: one pass over the result
    return np.stack([M[k] for k in range(6)], axis=1)


def test_copies_along_a_later_axis_share_one_loop():
    M = np.random.default_rng(5).standard_normal((6, 50))
    prog = pb.jit(columns).staged(M).prog
    fn = nb.compile_prog(prog, parallel=False)
    loops = re.findall(r"^\s+for \w+ in range\((\d+)\):  # pb:concatenate$", fn.source, re.M)
    assert loops == ["50"], fn.source
    assert len(re.findall(r"\[\w+, \d\] = \w+\[\w+, 0\]  # pb:concatenate$", fn.source, re.M)) == 6, fn.source
    (got,) = fn(M)
    np.testing.assert_array_equal(got, M.T)


def rows_loss(P, w):               # P[0]'s adjoint is w itself: an update hoisted before the loop
    return np.sum(np.exp(P[2]) + np.sin(P[1]) * w + P[0] * w)


def test_stores_after_a_hoisted_update_stay_in_the_loop():
    # (numba_fusion: a hoisted update of an array starts a chain of the loop's stores into it)
    P, w = np.random.default_rng(6).standard_normal((3, 40)), np.linspace(0.0, 1.0, 40)
    prog = pb.jit(pb.grad(rows_loss)).staged(P, w).prog
    src = nb.emit_prog(nb.lower(prog), parallel=False)
    body = src[src.index("def rows_loss_vjp"):]
    assert len(re.findall(r"^\s+for ", body, re.M)) == 2, body   # the hoisted row, then one fused loop
    g = pb.grad(rows_loss, backend="numba")(P, w)
    np.testing.assert_array_equal(g, pb.grad(rows_loss, backend="interp")(P, w))
