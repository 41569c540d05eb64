"""A concatenation of many pieces prints as an allocation and one loop nest per
piece (`NumbaDialect.concat_copies`, note [compile-time], "Concatenations"):
numba's `np.concatenate` of a long tuple compiles for tens of seconds (ht's
`np.stack` of 22 bone transforms). Results are bit for bit the interpreter's
and NumPy's; two pieces print as one call (`_pb_concat`, note [compile-time],
"Concatenations in place")."""
import re

import numpy as np
import pytest

pytest.importorskip("numba")

import pullback as pb
from pullback.backends import interp
from pullback.backends import numba_backend as nb
from pullback.backends.numba_dialect import CONCAT_COPIES

_CALL = re.compile(r"(?:np\.concatenate|_pb_concat)\(\(([^)]*)\)")
_COPY = re.compile(r"^\s+\w+\[[\w, +]+\] = \w+\[[\w, ]+\]  # pb:concatenate$", re.M)   # in a loop nest
_SLICE = re.compile(r"^\s+\w+\[[^]]*:[^]]*\] = \w+  # pb:concatenate$", re.M)          # a slice assignment


def stacked(R):                               # ht's bone chain: np.stack of products
    mats = [R[0]]
    for i in range(1, R.shape[0]):
        mats.append(mats[-1] @ R[i])
    return np.stack(mats)


def columns(A, B):                            # axis 1, pieces of different widths
    return np.concatenate([A, B[:, :1], np.sin(A) * 2.0, B], axis=1)


def with_empty(x, y):                         # an empty piece and a one-element piece
    return np.concatenate([x, y[:0], y[:1], y[::-1]])


def two(x, y):
    return np.concatenate([x, y])


CASES = [(stacked, [(5, 3, 3)], True), (columns, [(3, 4), (3, 2)], True),
         (with_empty, [(5,), (5,)], True), (two, [(4,), (3,)], False)]


@pytest.mark.parametrize("f, shapes, copies", CASES, ids=[c[0].__name__ for c in CASES])
def test_many_pieces_are_copied_into_one_allocation(f, shapes, copies):
    rng = np.random.default_rng(8)
    args = [rng.standard_normal(s) for s in shapes]
    prog = pb.jit(f).staged(*args).prog
    fn = nb.compile_prog(prog, parallel=False)
    calls = [m.group(1).count(",") + 1 for m in _CALL.finditer(fn.source)]
    assert all(n < CONCAT_COPIES for n in calls), fn.source
    assert bool(_COPY.search(fn.source)) == copies and bool(calls) != copies, fn.source
    assert not _SLICE.search(fn.source), fn.source
    (got,) = fn(*args)
    # `stacked`'s 3 x 3 products are loops on numba, BLAS in NumPy: equal to rounding (note [small-matmul])
    same = np.testing.assert_array_equal if f is not stacked else (
        lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-13, atol=1e-13))
    same(got, interp.run(prog, *args)[0])
    same(got, f(*args))


def test_gradient_through_a_long_stack():
    R = np.random.default_rng(9).standard_normal((5, 3, 3)) * 0.5

    def loss(R):
        return np.sum(np.sin(stacked(R)))

    g = pb.grad(loss, backend="numba")(R)
    want = pb.grad(loss, backend="interp")(R)
    np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-12)
    src = nb.emit_prog(nb.lower(pb.jit(pb.grad(loss), backend="numba").staged(R).prog), parallel=False)
    assert not [m for m in _CALL.finditer(src) if m.group(1).count(",") + 1 >= CONCAT_COPIES]
