"""Stores of large arrays (typed lists) hold C-contiguous elements: a strided view
pushed by a loop is copied as it is pushed, and the return sweep reads the
copies (numba_dialect._list_store)."""
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


def test_strided_views_pushed_to_a_list_store():
    X = np.arange(1.0, 15001.0).reshape(5000, 3) / 1.5e4   # columns over _BUFFER_MAX: a list store
    want = pb.grad(carried_column, backend="interp")(X)
    got = pb.grad(carried_column, backend="numba")(X)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    from pullback.backends import numba_backend as nb
    g = pb.grad(carried_column)
    src = nb.emit_prog(nb.lower(pb.jit(lambda a: g(a), backend="numba").staged(X).prog), parallel=False)
    assert "ListType" in src and 'float64, 1, "C")' in src    # the list store, C elements
