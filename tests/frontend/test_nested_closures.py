"""Function values in nested transformations (issue 10, section 1; note [closures]):
nested defs and lambdas closing over traced values, `functools.partial`, `operator`
functions and NumPy ufuncs passed to pb.grad / jvp / vjp / hessian / jacobian."""
from __future__ import annotations

import functools
import operator

import numpy as np
import pytest

import pullback as pb
from pullback.testing import check_grads

BACKENDS = ["interp", "pysource"]


# -- perturbation confusion: d/dx [x * d/dy (x + y)] = 1 at every x ---------------------------------

def confusion_grad(x):
    return x * pb.grad(lambda y: x + y)(1.0)


def confusion_jvp(x):
    return x * pb.jvp(lambda y: x + y, (1.0,), (1.0,))[1]


def confusion_def(x):
    def inner(y):
        return x + y
    return x * pb.value_and_grad(inner)(2.0)[1]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("f", [confusion_grad, confusion_jvp, confusion_def])
def test_perturbation_confusion_both_modes(f, backend):
    for x in (-1.5, 0.0, 3.0):
        assert pb.jit(f, backend=backend)(x) == pytest.approx(x)
        assert pb.grad(f, backend=backend)(x) == pytest.approx(1.0)          # reverse over the inner one
        assert pb.jvp(f, (x,), (1.0,), backend=backend)[1] == pytest.approx(1.0)  # forward over it


def cubic(x):
    """x**2 * d/dy [x * y**2] at y = 1 = 2 x**3: the inner lambda reads x."""
    return x ** 2 * pb.grad(lambda y: x * y * y)(1.0)


def cubic_fwd(x):
    return x ** 2 * pb.jvp(lambda y: x * y * y, (1.0,), (1.0,))[1]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("f", [cubic, cubic_fwd])
def test_order_two(f, backend):
    x = 1.3
    assert pb.grad(f, backend=backend)(x) == pytest.approx(6 * x ** 2)
    assert pb.grad(pb.grad(f, backend=backend), backend=backend)(x) == pytest.approx(12 * x)      # grad of grad
    assert pb.jvp(pb.grad(f, backend=backend), (x,), (1.0,), backend=backend)[1] == pytest.approx(12 * x)
    assert pb.hessian(f, backend=backend)(x) == pytest.approx(12 * x)
    check_grads(f, (x,), modes=("fwd", "rev"), order=2, backend=backend)


def test_numba_perturbation_confusion():
    assert pb.grad(confusion_grad, backend="numba")(2.5) == pytest.approx(1.0)
    assert pb.grad(pb.grad(cubic, backend="numba"), backend="numba")(1.3) == pytest.approx(12 * 1.3)


# -- closures over traced arrays -------------------------------------------------------------------

def inner_gradient(w, x):
    def loss(v):
        return np.sum(np.tanh(w * v) ** 2)
    g = pb.grad(loss)(x)
    return np.sum(g * w) + np.sum(x * x)


def inner_vjp(w, x):
    out, back = pb.vjp(lambda v: np.sin(w * v), x)
    (ct,) = back(np.cos(x))
    return np.sum(ct * x) + np.sum(out)


def inner_jacobian(w, x):
    J = pb.jacobian(lambda v: np.sin(w * v) * v[0])(x)
    return np.sum(J * J)


def inner_hessian(w, x):
    H = pb.hessian(lambda v: np.sum(w * v ** 3))(x)
    return np.sum(H * np.outer(x, x))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("f", [inner_gradient, inner_vjp, inner_jacobian, inner_hessian])
def test_closures_over_traced_arrays(f, backend):
    w = np.array([0.3, -0.7, 1.1])
    x = np.array([0.5, 0.2, -0.4])
    np.testing.assert_allclose(pb.jit(f, backend=backend)(w, x), f(w, x), rtol=1e-12)
    check_grads(f, (w, x), modes=("fwd", "rev"), order=1, backend=backend)


def test_inner_hessian_value():
    w = np.array([0.3, -0.7, 1.1])
    x = np.array([0.5, 0.2, -0.4])
    want = np.sum(6 * w * x ** 3)  # H = diag(6 w x)
    assert pb.jit(inner_hessian)(w, x) == pytest.approx(want)
    np.testing.assert_allclose(pb.grad(inner_hessian, argnums=0)(w, x), 6 * x ** 3, rtol=1e-12)


def closure_of_closure(x):
    a = lambda y: x * y
    b = lambda z: a(z) ** 2  # (x**2 z**2: b reads x through a)
    return pb.grad(b)(1.0)  # 2 x**2


def closure_in_loop(x):
    s = 0.0
    for i in range(3):
        s = s + pb.grad(lambda y: x * y * y * i)(1.0)  # noqa: B023 (captures the traced loop index)
    return s  # 2x (0 + 1 + 2) = 6x


def curried(x):
    mk = lambda a: lambda y: a * y ** 2  # (a lambda returning a lambda)
    return pb.grad(mk(x))(2.0)  # 4x


def partial_traced(x):
    return pb.grad(functools.partial(operator.mul, x))(2.0) * x  # x**2


def partial_def(x, w):
    def f(a, y, b):
        return a * np.sin(b * y)
    return pb.grad(functools.partial(f, x, b=w))(0.5)  # x w cos(w/2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_function_values(backend):
    x = 0.8
    assert pb.grad(closure_of_closure, backend=backend)(x) == pytest.approx(4 * x)
    assert pb.grad(closure_in_loop, backend=backend)(x) == pytest.approx(6.0)
    assert pb.jit(closure_in_loop, backend=backend)(x) == pytest.approx(6 * x)
    assert pb.grad(curried, backend=backend)(x) == pytest.approx(4.0)
    assert pb.grad(partial_traced, backend=backend)(x) == pytest.approx(2 * x)
    w = 1.7
    assert pb.jit(partial_def, backend=backend)(x, w) == pytest.approx(x * w * np.cos(w / 2))
    check_grads(partial_def, (x, w), modes=("fwd", "rev"), order=2, backend=backend)


# -- partial, operator and ufunc values at top level -------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_top_level_values(backend):
    assert pb.grad(np.sin, backend=backend)(0.3) == pytest.approx(np.cos(0.3))
    x = np.array([0.1, -0.4, 0.9])
    out, back = pb.vjp(np.tanh, x, backend=backend)
    np.testing.assert_allclose(out, np.tanh(x))
    np.testing.assert_allclose(back(np.ones(3))[0], 1 - np.tanh(x) ** 2)
    _, t = pb.jvp(np.exp, (x,), (np.ones(3),), backend=backend)
    np.testing.assert_allclose(t, np.exp(x))
    assert pb.grad(operator.mul, argnums=(0, 1), backend=backend)(3.0, 2.0) == pytest.approx((2.0, 3.0))
    assert pb.grad(operator.truediv, backend=backend)(3.0, 2.0) == pytest.approx(0.5)
    assert pb.grad(functools.partial(operator.pow, 3.0), backend=backend)(2.0) == pytest.approx(9 * np.log(3))
    M = np.arange(6.0).reshape(2, 3)
    out, back = pb.vjp(functools.partial(np.sum, axis=0), M, backend=backend)
    np.testing.assert_allclose(out, M.sum(axis=0))
    np.testing.assert_allclose(back(np.array([1.0, 2.0, 3.0]))[0], [[1, 2, 3], [1, 2, 3]])
    out, back = pb.vjp(functools.partial(np.sum, axis=1), M, backend=backend)  # another key: staged again
    np.testing.assert_allclose(back(np.array([1.0, 2.0]))[0], [[1, 1, 1], [2, 2, 2]])
    mk = lambda a: lambda y: a * y ** 3
    assert pb.grad(mk(2.0), backend=backend)(1.5) == pytest.approx(6 * 1.5 ** 2)
    assert pb.hessian(np.sin, backend=backend)(0.3) == pytest.approx(-np.sin(0.3))


def ufunc_values(x):
    fs = [np.sin, np.cos, operator.neg]
    return sum(pb.grad(f)(x) for f in fs)  # cos x - sin x - 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_ufunc_values_in_staged_code(backend):
    x = 0.4
    assert pb.jit(ufunc_values, backend=backend)(x) == pytest.approx(np.cos(x) - np.sin(x) - 1)
    assert pb.grad(ufunc_values, backend=backend)(x) == pytest.approx(-np.sin(x) - np.cos(x))


def calls_partial(x):
    return functools.partial(operator.mul, 2.0)(x) + functools.partial(np.maximum, 0.0)(x)


def test_calling_partial_and_operator_in_staged_code():
    assert pb.grad(calls_partial)(1.5) == pytest.approx(3.0)
    assert pb.grad(calls_partial)(-1.5) == pytest.approx(2.0)


# -- errors ----------------------------------------------------------------------------------------

def bad_argnums(x):
    return pb.grad(lambda y: x * y, argnums=1)(1.0)


def test_argnums_of_a_closure_count_its_own_arguments():
    with pytest.raises(pb.PullbackError, match="argnums=1 but the function got 1 arguments"):
        pb.jit(bad_argnums)(1.0)


# -- closures passed to helper functions (IR functions of their own) --------------------------------

def _grad_at(fn, y):
    return pb.grad(fn)(y)


def _apply(fn, y):
    return fn(y)


def through_helpers(x):
    return _grad_at(lambda y: x * y * y, 1.0) + _apply(lambda y: x * y, 3.0)  # 2x + 3x


def _put(fn, v):
    fn(v)
    return v


def mutates_captured(x):
    buf = np.zeros(2) + x

    def put(v):
        buf[0] = v
    _put(put, x * 2)
    return buf[0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_closures_passed_to_helpers(backend):
    assert pb.jit(through_helpers, backend=backend)(0.7) == pytest.approx(3.5)
    assert pb.grad(through_helpers, backend=backend)(0.7) == pytest.approx(5.0)
    check_grads(through_helpers, (0.7,), modes=("fwd", "rev"), order=2, backend=backend)


def test_in_place_update_of_a_captured_array_in_a_helper_is_refused():
    # the helper is an IR function of its own: the enclosing function would not see the update
    with pytest.raises(pb.PullbackError, match="closure cell") as ei:
        pb.jit(mutates_captured)(1.0)
    assert "buf[0] = v" in str(ei.value)


# -- what else a staged function value may hold -------------------------------------------------------

def default_captures(x):
    return pb.grad(lambda y, a=x: a * y * y)(1.0)  # 2x


def list_captures(x):
    vals = [x, x * x]
    return pb.grad(lambda y: vals[0] * vals[1] * y)(1.0)  # x**3


def calls_a_vjp_fn(x):
    _, back = pb.vjp(np.sin, x)
    return pb.grad(lambda c: back(c)[0] * x)(1.0)  # x cos x


def partial_keyword(x):
    def g(y, *, k=2.0):
        return x * y ** k
    return pb.grad(functools.partial(g, k=3.0))(1.0)  # 3x


@pytest.mark.parametrize("backend", BACKENDS)
def test_captured_defaults_lists_and_vjp_fns(backend):
    x = 0.7
    assert pb.grad(default_captures, backend=backend)(x) == pytest.approx(2.0)
    assert pb.grad(list_captures, backend=backend)(x) == pytest.approx(3 * x ** 2)
    assert pb.jit(calls_a_vjp_fn, backend=backend)(x) == pytest.approx(x * np.cos(x))
    assert pb.grad(calls_a_vjp_fn, backend=backend)(x) == pytest.approx(np.cos(x) - x * np.sin(x))
    assert pb.grad(partial_keyword, backend=backend)(x) == pytest.approx(3.0)
    assert pb.jit(lambda v: pb.jacobian(lambda u: u * v, argnums=-1)(np.ones(2)), backend=backend)(x) \
        == pytest.approx(x * np.eye(2))


def _make_scaled(w):
    return lambda x: x * w


def _make_doubled(f):
    return lambda x: f(x) * 2.0


def _returned_closures(x, v):
    # a helper returns a function value reading its parameter, or a closure it was given
    # (which reads the caller's traced v): the caller's call reads the caller's values
    return _make_scaled(v * 2.0)(x) + _make_doubled(lambda y: y * v)(x)


def test_returned_function_values_read_the_call_sites_arguments():
    x, v = 2.0, 3.0
    for backend in ("interp", "pysource"):
        assert pb.jit(_returned_closures, backend=backend)(x, v) == pytest.approx(x * v * 2 + x * v * 2)
        assert pb.grad(_returned_closures, argnums=1, backend=backend)(x, v) == pytest.approx(4 * x)
