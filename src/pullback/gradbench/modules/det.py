"""det: determinant by recursive Laplace expansion along the first row.

The expansion makes ell! products at run time, but pullback stages `det` and
`minor` once per argument signature (matrix size; the static column j), so the
staged program has O(ell^2) functions and statements, not ell!
(tests/gradbench/test_det_staging.py).
"""
import numpy as np

import pullback as pb

from ..schema import Array, Derived, Int, Limits, Schema
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


def flat_gradient(A):
    return pb.grad(det)(A).reshape(-1)


# at GradBench's small sizes a call is mostly its overhead (note [call-overhead]): the evals
# call the compiled functions themselves, the gradient flattened inside the compiled code
primal = pb.jit(det, backend=backend())
gradient = pb.jit(flat_gradient, backend=backend())


# Laplace expansion costs ell! products: ell is capped where that stops being a benchmark
MAX_ELL = 12
SCHEMA = Schema("det", [Int("ell", min=1, max=MAX_ELL, why=f"expansion by minors costs ell!; {MAX_ELL}! is 4.8e8"),
                        Array("A", Derived("ell*ell", lambda z: z["ell"] * z["ell"]))])


def prepare(inp, limits=None):
    """The arguments of FUNCTIONS for a GradBench input; raises InputError (see SCHEMA)."""
    v = SCHEMA.validate(inp, limits or Limits())
    ell = v["ell"]
    return (v["A"].reshape(ell, ell),)


FUNCTIONS = {"primal": primal, "gradient": gradient}
