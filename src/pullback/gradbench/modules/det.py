"""det: determinant by recursive Laplace expansion along the first row.

pullback stages `det` once per matrix size, so the staged program for an
ell x ell matrix holds the whole expansion (its size grows like ell!).
"""
import numpy as np

import pullback as pb

from . import backend


def minor(A, j):
    rest = A[1:, :]
    return np.concatenate([rest[:, :j], rest[:, j + 1:]], axis=1)


def det(A):
    n = A.shape[0]
    if n == 1:
        return A[0, 0]
    if n == 2:
        return A[0, 0] * A[1, 1] - A[0, 1] * A[1, 0]
    total = 0.0
    sign = 1.0
    for j in range(n):
        total = total + sign * A[0, j] * det(minor(A, j))
        sign = -sign
    return total


_primal = pb.jit(det, backend=backend())
_grad = pb.grad(det, backend=backend())


def primal(A):
    return _primal(A)


def gradient(A):
    return _grad(A).reshape(-1)


def prepare(inp):
    ell = int(inp["ell"])
    A = np.asarray(inp["A"], dtype=np.float64)
    if ell < 1 or A.size != ell * ell:
        raise ValueError(f"det: A has {A.size} entries, expected ell * ell = {ell * ell}")
    return (A.reshape(ell, ell),)


FUNCTIONS = {"primal": primal, "gradient": gradient}
