"""Reading with one integer-index array mixed with integers and slices
(`x[3, 2:, [1, 3]]`, issue 10), with NumPy's placement of the advanced
dimensions: where the first advanced index stands when the advanced indices
(the array and the integers) are adjacent, in front otherwise."""
import numpy as np
import pytest

import pullback as pb
from pullback.testing import check_grads

A = np.arange(60.0).reshape(3, 4, 5) / 10


def separated(A):          # int, slice, array: separated -> array dims first
    return A[1, 1:, [0, 2]]


def separated2(A):         # array, slice, int
    return A[[0, 2], 1:, 1]


def adjacent(A):           # int, array, slice: adjacent -> in place
    return A[1, [0, 2, 3], 1:]


def adjacent_2d(A):        # a 2-D index array after a slice
    return A[:, np.array([[0, 1], [3, 2]]), 4]


def traced_int(A, i):
    return A[i, 1:, [4, 0, 1]]


@pytest.mark.parametrize("backend", ["interp", "pysource"])
@pytest.mark.parametrize("f", [separated, separated2, adjacent, adjacent_2d])
def test_values_and_shapes_match_numpy(f, backend):
    got = pb.jit(f, backend=backend)(A)
    assert got.shape == f(A).shape
    np.testing.assert_array_equal(got, f(A))
    check_grads(lambda a: np.sum(np.sin(f(a))), (A,), modes=("rev", "fwd"), order=1, backend=backend)


def test_traced_integer_index():
    got = pb.jit(traced_int, backend="pysource")(A, np.int64(2))
    np.testing.assert_array_equal(got, traced_int(A, 2))


def test_assignment_through_a_mixed_index_is_a_located_error():
    def f(A):
        B = A.copy()
        B[1, 1:, [0, 2]] = 0.0
        return B

    with pytest.raises(pb.PullbackError) as ei:
        pb.jit(f, backend="interp")(A)
    assert "test_mixed_indexing.py" in str(ei.value)
