"""Index checks the enclosing loops make unnecessary are not printed
(backends/pysource/ranges.py, note [index-ranges]); every other one stays and
still reports the user's line."""

import numpy as np
import pytest

pytest.importorskip("numba")

import pullback as pb
from pullback.backends import numba_backend as nb
from _corpus import program  # noqa: E402 - tests/backends/_corpus.py


def upper(A):                     # j in range(i + 1, n): i + 1 + counter < n
    s = 0.0
    for i in range(A.shape[0]):
        for j in range(i + 1, A.shape[0]):
            s += A[j, i] * A[i, j]
    return s


det_gauss = program("det_gauss_inplace")


def one_past(A):                  # j + 1 reaches n: checked, and it fails at run time
    s = 0.0
    for i in range(A.shape[0]):
        for j in range(i + 1, A.shape[0]):
            s += A[j + 1, i]
    return s


def before(A):                    # i - 1 is -1 at i = 0 (valid NumPy, wraps): not proved
    s = 0.0
    for i in range(A.shape[0]):
        s += A[i - 1, i]
    return s


def data_bound(A, m):             # a bound from data: not proved
    s = 0.0
    for i in range(m):
        s += A[i, 0]
    return s


def _checks(f, *args):
    src = nb.emit_prog(nb.lower(pb.jit(f, backend="numba").staged(*args).prog), parallel=False)
    return src.count("raise IndexError")


@pytest.mark.parametrize("f, checked", [(upper, False), (det_gauss, False), (pb.grad(det_gauss), False),
                                        (one_past, True), (before, True)])
def test_checks_left(f, checked):
    A = np.arange(16.0).reshape(4, 4) + 4 * np.eye(4)
    assert (_checks(f, A) > 0) == checked
    if f is not one_past:
        np.testing.assert_allclose(pb.jit(f, backend="numba")(A), pb.jit(f, backend="interp")(A), rtol=1e-12)


def test_a_data_bound_keeps_its_check():
    A = np.ones((3, 2))
    assert _checks(data_bound, A, 2) > 0
    with pytest.raises(pb.PullbackError, match=r"test_index_ranges.py:\d+: index 3 is out of bounds"):
        pb.jit(data_bound, backend="numba")(A, 4)


def test_an_index_one_past_the_end_is_still_reported():
    with pytest.raises(pb.PullbackError, match=r"test_index_ranges.py:\d+: index 4 is out of bounds for axis 0"):
        pb.jit(one_past, backend="numba")(np.ones((4, 4)))


# -- unsigned printing (note [unsigned-indices]) ----------------------------------------
def _src(f, *args):
    return nb.emit_prog(nb.lower(pb.jit(f, backend="numba").staged(*args).prog), parallel=False)


def test_a_proved_computed_index_is_printed_unsigned():
    A = np.arange(16.0).reshape(4, 4) + 4 * np.eye(4)
    src = _src(upper, A)
    assert "np.uint64(" in src          # A[j, i] with j = i + 1 + counter, proved below n
    np.testing.assert_allclose(pb.jit(upper, backend="numba")(A), pb.jit(upper, backend="interp")(A), rtol=1e-12)


def test_an_unproved_index_stays_signed_and_wraps():
    A = np.arange(16.0).reshape(4, 4) + 4 * np.eye(4)
    src = _src(before, A)               # A[i - 1, i]: -1 at i = 0 is the last row
    assert "np.uint64(" not in src
    want = sum(A[i - 1, i] for i in range(4))
    assert pb.jit(before, backend="numba")(A) == want == pb.jit(before, backend="interp")(A)
