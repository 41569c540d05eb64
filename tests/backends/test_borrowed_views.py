"""Borrowed views (`pullback.backends.numba_borrow`, note [borrowed-views]): static slices
of a function's parameters that stay in their body print without a reference of their
own; a slice that is returned, or of a fresh array, keeps numba's; results, reference
counts and the arrays handed back are unchanged. Also `numba_scratch`'s loop-carried
sharing (a small array carried through an inner loop and saved is scratch)."""
import gc
import re

import numpy as np
import pytest

import pullback as pb
from pullback.backends import numba_backend as nb

pytest.importorskip("numba")

BORROWED = re.compile(r"_pb_view_[ac]b\(")


def sliced_sum(W, x):                 # slices of a parameter read in a loop: borrowed
    s = 0.0
    for t in range(x.shape[0]):
        a = W[0:3]
        b = W[3:6]
        s = s + np.sum(np.sin(a * x[t]) + b)
    return s


def row_sum(M, x):                   # rows of a parameter read in a loop, some from the end: borrowed
    s = 0.0
    for t in range(x.shape[0]):
        s = s + np.sum(np.sin(M[t] * x[t]) + M[-1] * M[t - M.shape[0]])
    return s


def returns_slice(W):                 # the slice is the result: numba's reference
    return W[1:4]


def fresh_base(W, x):                 # a slice of a fresh array: numba's reference
    V = W * 2.0
    s = 0.0
    for t in range(x.shape[0]):
        s = s + np.sum(V[0:3] * x[t])
    return s


def _src(f, *args):
    return nb.emit_prog(nb.lower(pb.jit(f, backend="numba").staged(*args).prog), parallel=False)


W, X = np.linspace(-1.0, 1.0, 6), np.linspace(0.5, 2.0, 5)


def test_parameter_slices_in_a_loop_are_borrowed_and_give_the_same_values():
    assert BORROWED.search(_src(sliced_sum, W, X))
    assert pb.jit(sliced_sum, backend="numba")(W, X) == pytest.approx(sliced_sum(W, X), rel=1e-14)
    g = pb.grad(sliced_sum, argnums=(0, 1), backend="numba")(W, X)
    want = pb.grad(sliced_sum, argnums=(0, 1), backend="interp")(W, X)
    for a, b in zip(g, want):
        np.testing.assert_allclose(a, b, rtol=1e-13)
    assert BORROWED.search(_src(pb.grad(sliced_sum, argnums=(0, 1)), W, X))   # the gradient's slices too


def test_parameter_rows_in_a_loop_are_borrowed_and_give_the_same_values():
    M = np.linspace(-1.0, 1.0, 30).reshape(6, 5)
    src = _src(row_sum, M, X)
    assert "_pb_row_b(" in src
    assert pb.jit(row_sum, backend="numba")(M, X) == pytest.approx(row_sum(M, X), rel=1e-14)
    g = pb.grad(row_sum, argnums=(0, 1), backend="numba")(M, X)
    want = pb.grad(row_sum, argnums=(0, 1), backend="interp")(M, X)
    for a, b in zip(g, want):
        np.testing.assert_allclose(a, b, rtol=1e-13)


def test_a_returned_slice_keeps_its_reference():
    assert not BORROWED.search(_src(returns_slice, W))
    base = np.arange(6.0)
    out = pb.jit(returns_slice, backend="numba")(base)
    del base
    gc.collect()
    np.testing.assert_array_equal(out, [1.0, 2.0, 3.0])   # still the base's memory, kept alive


def test_a_slice_of_a_fresh_array_keeps_its_reference():
    assert not BORROWED.search(_src(fresh_base, W, X))
    assert pb.jit(fresh_base, backend="numba")(W, X) == pytest.approx(fresh_base(W, X), rel=1e-14)


def test_reference_counts_balance():
    from numba.core.runtime import _nrt_python, rtsys

    f, g = pb.jit(sliced_sum, backend="numba"), pb.grad(sliced_sum, backend="numba")
    f(W, X), g(W, X)   # compiles
    was = _nrt_python.memsys_stats_enabled()
    _nrt_python.memsys_enable_stats()
    try:
        before = rtsys.get_allocation_stats()
        for _ in range(3):
            f(W, X), g(W, X)
        after = rtsys.get_allocation_stats()
    finally:
        if not was:
            _nrt_python.memsys_disable_stats()
    assert after.alloc - before.alloc == after.free - before.free > 0
    assert after.mi_alloc - before.mi_alloc == after.mi_free - before.mi_free


def test_a_small_array_carried_through_an_inner_loop_and_saved_is_scratch():
    # lstm's gradient: per step, rows filled in the layer loop and pushed to the tape
    from pullback.gradbench.modules import lstm

    rng = np.random.default_rng(0)
    args = (rng.normal(size=(4, 56)), rng.normal(size=(3, 14)), rng.normal(size=(4, 14)), rng.normal(size=(6, 14)))
    src = _src(pb.grad(lstm.lstm_objective, argnums=(0, 1)), *args)
    assert re.search(r"\brows\w* = scratch", src), "the saved rows are allocated per step"
    got = pb.grad(lstm.lstm_objective, argnums=(0, 1), backend="numba")(*args)
    want = pb.grad(lstm.lstm_objective, argnums=(0, 1), backend="interp")(*args)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12)
