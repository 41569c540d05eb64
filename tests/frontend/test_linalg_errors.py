"""LAPACK failures on the user's inputs (singular, not positive definite) are
located user errors, never reported as a bug in pullback."""
from __future__ import annotations

import numpy as np
import pytest

import pullback as pb


def chol_sum(a):
    return np.sum(np.linalg.cholesky(a))


def solve_sum(a, b):
    return np.sum(np.linalg.solve(a, b))


@pytest.mark.parametrize("backend", ["interp", "pysource"])
def test_lapack_errors_are_user_errors(backend):
    with pytest.raises(pb.PullbackError, match="not positive definite") as ei:
        pb.jit(chol_sum, backend=backend)(-np.eye(2))
    assert not isinstance(ei.value, pb.InternalError) and "test_linalg_errors.py" in str(ei.value)
    with pytest.raises(pb.PullbackError, match="linear algebra error") as ei:
        pb.grad(solve_sum, backend=backend)(np.zeros((2, 2)), np.ones(2))
    assert not isinstance(ei.value, pb.InternalError) and "test_linalg_errors.py" in str(ei.value)
