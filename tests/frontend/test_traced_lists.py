"""A Python list or tuple of traced numbers passed to a NumPy function is an
array, as in NumPy (issue 10): `np.sum([x, x + 1])`, `np.linalg.norm([x, y])`."""
import numpy as np
import pytest

import pullback as pb
from pullback.testing import check_grads

CASES = {
    "array": lambda a, b: np.sum(np.array([a, b * b, 2.0]) ** 2),
    "sum_list": lambda a, b: np.sum([a, a + 1]),
    "norm_list": lambda a, b: np.linalg.norm([a, b]),
    "mean_tuple": lambda a, b: np.mean((a, b)),
    "max_list": lambda a, b: np.max([a, b * 2]),
    "dot_lists": lambda a, b: np.dot([a, b], [b, 1.0]),
    "exp_list": lambda a, b: np.sum(np.exp([a, b])),
    "nested": lambda a, b: np.sum(np.linalg.inv([[a + 2.0, b], [0.5, 3.0]])),
    "concatenate_still_a_sequence": lambda a, b: np.sum(np.concatenate([np.array([a]), np.array([b, 1.0])])),
}


@pytest.mark.parametrize("backend", ["interp", "pysource"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_traced_lists_are_arrays(name, backend):
    f = CASES[name]
    assert pb.jit(f, backend=backend)(0.3, 0.7) == pytest.approx(f(0.3, 0.7), rel=1e-14)
    check_grads(f, (0.3, 0.7), modes=("rev", "fwd"), order=1, backend=backend)
