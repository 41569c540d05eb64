"""The numba helper for `take_add` (the adjoint of a gather) is an explicit loop nest
per axis and rank (numba_dialect._take_add_helper): duplicate and negative indices,
every axis of a 3-D array, against the interpreter."""
import numpy as np
import pytest

import pullback as pb

pytest.importorskip("numba")


def gather0(x, idx):
    return np.sum(np.sin(x[idx]) * 1.5)


def gather1(x, idx):
    return np.sum(np.sin(x[:, idx]) * 1.5)


def gather2(x, idx):
    return np.sum(np.sin(x[:, :, idx]) * 1.5)


@pytest.mark.parametrize("f, axis", [(gather0, 0), (gather1, 1), (gather2, 2)])
def test_take_add_every_axis(f, axis):
    x = np.arange(60.0).reshape(3, 4, 5) / 60
    n = x.shape[axis]
    idx = np.array([0, n - 1, -1, 1, 0, -n])          # duplicates and negative indices
    want = pb.grad(f, backend="interp")(x, idx)
    got = pb.grad(f, backend="numba")(x, idx)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
    from pullback.backends import numba_backend as nb
    g = pb.grad(f)
    src = nb.emit_prog(nb.lower(pb.jit(lambda a, i: g(a, i), backend="numba").staged(x, idx).prog), parallel=False)
    assert f"def _take_add{axis}_3(" in src
