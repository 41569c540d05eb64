"""The derivative rules of `div` and `sqrt` written with one reciprocal
(ir/prims/elementwise.py, note [reciprocal-rules]): a derivative evaluates no more
divisions than its primal, at two sizes and at second order; sqrt's rule gives the
same bits as 0.5 / sqrt(x) everywhere; div's partial in the denominator stays within
rounding of -(a / b) / b and keeps its special values."""
from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.backends import interp
from pullback.frontend import stage
from pullback.pytree import flatten
from pullback.testing import check_grads


class _DivCount(interp.OpCount):
    """Also counts the elements `div` and `sqrt` compute."""

    def __init__(self):
        super().__init__()
        self.div = self.sqrt = 0

    def prim(self, row, e, outs, loc=None) -> None:
        super().prim(row, e, outs, loc)
        n = int(np.prod(outs[0].type.shape))
        if e.op == "div":
            self.div += n
        elif e.op == "sqrt":
            self.sqrt += n


def _counts(fn, args):
    st = stage(fn, args)
    leaves, _ = flatten(tuple(args))
    c = _DivCount()
    interp.run(st.prog, *leaves, ops=c)
    return c.div, c.sqrt


def potential(x, w):
    """particle's potential of one charge: 1 / ||x - c||."""
    c1 = np.array([10.0, 10.0 - w])
    return 1.0 / np.sqrt(np.sum((x - c1) ** 2))


def sigmoid_sum(v):
    return np.sum(1.0 / (1.0 + np.exp(-v)))


def _force_sum(w, x):
    return np.sum(pb.jacfwd(potential)(x, w[0]))


@pytest.mark.parametrize("n", [5, 40])
def test_gradient_divides_as_often_as_the_primal(n):
    """Cheap gradients at two sizes: the reverse rule of 1/y reuses the program's own
    reciprocal (before: three divisions per element for one)."""
    v = np.linspace(-1.0, 1.0, n)
    assert _counts(pb.grad(sigmoid_sum), (v,)) == _counts(sigmoid_sum, (v,)) == (n, 0)


def test_nested_derivatives_divide_no_more_than_their_inner_derivative():
    """particle's pattern (note [reciprocal-rules]): the force is the jvp of 1/sqrt(.), and
    the outer gradient of it evaluates no division and no square root beyond the
    force's own (before: 2 and 1 per evaluation of the potential, 6 and 2 beyond)."""
    x, w = np.array([1.0, 2.0]), np.array([0.5])
    assert _counts(pb.grad(potential), (x, 0.5)) == _counts(potential, (x, 0.5)) == (1, 1)
    force = _counts(lambda w, x: _force_sum(w, x), (w, x))
    assert _counts(pb.grad(_force_sum), (w, x)) == force


@pytest.mark.parametrize("backend", ["interp", "numba"])
def test_nested_values_against_finite_differences(backend):
    x = np.array([1.0, 2.0])
    check_grads(_force_sum, (np.array([0.5]), x), modes=("rev",), order=1, argnums=(0,), backend=backend)
    check_grads(potential, (x, 0.5), order=2, backend=backend)     # all four second-order chains
    v = np.linspace(-2.0, 2.0, 9)
    h = pb.hessian(sigmoid_sum, backend=backend)(v)
    s = 1.0 / (1.0 + np.exp(-v))
    np.testing.assert_allclose(h, np.diag(s * (1 - s) * (1 - 2 * s)), rtol=1e-12, atol=1e-15)


_EDGES = np.array([0.0, -0.0, 5e-324, 1e-310, 2.2250738585072014e-308, 1e-300, 0.25, 1.0, 2.0, 3.0, 7.0,
                   1e300, 1.7976931348623157e308, np.inf, np.nan])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("backend", ["interp", "numba"])
def test_sqrt_rule_has_the_bits_of_half_over_sqrt(dtype, backend):
    """0.5 * (1 / y) == 0.5 / y for every y = sqrt(x) >= 0 (a power-of-two scaling of a
    normal reciprocal), subnormal, zero, infinite and NaN inputs included."""
    rng = np.random.default_rng(0)
    top = np.log10(np.finfo(dtype).max)
    with np.errstate(over="ignore"):    # float64's edges overflow float32: inf, also an edge
        x = np.concatenate([_EDGES, 10.0 ** rng.uniform(-top, top, 200), rng.uniform(0, 4, 200)]).astype(dtype)
    with np.errstate(all="ignore"):
        want = dtype(0.5) / np.sqrt(x)
    got = pb.grad(lambda x: np.sum(np.sqrt(x)), backend=backend)(x)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.view(np.uint32 if dtype == np.float32 else np.uint64),
                                  want.view(np.uint32 if dtype == np.float32 else np.uint64))


@pytest.mark.parametrize("backend", ["interp", "numba"])
def test_div_partials_within_rounding_and_special_values(backend):
    rng = np.random.default_rng(1)
    a = np.concatenate([rng.standard_normal(300) * 10.0 ** rng.uniform(-100, 100, 300),
                        [0.0, 1.0, -1.0, np.inf, -np.inf, 0.0, 3.0, np.inf, np.nan, 2.0]])
    b = np.concatenate([rng.standard_normal(300) * 10.0 ** rng.uniform(-100, 100, 300),
                        [0.0, 0.0, -0.0, 2.0, 0.0, np.inf, np.inf, np.inf, 1.0, np.nan]])
    ga, gb = pb.grad(lambda a, b: np.sum(a / b), argnums=(0, 1), backend=backend)(a, b)
    with np.errstate(all="ignore"):
        want_a, want_b = 1.0 / b, -(a / b) / b
    np.testing.assert_array_equal(ga, want_a)
    special = ~np.isfinite(want_b) | (want_b == 0)
    np.testing.assert_array_equal(gb[special], want_b[special])            # inf, nan, signed zeros
    np.testing.assert_allclose(gb[~special], want_b[~special], rtol=4 * np.finfo(float).eps, atol=0)
