"""Partial sums over the innermost axis of a fused loop nest add into a local
(note [numba-fusion]): the element is loaded before the innermost loop and
stored after it: the additions are the same, in the same order, as with the
element updated in memory (bit for bit), and the values the interpreter's."""
import numpy as np
import pytest

pytest.importorskip("numba")

import pullback as pb
from pullback.backends import (
    interp,
    numba_fusion,
)
from pullback.backends import numba_backend as nb


def row_sums(X):
    return np.sum(np.sin(X) * X, axis=1)


def middle_and_last(X):
    return np.sum(X * X, axis=(1, 2))        # reduces an outer axis too: the element is revisited


def kept_last(X):
    return np.sum(X * X, axis=0)             # the innermost axis is kept: no local


def gated_grad(C, P):                        # kmeans-like: row sums under a zero gate
    D = np.stack([np.sum((P - C[j]) ** 2, axis=1) for j in range(C.shape[0])], axis=1)
    return np.sum(np.min(D, axis=1))


@pytest.mark.parametrize("f, shapes, local", [
    (row_sums, [(5, 7)], True),
    (middle_and_last, [(3, 4, 5)], True),
    (kept_last, [(6, 5)], False),
    pytest.param(pb.grad(gated_grad), [(3, 2), (40, 2)], True, marks=pytest.mark.slow),  # ~7 s cold
])
def test_innermost_sums_in_a_local(monkeypatch, f, shapes, local):
    rng = np.random.default_rng(1)
    args = [rng.standard_normal(s) for s in shapes]
    prog = pb.jit(f).staged(*args).prog
    fn = nb.compile_prog(prog, parallel=False)
    assert ("_acc = " in fn.source) == local, fn.source
    got = fn(*args)
    for g, w in zip(got, interp.run(prog, *args)):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-13)
    monkeypatch.setattr(numba_fusion, "_in_locals", lambda *a: [])
    monkeypatch.setattr(numba_fusion, "_store", lambda *a: False)
    in_memory = nb.compile_prog(prog, parallel=False)
    assert "_acc = " not in in_memory.source
    for g, w in zip(got, in_memory(*args)):
        np.testing.assert_array_equal(g, w)


def columns(P, C):                           # kmeans' distance matrix, column by column
    D = np.zeros((P.shape[0], C.shape[0]))
    for j in range(C.shape[0]):
        D[:, j] = np.sum((P - C[j]) ** 2, axis=1)
    return D


def columns_added(P, C):
    D = np.ones((P.shape[0], C.shape[0]))
    for j in range(C.shape[0]):
        D[:, j] += np.sum(P * C[j], axis=1)
    return D


def column_kept(P, C):                       # the row sum is read again: no store from the loop
    D = np.zeros((P.shape[0], C.shape[0]))
    t = np.zeros(P.shape[0])
    for j in range(C.shape[0]):
        s = np.sum((P - C[j]) ** 2, axis=1)
        D[:, j] = s
        t = t + s
    return D, t


def column_shared(P, C):                     # D is read after the update: a copy, not in place
    D = np.zeros((P.shape[0], C.shape[0]))
    E = D
    for j in range(C.shape[0]):
        D = D.copy()
        D[:, j] = np.sum(P * C[j], axis=1)
    return D, E


def column_copied(P, C):                     # the old D is read after the update: not in place
    D = np.zeros((P.shape[0], C.shape[0]))
    t = np.zeros(P.shape[0])
    for j in range(C.shape[0]):
        prev = D.copy()
        D[:, j] = np.sum(P * C[j], axis=1)
        t = t + prev[:, j]
    return D, t


def column_of_a_view(P, C):                  # the sum reads a view of D: no store from the loop
    D = np.ones((P.shape[0], C.shape[0]))
    for j in range(C.shape[0]):
        V = D.T
        D[:, j] = np.sum(V.T[::-1] * C[j, 0], axis=1)
    return D


@pytest.mark.parametrize("f, fused", [(columns, True), (columns_added, True), (column_kept, False),
                                      (column_of_a_view, False),
                                      (column_shared, True), (column_copied, False), (pb.grad(lambda P, C: np.sum(columns(P, C) ** 2)), True)])
def test_a_row_sum_is_stored_by_its_loop(monkeypatch, f, fused):
    rng = np.random.default_rng(2)
    args = [rng.standard_normal((7, 3)), rng.standard_normal((4, 3))]
    prog = pb.jit(f).staged(*args).prog
    fn = nb.compile_prog(prog, parallel=False)
    assert ("] = t" in fn.source.replace("+= t", "= t") and "_acc = np.float64(0.0)" in fn.source) == fused, fn.source
    got = fn(*args)
    monkeypatch.setattr(numba_fusion, "_store", lambda *a: False)
    plain = nb.compile_prog(prog, parallel=False)
    assert "_acc = np.float64(0.0)" not in plain.source
    for g, w, r in zip(got, plain(*args), interp.run(prog, *args)):
        np.testing.assert_array_equal(g, w)
        np.testing.assert_allclose(g, r, rtol=1e-13, atol=1e-13)
