"""Boolean-mask selections x[m] (issue 10): in reductions, elementwise arithmetic
feeding them, len/count_nonzero/any/all and assignments, lowered to `where`
with static shapes (values on every backend, derivatives in both modes against
finite differences); any other use is a located error saying what to write."""
import numpy as np
import pytest

import pullback as pb
from pullback.frontend import stage
from pullback.testing import check_grads

def sum_pos(x):
    return np.sum(x[x > 0])


def mean_big(x):
    return np.mean(x[x > 0.4])


def methods(x):
    return x[x > 0].sum() + np.max(x[x < 0.5]) + np.min(x[x > -1.5]) * 2 + x[x > 0].mean()


def prod_large(x):
    return np.prod(x[np.abs(x) > 0.5])


def counts(x):
    return len(x[x > 0]) + np.count_nonzero(x[x > 0] > 1.0) + 10 * np.count_nonzero(x)


def elementwise(x):
    m = x > 0
    return np.sum(np.exp(x[m]) * 2 + 1) + np.mean((x[m] - 0.5) ** 2) + np.var(x[m])


def assignments(x):
    y = x.copy()
    y[y < 0] = 0.0
    y[x > 1] *= 2
    y[x > 0.5] += x[x > 0.5] ** 2
    y[x < -1] -= x[x < -1]
    y[x < -1.5] = np.sin(x[x < -1.5])
    return y


def rows(A):
    m = A[:, 0] > 0
    B = A.copy()
    B[m] = np.array([1.0, 2.0, 3.0]) * A[0, 1]
    return np.sum(A[m] ** 2) + np.sum(np.mean(A[m], axis=0)) + np.sum(B)


def any_all(x):
    return np.any(x[x > 0] > 1.5), np.all(x[x > 0] > 0.1), np.any(x[x > 5])


def static_mask(x):
    y = x.copy()
    m = np.array([True, False, True, False, True, False, True])
    y[m] = np.array([1.0, 2.0, 3.0, 4.0]) * x[1]
    return y * x[m].sum()


def empty(x):
    return np.sum(x[x > 10]), np.prod(x[x > 10]), np.max(x[x > 10]), np.mean(x[x > 10])


X = np.array([-1.2, 0.3, 0.7, 2.0, -0.2, 1.2, -1.9])
A = (np.arange(12.0).reshape(4, 3) - 5) / 3
FLOAT_CASES = [(sum_pos, X), (mean_big, X), (methods, X), (prod_large, X), (elementwise, X), (assignments, X),
               (rows, A), (static_mask, X)]


@pytest.mark.parametrize("backend", ["interp", "pysource", pytest.param("numba", marks=pytest.mark.slow)])
def test_values(backend):
    for f, a in FLOAT_CASES + [(counts, X), (any_all, X)]:
        got, want = pb.jit(f, backend=backend)(a), f(a)
        if isinstance(want, tuple):
            assert tuple(bool(g) for g in got) == want, f.__name__
        else:
            np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=f.__name__)
    assert pb.jit(counts, backend=backend)(X).dtype.kind == "i"


def test_numba():
    np.testing.assert_allclose(pb.jit(assignments, backend="numba")(X), assignments(X), rtol=1e-12)


def test_empty_selections():
    with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning):
        want_mean = np.mean(X[X > 10])
    got = pb.jit(empty, backend="pysource")(X)
    assert got[0] == 0.0 and got[1] == 1.0  # as NumPy
    assert np.isnan(got[2])  # NumPy raises: a NaN here, never a finite wrong value
    assert np.isnan(got[3]) and np.isnan(want_mean)


@pytest.mark.parametrize("backend", ["interp", "pysource"])
def test_gradients(backend):
    for f, a in FLOAT_CASES:
        check_grads(f, (a,), modes=("rev", "fwd"), order=1, backend=backend)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["interp", "pysource"])
def test_second_order(backend):
    for f, a in FLOAT_CASES:
        check_grads(f, (a,), modes=("rev", "fwd"), order=2, backend=backend)


def test_gradient_values():
    g = pb.grad(sum_pos, backend="interp")(X)
    np.testing.assert_array_equal(g, (X > 0).astype(float))
    g = pb.grad(lambda x: np.max(x[x < 1.0]), backend="interp")(X)
    np.testing.assert_array_equal(g, (X == 0.7).astype(float))


def test_lowering_has_static_shapes():
    st = stage(elementwise, (X,))
    ops = {s.exp.op for s in st.prog.main.body.stmts if hasattr(s.exp, "op")}
    assert "where" in ops and "take" not in ops


def _err(f, *args):
    with pytest.raises(pb.PullbackError) as ei:
        pb.jit(f, backend="interp")(*args)
    msg = str(ei.value)
    assert "np.where(m, x, 0)" in msg, msg
    return msg


def helper(v):
    return np.sum(v)


def test_other_uses_are_located_errors():
    def returned(x):
        y = x[x > 0]
        return y

    def indexed(x):
        return x[x > 0][0]

    def passed(x):
        return helper(x[x > 0])

    def sorted_(x):
        return np.sum(np.sort(x[x > 0]))

    for f in (returned, indexed, passed, sorted_):
        msg = _err(f, X)
        assert "test_bool_masks.py" in msg and "traced boolean mask" in msg, msg
        assert "x[x > 0]" in msg, msg  # the line that made the selection
    assert "returned" in _err(returned, X)

    def other_shape(x):
        return np.sum(x[x > 0] * x)

    def other_mask(x):
        return np.sum(x[x > 0] * x[x > 1])

    assert "shape (7,)" in _err(other_shape, X)
    msg = _err(other_mask, X)
    assert "different masks" in msg and "test_bool_masks.py" in msg


def test_mask_shape_must_match():
    def f(x):
        return np.sum(x[np.ones(3) > 0])

    with pytest.raises(pb.PullbackError) as ei:
        pb.jit(f, backend="interp")(X)
    assert "does not match" in str(ei.value) and "test_bool_masks.py" in str(ei.value)
