"""A fused loop writes the in-place updates and the concatenations that
consume its elementwise results itself (note [numba-fusion], "stores"): no
temporary, no second pass. Results are bit for bit those of the unfused form
(the additions into each element are the same, in the same order) and the
interpreter's; the cases that must keep the temporary keep it."""
import re

import numpy as np
import pytest

pytest.importorskip("numba")

import pullback as pb
from pullback.backends import interp
from pullback.backends import numba_backend as nb
from _fusion_check import agrees_without  # noqa: E402

# a fused result written by its own loop into an update or a concatenation
_WRITE = re.compile(r"^\s+\w+\[[^\]]*\bi0\w*[^\]]*\] \+?= \w+_k  # pb:(index_update|concatenate)$", re.M)


def shifted_product(x, y):                   # ode's right-hand side
    return np.concatenate([x[:1], x[1:] * y[:-1]])


def two_pieces(x, y):                        # both loop pieces written, the middle one copied
    return np.concatenate([np.sin(x) * y, x[:2], np.cos(y) + x])


def columns_2d(A, B):                        # along axis 1
    return np.concatenate([A * B, A], axis=1)


def rows_2d(A, B):                           # along axis 0
    return np.concatenate([A, np.exp(A) * B], axis=0)


def slice_added(x, y):
    z = np.zeros(x.shape[0] + 1)
    z[1:] += x * y                           # one statement: its loop writes z
    z[:-1] += np.sin(x) - y
    return z


def two_arrays(x, y):
    a = np.ones(x.shape[0])
    b = np.zeros(x.shape[0] + 2)
    t = x * y
    u = t + 1.0
    a[:] += t
    b[2:] = u                                # set, into a second array, past a pure statement
    return a, b


def piece_used_again(x, y):                  # the piece is read after the concatenation
    p = x * y + 1.0
    return np.concatenate([p, x]), p


def piece_twice(x, y):
    p = x * y + 1.0
    return np.concatenate([p, p])


def reads_its_target(x, y):                  # the loop reads z: it may not write z
    z = np.ones(x.shape[0])
    z[:] += z * y + x
    return z


def old_array_read(x, y):                    # z is read after its update: a copy, not in place
    z = np.ones(x.shape[0])
    w = z
    z2 = z.copy()
    z2[:] += x * y + 1.0
    return z2, w


def view_read(x, y):                         # the loop reads a view of z
    z = np.ones(x.shape[0])
    v = z[::-1]
    z[:] += v * y + x
    return z


CASES = [
    (shifted_product, [(9,), (9,)], True),
    (two_pieces, [(6,), (6,)], True),
    (columns_2d, [(3, 4), (3, 4)], True),
    (rows_2d, [(3, 4), (3, 4)], True),
    (slice_added, [(7,), (7,)], True),
    (two_arrays, [(5,), (5,)], True),
    (piece_used_again, [(5,), (5,)], False),
    (piece_twice, [(5,), (5,)], False),
    (reads_its_target, [(5,), (5,)], False),
    (view_read, [(5,), (5,)], False),
    (pb.grad(lambda x, y: np.sum(np.sin(shifted_product(x, y)) ** 2)), [(8,), (8,)], True),
]


@pytest.mark.parametrize("f, shapes, written", CASES, ids=[getattr(c[0], "__name__", "grad") for c in CASES])
def test_loop_writes_its_stores(monkeypatch, f, shapes, written):
    rng = np.random.default_rng(5)
    args = [rng.standard_normal(s) for s in shapes]
    prog = pb.jit(f).staged(*args).prog
    fn = nb.compile_prog(prog, parallel=False)
    assert bool(_WRITE.search(fn.source)) == written, fn.source
    plain = agrees_without(monkeypatch, prog, args, fn, "_store")
    assert not _WRITE.search(plain.source), plain.source


def test_an_update_not_in_place_keeps_its_copy():
    rng = np.random.default_rng(6)
    args = [rng.standard_normal(5), rng.standard_normal(5)]
    prog = pb.jit(old_array_read).staged(*args).prog
    fn = nb.compile_prog(prog, parallel=False)
    z2, w = fn(*args)
    np.testing.assert_array_equal(w, np.ones(5))          # the old array is unchanged
    np.testing.assert_allclose(z2, 1.0 + args[0] * args[1] + 1.0)


def test_stores_into_one_array_stay_in_order():
    """Two updates of one array from one loop would interleave the additions
    into shared elements: only the first is written by the loop."""
    def f(x, y):
        z = np.zeros(x.shape[0] + 1)
        t = x * y
        u = x - y
        z[1:] += t
        z[:-1] += u
        return z

    rng = np.random.default_rng(7)
    args = [rng.standard_normal(6), rng.standard_normal(6)]
    prog = pb.jit(f).staged(*args).prog
    fn = nb.compile_prog(prog, parallel=False)
    assert len(_WRITE.findall(fn.source)) == 1, fn.source
    np.testing.assert_array_equal(fn(*args)[0], interp.run(prog, *args)[0])
