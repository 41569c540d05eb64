"""Updates in the middle of a fused run (note [numba-fusion], "stores in the
run"): the loop writes them itself and later statements of the run read the
stored value as the scalar, so a run no longer ends at each update; chains of
updates into disjoint rows of one array (the adjoint of `c[0]`, `c[1]`, ...),
or into one row in the order the loop computes their values, are written by
one loop. Results are bit for bit those of the unfused form
and equal to the interpreter's; updates that overlap, or whose array the run
reads, end the run as before."""
import re

import numpy as np
import pytest

pytest.importorskip("numba")

import pullback as pb
from pullback.backends import numba_regions
from pullback.backends import numba_backend as nb
from _fusion_check import agrees_without  # noqa: E402

_LOOP = re.compile(r"^\s+for \w+ in range\(", re.M)
_WRITE = re.compile(r"^\s+\w+\[[^\]]*\bi0\w*[^\]]*\] \+?= \w+_k  # pb:index_update$", re.M)


def read_later(x, y):                     # the stored value is read again by the run
    z = np.zeros((2, x.shape[0]))
    t = x * y
    z[0] += t
    u = np.sin(t) + x
    z[1] = u
    return z, u * y


def disjoint_rows(x, y):                  # a chain of updates into rows 0, 2, 1 of one array
    z = np.ones((3, x.shape[0]))
    a = x * y
    z[0] += a
    b = a - x
    z[2] += b
    c = np.cos(b) * a
    z[1] = c
    return z


def rows_grad(c):                         # ba's shape: the adjoint of c[0], c[1], c[2]
    a = c[0] * c[1] - c[2]
    b = np.sin(c[2]) + a * c[0]
    return np.sum(b * b)


def same_row(x, y):                       # a second update of the row, after the first
    z = np.ones((2, x.shape[0]))
    a = x * y
    z[0] += a
    b = a + 1.0
    z[0] += b
    return z


def same_row_reversed(x, y):              # ... whose value the loop computes first: not written
    z = np.ones((2, x.shape[0]))
    b = x + y
    a = x * y
    z[0] += a
    z[0] += b
    return z


def overlapping(x, y):                    # slices that share elements
    z = np.zeros(x.shape[0] + 1)
    a = x * y
    z[1:] += a
    b = a - y
    z[:-1] += b
    return z


def reads_ahead(x, y):                    # the run reads the updated array one element ahead
    z = np.ones(x.shape[0] + 1)
    t = x * y
    z[:-1] += t
    u = z[1:] * x + t
    return u


def reads_old_view(x, y):                 # a view of the array, made before, read after the update
    z = np.ones(x.shape[0])
    v = z[::-1]
    t = x * y
    z[:] += t
    return z, v * t + x


def updates_a_run_result(x, y):           # the updated array is the run's own result
    t = x * y
    u = np.sin(x) + y
    t[1:] += u[1:]
    return t + 1.0


def updates_a_run_result_2d(c, y):        # ... in two dimensions, as an adjoint can
    t = c * y
    t[0] += np.cos(t[1])
    return t


def reversed_product(a):                  # its adjoint updates a result of the run (c_adj)
    c = np.transpose(a.reshape(2, 3, 4), (1, 0, 2))
    return np.sum(c * c[::-1])


CASES = [
    (read_later, [(9,), (9,)], 1, 2),
    (disjoint_rows, [(7,), (7,)], 1, 3),
    (pb.grad(rows_grad), [(3, 8)], 1, 5),
    (same_row, [(6,), (6,)], 1, 2),
    (same_row_reversed, [(6,), (6,)], None, 1),
    (overlapping, [(6,), (6,)], None, 1),
    (reads_ahead, [(6,), (6,)], None, None),
    (reads_old_view, [(6,), (6,)], None, None),
    (updates_a_run_result, [(6,), (6,)], None, None),
    (updates_a_run_result_2d, [(3, 4), (4,)], None, None),
    (pb.grad(reversed_product), [(6, 4)], None, None),
]


@pytest.mark.parametrize("f, shapes, loops, writes", CASES, ids=[getattr(c[0], "__name__", "grad") for c in CASES])
def test_updates_in_a_run(monkeypatch, f, shapes, loops, writes):
    """`loops`: the loops over the data the module has (None: not checked);
    `writes`: the updates the loops write (None: not checked)."""
    rng = np.random.default_rng(3)
    args = [rng.standard_normal(s) for s in shapes]
    prog = pb.jit(f).staged(*args).prog
    fn = nb.compile_prog(prog, parallel=False)
    if loops is not None:
        assert len(_LOOP.findall(fn.source)) == loops, fn.source
    if writes is not None:
        assert len(_WRITE.findall(fn.source)) == writes, fn.source
    agrees_without(monkeypatch, prog, args, fn, "_mid_store")


def test_disjoint():
    """Regions told apart by a constant index or by static slices; anything
    else (a dynamic index, a common element) is not disjoint."""
    from pullback.ir.core import Const, Let, Prim, Var
    from pullback.ir.types import TensorType

    x = Var("x", TensorType("f64", (4, 6)))
    i = Var("i", TensorType("i64", ()))

    def up(spec, *idx):
        return Let((Var("y", x.type),), Prim("index_update", (x, Var("v", x.type)) + idx,
                                             (("mode", "add"), ("spec", spec))))

    def c(k):
        return Const(k, TensorType("i64", ()))

    row = (("d",),)
    d = numba_regions.disjoint
    assert d(up(row, c(0)), up(row, c(2)))
    assert d(up(row, c(-1)), up(row, c(2)))
    assert not d(up(row, c(-1)), up(row, c(3)))
    assert not d(up(row, c(1)), up(row, i))
    every = ("s", None, None, None)
    cols = (every, ("s", 0, 3, None))
    assert d(up(cols), up((every, ("s", 3, None, None))))
    assert not d(up(cols), up((every, ("s", 2, None, 2))))
    assert numba_regions.same_region(up(row, c(1)), up(row, c(1)))
    assert numba_regions.same_region(up(row, i), up(row, i))
    assert not numba_regions.same_region(up(row, c(1)), up(row, c(-3)))
    assert not numba_regions.same_region(up(cols), up((every, ("s", 0, 3, 1))))
