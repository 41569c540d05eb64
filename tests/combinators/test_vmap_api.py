"""`pb.vmap` as a transformation object composed with the others outside staged
code, and the located errors of `pb.map`/`pb.vmap` (staged and eager). The
per-case checks against unrolled loops are in test_map.py."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import pullback as pb
from pullback.errors import PullbackError, ShapeError
from pullback.testing import numerical_jvp

from .test_map import _close, _loss, _rng, unrolled_vmap

HERE = __file__


# -- vmap as a transformation object, composed outside staged code ---------------------------------

BK = ["interp", "pysource", pytest.param("numba", marks=pytest.mark.slow)]


def _rows(f, *args):
    return np.stack([f(*[a[i] for a in args]) for i in range(len(args[0]))])


@pytest.mark.parametrize("backend", BK)
def test_vmap_of_grad_and_of_hessian(backend):
    X, w = _rng(50).normal(size=(4, 3)), _rng(51).normal(size=3)
    got = pb.vmap(pb.grad(_loss, argnums=1), in_axes=(0, None), backend=backend)(X, w)
    want = _rows(lambda x: pb.grad(_loss, argnums=1, backend="interp")(x, w), X)
    _close(got, want, what="vmap(grad)")
    fd = _rows(lambda x: np.array([numerical_jvp(_loss, (x, w), (np.zeros(3), e)) for e in np.eye(3)]), X)
    _close(got, fd, rtol=1e-6, atol=1e-7, what="vmap(grad) vs central differences")
    H = pb.vmap(pb.hessian(_loss, argnums=0), in_axes=(0, None), backend=backend)(X, w)
    _close(H, _rows(lambda x: pb.hessian(_loss, argnums=0, backend="interp")(x, w), X), what="vmap(hessian)")


@pytest.mark.parametrize("backend", BK)
def test_jacobian_vjp_and_jvp_of_vmap(backend):
    X, w = _rng(52).normal(size=(4, 3)), _rng(53).normal(size=3)
    batched = pb.vmap(_loss, in_axes=(0, None))
    per_row = _rows(lambda x: pb.grad(_loss, argnums=(0, 1), backend="interp")(x, w)[1], X)
    _close(pb.jacobian(batched, argnums=1, backend=backend)(X, w), per_row, what="jacobian(vmap) wrt w")
    _close(pb.jacobian(batched, argnums=1, mode="fwd", backend=backend)(X, w), per_row, what="jacfwd(vmap)")
    u = _rng(54).normal(size=4)
    out, back = pb.vjp(batched, X, w, backend=backend)
    _close(out, _rows(lambda x: _loss(x, w), X), what="vjp(vmap) primal")
    gX, gw = back(u)
    _close(gw, u @ per_row, what="vjp(vmap) wrt w")
    _close(gX, u[:, None] * _rows(lambda x: pb.grad(_loss, backend="interp")(x, w), X), what="vjp(vmap) wrt X")
    V = _rng(55).normal(size=(4, 3))
    out, tan = pb.jvp(batched, (X, w), (V, np.zeros(3)), backend=backend)
    _close(tan, numerical_jvp(unrolled_vmap(_loss, in_axes=(0, None)), (X, w), (V, np.zeros(3))),
           rtol=1e-6, atol=1e-7, what="jvp(vmap) vs central differences")
    _close(pb.grad(lambda X, w: np.sum(u * batched(X, w)), argnums=1, backend=backend)(X, w), u @ per_row,
           what="grad of a function calling a vmap object")


@pytest.mark.parametrize("backend", BK)
def test_jit_and_vmap_compose(backend):
    T = _rng(56).normal(size=(2, 3, 4))

    def f(r):
        return np.sin(r) * np.sum(r * r)

    want = np.stack([np.stack([f(r) for r in M]) for M in T])
    _close(pb.jit(pb.vmap(pb.vmap(f)), backend=backend)(T), want, what="jit(vmap(vmap))")
    _close(pb.vmap(pb.jit(pb.vmap(f)), backend=backend)(T), want, what="vmap(jit(vmap))")
    _close(pb.vmap(f, in_axes=2, out_axes=1, backend=backend)(T),
           np.stack([f(T[:, :, k]) for k in range(4)], axis=1), what="vmap in_axes=2 out_axes=1")


# -- errors: located at the user's line --------------------------------------------------------------

def _line_of(fn, needle):
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, text in enumerate(lines) if needle in text)


def _expect(exc, call, where, needle, words):
    with pytest.raises(exc) as ei:
        call()
    err = ei.value
    assert isinstance(err, PullbackError), repr(err)
    assert err.loc is not None and err.loc.file == HERE, str(err)
    assert err.loc.line == _line_of(where, needle), str(err)
    assert f"{HERE}:{err.loc.line}" in str(err) and words in str(err), str(err)
    assert err.hint, str(err)


def test_staged_errors_are_located():
    def mismatched(x, y):
        return pb.map(lambda a, b: a + b, x, y)  # mismatched

    def scalar(x, s):
        return pb.map(lambda a: a * 2.0, s)  # scalar

    def not_callable(x):
        return pb.map(2.0, x)  # not callable

    def vmap_axes(X):
        return pb.vmap(lambda r: r, in_axes=(0, 1))(X)  # axes

    def vmap_dims(x, y):
        return pb.vmap(lambda a, b: a * b)(x, y)  # dims

    def nothing(x):
        return pb.map(lambda a: None, x)  # nothing

    def out_axis(x):
        return pb.vmap(lambda a: a * 2.0, out_axes=1)(x)  # out_axes

    x3, x4 = np.ones(3), np.ones(4)
    for fn, args, needle, exc, words in [
            (mismatched, (x3, x4), "# mismatched", ShapeError, "leading dimensions 3 and 4"),
            (scalar, (x3, 1.5), "# scalar", ShapeError, "cannot map over a scalar"),
            (not_callable, (x3,), "# not callable", PullbackError, "not a function"),
            (vmap_axes, (np.ones((2, 2)),), "# axes", PullbackError, "in_axes has 2 entries"),
            (vmap_dims, (x3, x4), "# dims", ShapeError, "leading dimensions 3 and 4"),
            (nothing, (x3,), "# nothing", PullbackError, "returns no arrays"),
            (out_axis, (x3,), "# out_axes", PullbackError, "out_axes=1 is out of range")]:
        _expect(exc, lambda: pb.jit(fn, backend="interp")(*args), fn, needle, words)
        _expect(exc, lambda: pb.grad(lambda *a: np.sum(fn(*a)), backend="interp")(*args), fn, needle, words)


EAGER_ERRORS = {   # outside staged code: the error names the line of the pb.map / pb.vmap call
    "mismatched": (lambda: pb.map(lambda a, b: a + b, np.ones(3), np.ones(4)), ShapeError, "leading dimension"),
    "scalar": (lambda: pb.map(lambda a: a, 1.5), ShapeError, "cannot map over a scalar"),
    "map_not_callable": (lambda: pb.map(2.0, np.ones(3)), PullbackError, "not a function"),
    "vmap_not_callable": (lambda: pb.vmap(2.0), PullbackError, "needs a function"),
    "vmap_out_axes": (lambda: pb.vmap(np.sin, out_axes="a"), PullbackError, "out_axes"),
    "vmap_in_axes": (lambda: pb.vmap(np.sin, in_axes=(0, 0))(np.ones(3)), PullbackError, "in_axes has 2 entries"),
}


@pytest.mark.parametrize("what", sorted(EAGER_ERRORS))
def test_eager_errors_are_located(what):
    call, exc, words = EAGER_ERRORS[what]
    _expect(exc, call, call, "lambda", words)
