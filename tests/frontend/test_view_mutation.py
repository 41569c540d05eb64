"""In-place updates through NumPy views (Note [view-mutation]): an update of a view made by basic
indexing, a transpose or a reshape changes its base, an update of the base changes its live views,
and operations that copy in NumPy keep copy semantics. Where pullback cannot follow a view it
raises a located error instead of returning a wrong value."""
from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.testing import check_grads

BACKENDS = ["interp", "pysource"]


def _agree(f, *args, backend):
    want = f(*(a.copy() if isinstance(a, np.ndarray) else a for a in args))
    got = pb.jit(f, backend=backend)(*args)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# -- an update of a view reaches its base ---------------------------------------------------

def row_write(A, x):
    A = A.copy()
    row = A[0]
    row[1] = x
    return np.sum(A * A)


def row_aug(A, x):
    A = A.copy()
    row = A[1, :]
    row *= x
    return np.sum(A * A)


def slice_rows(A, x):
    A = A.copy()
    s = A[1:3]
    s[0, 2] = x
    s += x
    return np.sum(A * A)


def column(A, x):
    A = A.copy()
    c = A[:, 2]
    c[0] = x
    c[1] += x * x
    return np.sum(A * np.arange(12.0).reshape(3, 4))


def stepped(A, x):
    A = A.copy()
    s = A[::2, 1::2]
    s[...] = x
    return np.sum(A * A)


def traced_index(A, x, i):
    A = A.copy()
    row = A[i]
    row[1] = x
    row[i] += x
    return np.sum(A * A)


def nested(A, x):
    A = A.copy()
    r = A[1]
    s = r[1:3]
    s[0] = x
    t = s[1:]
    t *= x
    return np.sum(A * A) + np.sum(r) + np.sum(s)


def alias_of_base(A, x):
    A = A.copy()
    B = A
    row = A[2]
    row[0] = x
    return np.sum(B * B)


def newaxis(A, x):
    A = A.copy()
    c = A[:, None, 1]
    c[0, 0] = x
    return np.sum(A * A)


def chained_subscript(A, x):
    A = A.copy()
    A[1][2] = x
    A[2][1:3] += x
    return np.sum(A * A)


def transposed(A, x):
    A = A.copy()
    B = A.T
    B[1] += x
    B[0, 2] = x * x
    return np.sum(A * np.arange(12.0).reshape(3, 4))


def transposed_method(A, x):
    A = A.copy()
    B = np.transpose(A)
    C = A.transpose(1, 0)
    B[3, 0] = x
    C[2, 1] += x
    return np.sum(A * A)


def reshaped(A, x):
    A = A.copy()
    v = A.reshape(-1)
    v[5] = x
    w = np.reshape(A, (2, 6))
    w[1] *= x
    r = A.ravel()
    r[0] = 3.0 * x
    return np.sum(A * A)


def squeezed(A, x):
    A = A.copy()
    e = np.expand_dims(A, 0)
    e[0, 1, 1] = x
    q = e.squeeze()
    q[2, 2] = x * x
    return np.sum(A * A)


# -- an update of the base reaches its views ---------------------------------------------------

def base_then_row(A, x):
    A = A.copy()
    row = A[0]
    A[0, 1] = x
    return np.sum(row * row)


def base_then_views(A, x):
    A = A.copy()
    row, col, t, flat = A[1], A[:, 2], A.T, A.reshape(-1)
    A[1, 2] = x
    A += x
    return np.sum(row * col[1]) + np.sum(t[2] * flat[:3]) + np.sum(col)


def view_updates_sibling(A, x):
    A = A.copy()
    r = A[1]
    c = A[:, 1]
    r[1] = x  # A[1, 1] is in both
    return np.sum(c * c)


def traced_row_then_base(A, x, i):
    A = A.copy()
    row = A[i]
    A[i] *= x
    return np.sum(row)


CASES = [(row_write, ()), (row_aug, ()), (slice_rows, ()), (column, ()), (stepped, ()), (traced_index, (np.int64(2),)),
         (nested, ()), (alias_of_base, ()), (newaxis, ()), (chained_subscript, ()), (transposed, ()),
         (transposed_method, ()), (reshaped, ()), (squeezed, ()), (base_then_row, ()), (base_then_views, ()),
         (view_updates_sibling, ()), (traced_row_then_base, (np.int64(1),))]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("f,extra", CASES, ids=[f.__name__ for f, _ in CASES])
def test_views_write_through(f, extra, backend):
    A = np.arange(12.0).reshape(3, 4) / 7.0
    _agree(f, A, 0.5, *extra, backend=backend)


def concrete_base(x):
    C = np.arange(6.0).reshape(2, 3)  # a NumPy constant while staging
    row = C[1]
    row[0] = x
    T = C.T
    T[2, 0] = 5.0
    return np.sum(C * C) + x


@pytest.mark.parametrize("backend", BACKENDS)
def test_concrete_views(backend):
    _agree(concrete_base, 0.5, backend=backend)


# -- copies stay copies --------------------------------------------------------------------

def fancy_copy(A, x):
    A = A.copy()
    rows = A[[0, 2]]
    rows[0, 1] = x
    col = A[:, np.array([1, 2])]
    col += x
    A[[1, 2]][0, 0] = x  # writes into a temporary copy only
    return np.sum(A) + np.sum(rows) + np.sum(col)


def other_copies(A, x):
    A = A.copy()
    a = A.flatten()
    a[0] = x
    b = A * 1.0
    b[0, 0] = x
    c = np.copy(A[0])
    c[1] = x
    d = A[0].copy()
    d[2] = x
    e = A.astype(np.float64)
    e[1, 1] = x
    s = A[1, 2]  # a scalar: a copy
    s += x
    return np.sum(A) + np.sum(a) + np.sum(b) + np.sum(c) + np.sum(d) + np.sum(e) + s


def mask_copy(A, x):
    A = A.copy()
    m = A[:, 0] > 0.5
    w = np.where(m[:, None], A, 0.0)
    w[0, 0] = x
    return np.sum(A) + np.sum(w)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("f", [fancy_copy, other_copies, mask_copy])
def test_copies_are_not_written_back(f, backend):
    A = np.arange(12.0).reshape(3, 4) / 7.0
    _agree(f, A, 0.5, backend=backend)


# -- loops, branches, helpers ------------------------------------------------------------------

def loop_rows(A, x):
    A = A.copy()
    for i in range(A.shape[0]):
        r = A[i]
        r *= x + i
    return np.sum(A * A)


def loop_rows_traced(A, x, n):
    A = A.copy()
    for i in range(n):
        r = A[i]
        r[i] += x
        r *= 2.0
    return np.sum(A * A)


def loop_view_before(A, x):
    A = A.copy()
    row = A[1]
    for i in range(4):
        row[i] = x * i
    return np.sum(A * A) + np.sum(row)


def loop_view_before_traced(A, x, n):
    A = A.copy()
    row = A[1]
    for i in range(n):
        row[i] += x
        A[0, i] = row[i]
    return np.sum(A * A) + np.sum(row)


def branch(A, x):
    A = A.copy()
    row = A[1]
    if x > 0:
        row[0] = x
    else:
        A[1, 1] = x
    row[2] = 2.0 * x
    return np.sum(A * A) + np.sum(row)


def branch_view_in_both(A, x):
    A = A.copy()
    if x > 0:
        r = A[0]
    else:
        r = A[0]
        r = r[:]
    r[1] = x
    return np.sum(A * A)


def put(a, x):
    a[1] = x


def scale(a, x):
    a *= x
    return a


def helper_updates_view(A, x):
    A = A.copy()
    put(A[0], x)
    r = A[2]
    put(r, x * x)
    s = scale(A[:, 1], x)
    s[0] = 1.0  # `s` is A[:, 1] itself
    return np.sum(A * A)


def helper_gets_base(A, x):
    A = A.copy()
    row = A[1]
    put(A, x)
    put(A[1:], x * x)
    return np.sum(row * row) + np.sum(A)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("f,extra", [(loop_rows, ()), (loop_rows_traced, (np.int64(3),)), (loop_view_before, ()),
                                     (loop_view_before_traced, (np.int64(3),)), (branch, ()),
                                     (branch_view_in_both, ()), (helper_updates_view, ()), (helper_gets_base, ())],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_control_and_calls(f, extra, backend):
    A = np.arange(12.0).reshape(3, 4) / 7.0
    _agree(f, A, 0.5, *extra, backend=backend)
    _agree(f, A, -0.5, *extra, backend=backend)


# -- derivatives --------------------------------------------------------------------------

@pytest.mark.parametrize("f,extra", [(row_write, ()), (base_then_row, ()), (transposed, ()),
                                     (traced_index, (np.int64(2),)), (loop_rows_traced, (np.int64(3),)),
                                     (helper_updates_view, ())], ids=lambda v: getattr(v, "__name__", ""))
def test_grads(f, extra):
    A = np.arange(12.0).reshape(3, 4) / 7.0
    check_grads(lambda A, x: f(A, x, *extra), (A, 0.5), modes=("fwd", "rev"))


# -- errors instead of wrong answers -------------------------------------------------------

def readonly_broadcast(x):
    b = np.broadcast_to(x * np.ones(3), (2, 3))
    b[0, 0] = 1.0
    return np.sum(b)


def noncontig_reshape(A, x):
    A = A.copy()
    v = A.T.reshape(-1)
    v[0] = x
    return np.sum(A)


def ambiguous_view(A, x):
    A = A.copy()
    r = A[0] if x > 0 else A[1]
    r[0] = x
    return np.sum(A)


@pytest.mark.parametrize("f,args,what", [
    (readonly_broadcast, (0.5,), "read-only view"),
    (noncontig_reshape, (np.ones((3, 4)), 0.5), "non-contiguous"),
    (ambiguous_view, (np.ones((3, 4)), 0.5), "may or may not be the same array"),
])
def test_located_errors(f, args, what):
    with pytest.raises(pb.PullbackError) as e:
        pb.jit(f)(*args)
    assert what in str(e.value)
    assert "test_view_mutation.py" in str(e.value)


def rows_unrolled(A, x):
    A = A.copy()
    for row in A:
        row *= x
    return np.sum(A * A)


def rows_read_updated_base(A, x):
    A = A.copy()
    s = 0.0
    for row in A:
        A[1] += row * x  # the next rows see this, as in NumPy
        s = s + np.sum(row)
    return s + np.sum(A * A)


def test_iterating_rows():
    # loops over the rows that update them (or the array) are unrolled: exact
    A = np.arange(12.0).reshape(3, 4)
    for f, extra in ((rows_unrolled, ()), (rows_read_updated_base, ()), (_rows_traced_count, (np.int64(2),))):
        _agree(f, A, 0.5, *extra, backend="pysource")


def _rows_traced_count(A, x, n):
    A = A.copy()
    for i in range(n):
        for row in A[1:]:
            row *= x
    return np.sum(A)


def test_numba():
    pytest.importorskip("numba")
    A = np.arange(12.0).reshape(3, 4) / 7.0
    _agree(loop_rows_traced, A, 0.5, np.int64(3), backend="numba")
    _agree(base_then_views, A, 0.5, backend="numba")


# -- a helper given an array and a view of it ------------------------------------------------

def h_base(A, r, x):
    A[0, 1] = x
    return np.sum(r * r)


def h_view(A, r, x):
    r[1] = x
    return np.sum(A * A)


def gives_both(A, x):
    A = A.copy()
    return h_base(A, A[0], x) + h_view(A, A[0], x * x) + h_view(A.T, A, x) + np.sum(A)


def h_two(r, s, x):
    r[1] = x
    return np.sum(s)


def siblings(A, x):
    A = A.copy()
    return h_two(A[0], A[:, 1], x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_helper_gets_array_and_view(backend):
    _agree(gives_both, np.arange(12.0).reshape(3, 4), 0.5, backend=backend)


def test_helper_gets_sibling_views_is_an_error():
    with pytest.raises(pb.PullbackError) as e:
        pb.jit(siblings)(np.ones((3, 4)), 0.5)
    assert "views of the same array" in str(e.value) and "test_view_mutation.py" in str(e.value)
