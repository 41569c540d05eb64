"""Every case of the user suite, checked as the issue-10 reviewer would.

For each registered function (see `_cases.py`):

- primal: `pb.jit` equals plain Python, and the inputs are not mutated;
- `pb.grad` (scalar output) or `pb.jacobian` (array output) equals central
  finite differences of the plain function, element by element (or the case's
  exact expected gradient at an edge point);
- `pb.jvp` and `pb.vjp` pass `pullback.testing.check_grads` at order 1
  (at an edge point: `pb.jvp` along each basis direction and `pb.vjp` of 1
  equal the exact gradient);
- `pb.hessian` equals second central differences, for cases marked `hess`.

The fast suite runs on the interp backend. The slow tests run `pb.grad` on the
default (numba) backend against the interp result.
"""
from __future__ import annotations

import importlib
import os
import pkgutil

import numpy as np
import pytest

import pullback as pb
from pullback.pytree import flatten, unflatten
from pullback.testing import check_grads, is_float_leaf

from . import _cases

BACKEND = "interp"

_MODULES = [m.name for m in pkgutil.iter_modules([os.path.dirname(__file__)])
            if not m.name.startswith(("_", "test_"))]
CASES = []
for _m in sorted(_MODULES):
    CASES.extend(importlib.import_module(f"{__package__}.{_m}").CASES)


def _param(c, hard_slow=False):
    marks = []
    if c.slow or hard_slow:
        marks.append(pytest.mark.slow)
    if c.xfail:
        marks.append(pytest.mark.xfail(reason=c.xfail, strict=True))
    return pytest.param(c, id=f"{c.module}.{c.name}", marks=marks)


def _has_float(x):
    return any(is_float_leaf(l) for l in flatten(x)[0])


def _argnums(c):
    if c.argnums is not None:
        return tuple(c.argnums)
    return tuple(i for i, a in enumerate(c.args) if _has_float(a))


def _close(actual, expected, rtol, atol, what):
    la, ta = flatten(actual)
    le, te = flatten(expected)
    assert len(la) == len(le), f"{what}: structure {ta} != expected {te}"
    for a, e in zip(la, le):
        a = np.asarray(a, dtype=np.float64)
        e = np.asarray(e, dtype=np.float64)
        if a.shape != e.shape and a.size == e.size == 1:
            a = a.reshape(e.shape)
        assert a.shape == e.shape, f"{what}: shape {a.shape} != expected {e.shape}"
        fin = np.isfinite(e)
        scale = max(1.0, float(np.max(np.abs(e[fin]))) if fin.any() else 1.0)
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol * scale, err_msg=what)


def _exact(got, expected):
    """Equal to the documented value: infinities exactly, finite values to rounding, never NaN."""
    np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(expected, dtype=float),
                               rtol=1e-12, atol=0, equal_nan=False)


def _fd(fn, args, argnum, eps):
    """d out / d args[argnum] by central differences: a pytree like args[argnum] whose
    float leaves have shape out.shape + leaf.shape."""
    leaves, tree = flatten(args[argnum])
    res = []
    for k, leaf in enumerate(leaves):
        if not is_float_leaf(leaf):
            res.append(None)
            continue
        base = np.asarray(leaf, dtype=np.float64)
        cols = []
        for idx in np.ndindex(base.shape):
            outs = []
            for s in (1.0, -1.0):
                x = base.copy()
                x[idx] += s * eps
                newl = list(leaves)
                newl[k] = x if isinstance(leaf, np.ndarray) else type(leaf)(x[()])
                a = list(_cases.copy.deepcopy(args))
                a[argnum] = unflatten(tree, newl)
                outs.append(np.asarray(fn(*a), dtype=np.float64))
            cols.append((outs[0] - outs[1]) / (2 * eps))
        o = np.stack(cols, axis=-1) if cols else np.zeros((0,))
        res.append(o.reshape(o.shape[:-1] + base.shape))
    return unflatten(tree, res)


def _derivative(c, backend):
    """pb.grad / pb.jacobian of the case, as a tuple over its argnums."""
    nums = _argnums(c)
    out = c.fn(*c.fresh())
    scalar = np.ndim(out) == 0 and not isinstance(out, (tuple, list, dict))
    tr = pb.grad if scalar else pb.jacobian
    an = nums[0] if len(nums) == 1 else nums
    got = tr(c.fn, argnums=an, backend=backend)(*c.fresh())
    return got if len(nums) > 1 else (got,)


@pytest.mark.parametrize("c", [_param(c) for c in CASES])
def test_primal(c):
    args = c.fresh()
    ref = c.fn(*c.fresh())
    got = pb.jit(c.fn, backend=BACKEND)(*args)
    _close(got, ref, 1e-9, 1e-12, "primal vs plain Python")
    _close(args, c.fresh(), 0, 0, "the inputs were mutated")


@pytest.mark.parametrize("c", [_param(c) for c in CASES])
def test_grad(c):
    out = c.fn(*c.fresh())
    if not isinstance(out, (float, np.floating, np.ndarray)):
        pytest.skip("structured output: covered by test_jvp_vjp")
    got = _derivative(c, BACKEND)
    nums = _argnums(c)
    if c.grad is not None:
        exp = c.grad if len(nums) > 1 else (c.grad,)
        for g, e in zip(got, exp):
            _exact(g, e)
        return
    for g, i in zip(got, nums):
        _close(g, _fd(c.fn, c.fresh(), i, c.fd_eps), c.rtol, c.atol, f"derivative wrt argument {i}")


@pytest.mark.parametrize("c", [_param(c) for c in CASES])
def test_jvp_vjp(c):
    nums = _argnums(c)
    if c.grad is None:
        check_grads(c.fn, c.fresh(), modes=("fwd", "rev"), order=1, argnums=nums, backend=BACKEND,
                    rtol=c.rtol, atol=c.atol, eps=c.fd_eps)
        return
    exp = c.grad if len(nums) > 1 else (c.grad,)
    zeros = [np.zeros_like(np.asarray(a, dtype=float)) for a in c.args]
    for i, e in zip(nums, exp):
        a0 = np.asarray(c.args[i], dtype=float)
        for idx in np.ndindex(a0.shape):
            t = [z.copy() for z in zeros]
            t[i][idx] = 1.0
            t = tuple(tt if isinstance(a, np.ndarray) else float(tt) for tt, a in zip(t, c.args))
            _, tan = pb.jvp(c.fn, c.fresh(), t, backend=BACKEND)
            _exact(tan, np.asarray(e, dtype=float)[idx])
    _, f_vjp = pb.vjp(c.fn, *c.fresh(), backend=BACKEND)
    cts = f_vjp(1.0)
    for i, e in zip(nums, exp):
        _exact(cts[i], e)


def _fd_hessian(fn, args, i, h=1e-4):
    x0 = np.asarray(args[i], dtype=np.float64)
    n = x0.size

    def f(x):
        a = list(_cases.copy.deepcopy(args))
        a[i] = x.reshape(x0.shape) if isinstance(args[i], np.ndarray) else type(args[i])(x.reshape(()))
        return float(fn(*a))

    flat = x0.reshape(-1)
    H = np.zeros((n, n))
    for p in range(n):
        for q in range(p, n):
            v = 0.0
            for sp, sq, w in ((1, 1, 1), (1, -1, -1), (-1, 1, -1), (-1, -1, 1)):
                x = flat.copy()
                x[p] += sp * h
                x[q] += sq * h
                v += w * f(x)
            H[p, q] = H[q, p] = v / (4 * h * h)
    return H.reshape(x0.shape + x0.shape)


@pytest.mark.parametrize("c", [_param(c) for c in CASES if c.hess])
def test_hessian(c):
    i = _argnums(c)[0]
    got = pb.hessian(c.fn, argnums=i, backend=BACKEND)(*c.fresh())
    _close(got, _fd_hessian(c.fn, c.fresh(), i), max(c.rtol, 1e-4), max(c.atol, 1e-5), "hessian")


@pytest.mark.parametrize("c", [_param(c, hard_slow=True) for c in CASES])
def test_numba_matches_interp(c):
    out = c.fn(*c.fresh())
    if not isinstance(out, (float, np.floating, np.ndarray)):
        pytest.skip("structured output")
    got = _derivative(c, "numba")
    ref = _derivative(c, BACKEND)
    _close(got, ref, 1e-9, 1e-12, "numba vs interp")
