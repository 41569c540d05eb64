"""Indexing odds and ends (issue 10): indices built with np.int64(...), int(...),
.astype(int) of traced values (scalars and index arrays, reads and updates);
np.r_ / np.c_; the error for the truth value of a traced array."""
import numpy as np
import pytest

import pullback as pb
from pullback.frontend import indexing, staging
from pullback.testing import check_grads

def read_np_int(x, t):
    return x[np.int64(t * 2)] + x[np.int64(np.floor(t))]


def read_int(x, t):
    return x[int(t * 2)] * x[int(t) + 1]


def read_astype_scalar(x, t):
    return x[(t * 2).astype(int)]


def read_astype_array(x, f):
    return np.sum(x[f.astype(int)] ** 2) + np.sum(x[np.floor(f).astype(np.int64)])


def slice_int(x, t):
    return np.sum(x[int(t):int(t) + 2] ** 2)


def update_int(x, t):
    y = x.copy()
    y[int(t)] = 5.0 * x[0]
    y[np.int64(t) + 1] += x[1]
    return y


def update_astype(x, f):
    y = x.copy()
    y[f.astype(int)] += x[0]
    y[f.astype(np.int64) + 1] = 2.0 * x[1]
    return y


X = np.linspace(0.1, 2.0, 7)
F = np.array([0.2, 3.7, 5.1])
CASES = [(read_np_int, 1.6), (read_int, 1.6), (read_astype_scalar, np.float64(1.6)), (read_astype_array, F),
         (slice_int, 2.2), (update_int, 2.5), (update_astype, F)]


@pytest.mark.parametrize("backend", ["interp", "pysource", pytest.param("numba", marks=pytest.mark.slow)])
def test_computed_indices(backend):
    for f, a in CASES:
        np.testing.assert_allclose(pb.jit(f, backend=backend)(X, a), f(X, a), rtol=1e-12, err_msg=f.__name__)


def test_computed_indices_numba():
    np.testing.assert_allclose(pb.jit(update_astype, backend="numba")(X, F), update_astype(X, F), rtol=1e-12)


@pytest.mark.parametrize("backend", ["interp", "pysource"])
def test_computed_indices_gradients(backend):
    for f, a in CASES:
        check_grads(lambda x: np.sum(np.sin(f(x, a))), (X,), modes=("rev", "fwd"), order=1, backend=backend)
        g = pb.grad(lambda x, t: np.sum(f(x, t)), argnums=0, backend=backend)(X, a)  # a traced index
        want = pb.grad(lambda x: np.sum(f(x, a)), backend=backend)(X)
        np.testing.assert_allclose(g, want, rtol=1e-12, err_msg=f.__name__)


def test_computed_index_out_of_range_is_located():
    with pytest.raises(pb.IndexOutOfBoundsError) as ei:
        pb.jit(read_int, backend="pysource")(X, 4.0)
    assert "test_index_misc.py" in str(ei.value) and "x[int(t * 2)]" in str(ei.value)


# -- np.r_ / np.c_ ------------------------------------------------------------------------------

def r_(x):
    return np.r_[x, 1.0, x[:2] * 2, 0:2]


def c_(x):
    return np.c_[x, x * 2, np.ones(3)]


def c_2d(A):
    return np.c_[A, A[:, 0]]


@pytest.fixture
def wired():
    """np.r_[...]/np.c_[...] with traced items reach `indexing.index_trick` through
    `staging.Interp.subscript` (kept as a fixture name for the tests below)."""
    assert hasattr(staging.Interp, "subscript") and indexing.is_index_trick(np.r_)


@pytest.mark.parametrize("backend", ["interp", "pysource"])
def test_r_c(wired, backend):
    for f, a in ((r_, X[:3]), (c_, X[:3]), (c_2d, np.arange(4.0).reshape(2, 2))):
        got, want = pb.jit(f, backend=backend)(a), f(a)
        assert got.shape == want.shape, f.__name__
        np.testing.assert_allclose(got, want, err_msg=f.__name__)
    check_grads(lambda x: np.sum(np.sin(r_(x)) * np.arange(8)), (X[:3],), modes=("rev", "fwd"), order=1,
                backend=backend)
    check_grads(lambda x: np.sum(np.sin(c_(x))), (X[:3],), modes=("rev", "fwd"), order=1, backend=backend)


def test_r_c_errors(wired):
    def directive(x):
        return np.r_["0,2", x, x]

    def traced_bound(x, n):
        return np.r_[0:n] * x[0]

    with pytest.raises(pb.PullbackError) as ei:
        pb.jit(directive, backend="interp")(X)
    assert "directive" in str(ei.value) and "test_index_misc.py" in str(ei.value)
    with pytest.raises(pb.PullbackError) as ei:
        pb.jit(traced_bound, backend="interp")(X, 3)
    assert "known at staging time" in str(ei.value) and "test_index_misc.py" in str(ei.value)


def test_r_c_end_to_end():
    np.testing.assert_allclose(pb.jit(r_, backend="interp")(X[:3]), r_(X[:3]))


# -- the truth value of a traced array --------------------------------------------------------

def if_array(x):
    if x > 0:
        return x
    return -x


def while_array(x):
    while x > 0:
        x = x - 1
    return x


def and_array(x):
    return (x > 0) and (x < 1)


def bool_array(x):
    return bool(x)


def not_array(x):
    return not x


@pytest.mark.parametrize("f,line", [(if_array, "if x > 0:"), (while_array, "while x > 0:"),
                                    (and_array, "(x > 0) and (x < 1)"), (bool_array, "bool(x)"),
                                    (not_array, "not x")])
def test_truth_value_of_an_array(f, line):
    with pytest.raises(pb.PullbackError) as ei:
        pb.jit(f, backend="interp")(np.ones(3))
    msg = str(ei.value)
    assert "test_index_misc.py" in msg and line in msg, msg
    assert "shape (3,)" in msg and "np.any" in msg and "np.all" in msg and "np.where" in msg, msg


def test_truth_value_of_a_one_element_array():
    def f(x):
        return 1.0 if x[:1] > 0 else 2.0

    assert pb.jit(f, backend="interp")(np.ones(3)) == f(np.ones(3))
