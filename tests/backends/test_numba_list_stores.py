"""Stores of large arrays: typed lists of C-contiguous elements (a strided view
pushed by a loop is copied as it is pushed, and the return sweep reads the
copies: numba_dialect._list_store), except where every store of the type is made
with its final size and every value pushed is computed in its slot: buffers of
exactly that many slots (`numba_stores.sized_large_elems`, note [numba-stores]
"Sized stores of large arrays")."""
import numpy as np
import pytest

import pullback as pb

pytest.importorskip("numba")


def carried_column(X):
    h = X[:, 0]
    s = 0.0
    for i in range(X.shape[1]):
        s = s + np.sum(np.sin(h) * X[:, i])
        h = X[:, i]          # a strided column view, carried and saved per iteration
    return s


def carried_column_while(X):
    h = X[:, 0]
    s = 0.0
    i = 0
    while i < X.shape[1]:    # a while loop: the store cannot be sized up front
        s = s + np.sum(np.sin(h) * X[:, i])
        h = X[:, i]
        i = i + 1
    return s


def saved_tanh(X):
    s = 0.0
    for i in range(X.shape[1]):
        t = np.tanh(X[:, 0] * X[:, i])   # computed in its slot
        s = s + np.sum(t * t)
    return s


def _module(f, X):
    from pullback.backends import numba_backend as nb
    g = pb.grad(f)
    return nb.emit_prog(nb.lower(pb.jit(lambda a: g(a), backend="numba").staged(X).prog), parallel=False)


X = np.arange(1.0, 15001.0).reshape(5000, 3) / 1.5e4   # columns over _BUFFER_MAX (4096 elements)


@pytest.mark.parametrize("f", [carried_column, carried_column_while, saved_tanh])
def test_large_saved_values(f):
    want = pb.grad(f, backend="interp")(X)
    got = pb.grad(f, backend="numba")(X)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("f", [carried_column, carried_column_while])
def test_store_of_pushed_views_is_a_list(f):
    src = _module(f, X)
    assert "ListType" in src and 'float64, 1, "C")' in src    # the list store, C elements


def test_sized_store_of_values_computed_in_place_is_a_buffer():
    src = _module(saved_tanh, X)
    assert "ListType" not in src and "List.empty_list" not in src
    # one slot per iteration, made once (the buffer a borrowed view of its owner: note [borrowed-views])
    assert src.count("_pb_empty((3, 5000), np.float64)") == 1 and "(3, 5000), (1, 1)), 0)" in src
    assert "t_saved[0][t_saved[1]]" in src and "st_a0" not in src   # computed in the slot, no copy
