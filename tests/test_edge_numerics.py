"""Edge-case numerics (note [edge-numerics]): no NaN where the derivative has
a documented value.

Each case is a function, a point and the exact documented derivative there.
It is checked in reverse mode (`pb.grad`, the full gradient) and in forward
mode (`pb.jvp` with a one-hot tangent per input element, which must give the
same gradient), on the interp and pysource backends; one test runs a bundle
of the cases on numba. The expected values are the convention of the note:

- derivative products inside the primitive rules are *strong*: an exact zero
  in either factor gives zero, even against inf or NaN (so the unselected
  branch of a `where` contributes 0, and std/norm at a constant/zero input
  have the 0 subgradient);
- sqrt'(0) = x ** 0.5 ' (0) = +inf, abs'(0) = 0, d/dy 0 ** y = 0 for y > 0;
- maximum/minimum and max/min reductions split the derivative evenly on ties;
- prod with zeros is exact (note [prod-zeros]).
"""
from __future__ import annotations

import numpy as np
import pytest

import pullback as pb

INF = np.inf


def _grad_rev(f, x, backend):
    return np.asarray(pb.grad(f, backend=backend)(x), dtype=float)


def _grad_fwd(f, x, backend):
    """The gradient assembled from one jvp per input element."""
    x = np.asarray(x, dtype=float)
    if x.ndim == 0:
        _, t = pb.jvp(f, (float(x),), (1.0,), backend=backend)
        return np.asarray(t, dtype=float)
    out = np.empty(x.shape)
    for i in np.ndindex(x.shape):
        e = np.zeros(x.shape)
        e[i] = 1.0
        _, t = pb.jvp(f, (x,), (e,), backend=backend)
        out[i] = t
    return out


def _assert_exact(got, want):
    got = np.asarray(got, dtype=float)
    want = np.broadcast_to(np.asarray(want, dtype=float), got.shape)
    assert not np.any(np.isnan(got)), got
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


# (name, function, point, documented gradient)
CASES = [
    # 0 ** y, y > 0: d/dy is 0; d/dx = y * 0 ** (y - 1)
    ("pow0_dy", lambda y: np.power(0.0, y), 2.0, 0.0),
    ("pow0_dy_op", lambda y: 0.0 ** y, 0.5, 0.0),
    ("pow0_dy_array", lambda y: np.sum(np.power(np.zeros(3), y)), np.array([1.0, 2.0, 0.5]), [0.0, 0.0, 0.0]),
    ("pow0_dx_2.5", lambda x: x ** 2.5, 0.0, 0.0),
    ("pow0_dx_1", lambda x: x ** 1.0, 0.0, 1.0),
    ("pow0_dx_0", lambda x: x ** 0.0, 0.0, 0.0),
    ("pow0_dx_half", lambda x: x ** 0.5, 0.0, INF),
    # sqrt and abs at 0
    ("sqrt0", lambda x: np.sqrt(x), 0.0, INF),
    ("abs0", lambda x: np.abs(x), 0.0, 0.0),
    ("abs_builtin0", lambda x: abs(x), 0.0, 0.0),
    # std / var of a constant input or a size-1 axis; norm at zero
    ("std_const", lambda x: np.std(x), np.full(3, 2.0), [0.0, 0.0, 0.0]),
    ("var_const", lambda x: np.var(x), np.full(3, 2.0), [0.0, 0.0, 0.0]),
    ("std_axis1", lambda x: np.sum(np.std(x, axis=1)), np.array([[1.0], [3.0]]), [[0.0], [0.0]]),
    ("var_axis1", lambda x: np.sum(np.var(x, axis=1)), np.array([[1.0], [3.0]]), [[0.0], [0.0]]),
    ("std_nonconst", lambda x: np.std(x), np.array([1.0, 3.0]), [-0.5, 0.5]),
    ("norm0", lambda x: np.linalg.norm(x), np.zeros(3), [0.0, 0.0, 0.0]),
    ("norm0_axis", lambda x: np.sum(np.linalg.norm(x, axis=1)), np.array([[0.0, 0.0], [3.0, 4.0]]),
     [[0.0, 0.0], [0.6, 0.8]]),
    ("hypot0", lambda x: np.hypot(x, 0.0), 0.0, 0.0),
    # ties: the derivative is split evenly
    ("maximum_tie", lambda x: np.maximum(x, 1.0), 1.0, 0.5),
    ("minimum_tie", lambda x: np.minimum(1.0, x), 1.0, 0.5),
    ("maximum_self", lambda x: np.maximum(x, x), 1.5, 1.0),
    ("max_tie", lambda x: np.max(x), np.array([2.0, 1.0, 2.0]), [0.5, 0.0, 0.5]),
    ("min_tie", lambda x: np.min(x), np.array([1.0, 1.0, 1.0, 3.0]), [1 / 3, 1 / 3, 1 / 3, 0.0]),
    # prod with zeros (note [prod-zeros])
    ("prod_one_zero", lambda x: np.prod(x), np.array([0.0, 2.0, 3.0]), [6.0, 0.0, 0.0]),
    ("prod_two_zeros", lambda x: np.prod(x), np.array([0.0, 2.0, 0.0]), [0.0, 0.0, 0.0]),
    ("prod_axis_zero", lambda x: np.sum(np.prod(x, axis=0)), np.array([[0.0, 2.0], [5.0, 3.0]]),
     [[5.0, 3.0], [0.0, 2.0]]),
    # logsumexp written with the max shift, -inf entries
    ("lse_neginf", lambda x: np.max(x) + np.log(np.sum(np.exp(x - np.max(x)))),
     np.array([-INF, 0.0, np.log(3.0)]), [0.0, 0.25, 0.75]),
    # the double-where trap: the unselected branch is inf/NaN, its derivative 0
    ("where_sqrt", lambda x: np.sum(np.where(x > 0, np.sqrt(x), 0.0)), np.array([-1.0, 0.0, 4.0]),
     [0.0, 0.0, 0.25]),
    ("where_sqrt_scalar", lambda x: np.where(x > 0, np.sqrt(x), 0.0), -1.0, 0.0),
    ("where_xlogx", lambda x: np.sum(np.where(x > 0, x * np.log(x), 0.0)), np.array([0.0, 1.0]),
     [0.0, 1.0]),
    ("where_recip", lambda x: np.sum(np.where(x != 0, 1.0 / x, 0.0)), np.array([0.0, 2.0]), [0.0, -0.25]),
    ("where_log", lambda x: np.sum(np.where(x > 0, np.log(x), -1.0)), np.array([0.0, -2.0, 0.5]),
     [0.0, 0.0, 2.0]),
    ("where_exp_overflow", lambda x: np.sum(np.where(x < 100.0, np.exp(x), 0.0)), np.array([1000.0, 0.0]),
     [0.0, 1.0]),
    ("where_pow", lambda x: np.sum(np.where(x > 0, x ** 0.5, 0.0)), np.array([-4.0, 0.0, 4.0]),
     [0.0, 0.0, 0.25]),
    ("where_div_y", lambda x: np.sum(np.where(x > 0, 1.0 / np.sqrt(x), 0.0)), np.array([0.0, 4.0]),
     [0.0, -1 / 16]),
]


@pytest.mark.parametrize("backend", ["interp", "pysource"])
@pytest.mark.parametrize("name,f,x,want", CASES, ids=[c[0] for c in CASES])
def test_reverse(name, f, x, want, backend):
    _assert_exact(_grad_rev(f, x, backend), want)


@pytest.mark.parametrize("backend", ["interp", "pysource"])
@pytest.mark.parametrize("name,f,x,want", CASES, ids=[c[0] for c in CASES])
def test_forward(name, f, x, want, backend):
    _assert_exact(_grad_fwd(f, x, backend), want)


def test_pow_both_arguments():
    """d/dx and d/dy of x ** y at x = 0 in one call (y > 0)."""
    f = lambda x, y: x ** y
    for y, dx in ((2.0, 0.0), (1.0, 1.0), (0.5, INF)):
        gx, gy = pb.grad(f, argnums=(0, 1))(0.0, y)
        _assert_exact([gx, gy], [dx, 0.0])
        _, t = pb.jvp(f, (0.0, y), (1.0, 1.0))
        _assert_exact(t, dx)


def test_double_where_second_order():
    """The strong zero also holds in the Hessian: 0 where the branch is not taken."""
    f = lambda x: np.sum(np.where(x > 0, np.sqrt(x), 0.0))
    h = np.asarray(pb.hessian(f)(np.array([-1.0, 4.0])))
    _assert_exact(h, [[0.0, 0.0], [0.0, -0.25 * 4.0 ** -1.5]])


def test_zero_factor_keeps_its_derivative():
    """A cotangent that is zero at the point but not constant keeps its
    derivative: the Hessian of sin(x)**2 at 0 is 2, of x * x * x at 0 is 0 and
    of x ** 2 * sqrt(x + 1) at 0 is 2."""
    for f, want in ((lambda x: np.sin(x) ** 2, 2.0), (lambda x: x * x * x, 0.0),
                    (lambda x: x ** 2 * np.sqrt(x + 1.0), 2.0)):
        for backend in ("interp", "pysource"):
            _assert_exact(pb.hessian(f, backend=backend)(0.0), want)
            _, t = pb.jvp(pb.grad(f, backend=backend), (0.0,), (1.0,), backend=backend)
            _assert_exact(t, want)


def test_genuine_nan_is_kept():
    """Strong zeros do not hide an undefined derivative: log at a negative
    point is NaN when the branch is taken."""
    g = pb.grad(lambda x: np.log(x))(-1.0)
    assert g == -1.0  # d log(x) = 1/x is defined even where log(x) is NaN
    g = pb.grad(lambda x: np.sqrt(x))(-1.0)
    assert np.isnan(g)


def _bundle(x):
    s = np.sum(np.where(x > 0, np.sqrt(x), 0.0))
    s = s + np.std(x[:2]) + np.sqrt(np.sum(x[:2] * x[:2])) + np.sum(np.where(x > 0, x * np.log(x), 0.0))
    return s + np.power(0.0, x[3]) + np.maximum(x[3], 2.0) + np.prod(x[:3])


_BUNDLE_X = np.array([0.0, 0.0, -1.0, 2.0])
_BUNDLE_GRAD = np.array([0.0, 0.0, 0.0, np.log(2.0) + 1.0 + 0.5 + 1.0 / (2 * np.sqrt(2.0))])


def test_numba_bundle():
    """Several cases in one compiled gradient on numba: x[:2] is constant and
    zero, x[2] is negative, x[3] = 2 ties with the maximum."""
    _assert_exact(pb.grad(_bundle, backend="numba")(_BUNDLE_X), _BUNDLE_GRAD)
    _assert_exact(pb.grad(_bundle, backend="pysource")(_BUNDLE_X), _BUNDLE_GRAD)


@pytest.mark.slow
def test_numba_bundle_forward():
    _assert_exact(_grad_fwd(_bundle, _BUNDLE_X, "numba"), _BUNDLE_GRAD)
