"""Tests of the gradient checker `pullback.testing` itself.

The checker must pass correct derivatives and must FAIL on wrong ones:
- with hand-written and finite-difference "transforms" (no compiler involved);
- at the IR level (`check_prog`) and through the public API (`check_grads`),
  with a row of the primitive table deliberately broken (monkeypatched).
"""
from __future__ import annotations

import numpy as np
import pytest

from pullback.ir.builder import Builder
from pullback.ir.core import Func, Prog, Var
from pullback.ir.prims import TABLE
from pullback.ir.types import TensorType
from pullback.pytree import flatten, unflatten
from pullback.testing import (check_grads, check_jvp, check_prog, check_vjp, is_float_leaf,
                              numerical_jvp, random_like)


# -- reference "transforms" built from finite differences ------------------------------

def fd_jvp(f, primals, tangents, eps=1e-4):
    return f(*primals), numerical_jvp(f, primals, tangents, eps)


def fd_vjp(f, *primals, eps=1e-4):
    """J^T u, one basis direction at a time (slow, exact up to O(eps^2))."""
    out = f(*primals)
    zeros = [unflatten(t, [random_like(x, None, active=False) for x in lv])
             for lv, t in (flatten(p) for p in primals)]

    def vjp_fn(u):
        res = []
        for k, x in enumerate(primals):
            leaves, tree = flatten(x)
            cts = []
            for j, leaf in enumerate(leaves):
                if not is_float_leaf(leaf):
                    cts.append(None)
                    continue
                g = np.zeros(np.shape(leaf))
                for idx in np.ndindex(np.shape(leaf)):
                    e = np.zeros(np.shape(leaf))
                    e[idx] = 1.0
                    tl, tt = flatten(zeros[k])
                    tl = list(tl)
                    tl[j] = e if np.ndim(leaf) else 1.0
                    tans = list(zeros)
                    tans[k] = unflatten(tt, tl)
                    d = numerical_jvp(f, primals, tans, eps)
                    g[idx] = sum(float(np.sum(np.asarray(a) * np.asarray(b)))
                                 for a, b in zip(flatten(u)[0], flatten(d)[0]) if is_float_leaf(a))
                cts.append(g if np.ndim(leaf) else float(g))
            res.append(unflatten(tree, cts))
        return tuple(res)

    return out, vjp_fn


def f_np(x, y):
    return np.sin(x) * y + x ** 2


def f_np_jvp(f, primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    return f_np(x, y), (np.cos(x) * y + 2 * x) * tx + np.sin(x) * ty


def f_np_vjp(f, x, y):
    return f_np(x, y), lambda u: (u * (np.cos(x) * y + 2 * x), u * np.sin(x))


ARGS = (np.array([0.3, -1.2, 2.0]), np.array([1.5, 0.7, -0.4]))


# -- finite differences --------------------------------------------------------------------

def test_numerical_jvp_pytrees():
    def f(p, n):
        return {"a": np.sin(p["x"]) * p["y"], "b": (p["x"] ** 2, n)}

    p = {"x": np.array([0.1, 0.5]), "y": 2.0}
    t = {"x": np.array([1.0, -2.0]), "y": 0.5}
    d = numerical_jvp(f, (p, 3), (t, 0), 1e-6)
    np.testing.assert_allclose(d["a"], np.cos(p["x"]) * t["x"] * p["y"] + np.sin(p["x"]) * t["y"], rtol=1e-8)
    np.testing.assert_allclose(d["b"][0], 2 * p["x"] * t["x"], rtol=1e-8)
    assert d["b"][1] == 0  # integer output: zero tangent


def test_numerical_jvp_holds_ints_fixed():
    seen = []

    def f(x, n):
        seen.append(n)
        return x * n

    d = numerical_jvp(f, (2.0, 3), (1.0, 0), 1e-6)
    assert seen == [3, 3]
    assert abs(d - 3.0) < 1e-8


# -- the checker on hand-written derivatives -------------------------------------------------

def test_check_grads_passes_on_correct_rules():
    check_grads(f_np, ARGS, order=1, jvp=f_np_jvp, vjp=f_np_vjp)
    check_jvp(f_np, ARGS, jvp=f_np_jvp)
    check_vjp(f_np, ARGS, vjp=f_np_vjp, jvp=f_np_jvp)


def test_check_jvp_fails_on_wrong_jvp():
    def bad_jvp(f, primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        return f_np(x, y), (np.sin(x) * y + 2 * x) * tx + np.sin(x) * ty  # sin for cos

    with pytest.raises(AssertionError, match="JVP vs central finite differences"):
        check_grads(f_np, ARGS, order=1, jvp=bad_jvp, vjp=f_np_vjp)


def _bad_vjp(f, x, y):
    return f_np(x, y), lambda u: (u * (np.sin(x) * y + 2 * x), u * np.sin(x))  # sin for cos


def test_check_vjp_fails_on_wrong_vjp_alone():
    with pytest.raises(AssertionError, match="dot-product"):
        check_grads(f_np, ARGS, order=1, jvp=f_np_jvp, vjp=_bad_vjp)
    with pytest.raises(AssertionError, match="dot-product"):
        check_grads(f_np, ARGS, modes=("rev",), order=1, vjp=_bad_vjp)


def test_tight_dot_product_identity_alone_catches_wrong_vjp(monkeypatch):
    """With finite differences made to agree with the wrong vjp, <u, jvp(v)> still catches it."""
    from pullback import testing

    def fake_fd(f, args, tangents, eps):
        (x, y), (tx, ty) = args, tangents
        return (np.sin(x) * y + 2 * x) * tx + np.sin(x) * ty

    monkeypatch.setattr(testing, "numerical_jvp", fake_fd)
    with pytest.raises(AssertionError, match=r"<vjp\(u\), v> vs <u, jvp\(v\)>"):
        check_vjp(f_np, ARGS, vjp=_bad_vjp, jvp=f_np_jvp)


def test_wrong_primal_output_is_caught():
    def bad_jvp(f, primals, tangents):
        out, t = f_np_jvp(f, primals, tangents)
        return out + 1.0, t

    with pytest.raises(AssertionError, match="primal output of jvp"):
        check_jvp(f_np, ARGS, jvp=bad_jvp)


def test_vjp_must_return_one_cotangent_per_primal():
    def bad_vjp(f, x, y):
        return f_np(x, y), lambda u: u * np.cos(x)

    with pytest.raises(AssertionError, match="one cotangent per primal"):
        check_vjp(f_np, ARGS, vjp=bad_vjp, jvp=f_np_jvp)


def test_check_grads_order2_with_fd_transforms():
    """order=2 recursion: FD-based transforms are correct at every order."""

    def g(x, p):
        return {"s": np.sum(np.tanh(x) * p["w"]), "v": np.exp(0.5 * x) * p["b"]}

    args = (np.array([0.2, -0.4]), {"w": np.array([1.0, 2.0]), "b": 0.3})
    check_grads(g, args, order=2, jvp=fd_jvp, vjp=fd_vjp, rtol=1e-4, atol=1e-5)


def test_check_grads_order2_catches_wrong_second_derivative():
    """A transform that is right at order 1 but wrong on derivative functions fails at order 2."""
    calls = []

    def jvp2(f, primals, tangents):
        out, t = fd_jvp(f, primals, tangents)
        calls.append(f.__name__)
        if f.__name__ == "f_vjp":  # derivatives of the reverse-mode derivative are off by 1%
            t = [1.01 * x if x is not None else None for x in t]
        return out, t

    def h(x):
        return np.sin(x) * x

    x = (np.array([0.3, 1.1]),)
    check_grads(h, x, order=1, jvp=jvp2, vjp=fd_vjp, rtol=1e-4, atol=1e-5)
    with pytest.raises(AssertionError, match="JVP of VJP"):
        check_grads(h, x, order=2, jvp=jvp2, vjp=fd_vjp, rtol=1e-4, atol=1e-5)
    assert "f_jvp" in calls or "f_vjp" in calls


def test_int_args_get_zero_tangents_and_argnums():
    seen = []

    def jvp(f, primals, tangents):
        seen.append(tangents)
        return fd_jvp(f, primals, tangents)

    def f(x, n, y):
        return x * n + y

    check_jvp(f, (1.5, 3, np.array([1.0, 2.0])), jvp=jvp)
    (tx, tn, ty), = seen
    assert tn == 0 and isinstance(tn, int)
    assert isinstance(tx, float) and tx != 0.0
    seen.clear()
    check_jvp(f, (1.5, 3, np.array([1.0, 2.0])), jvp=jvp, argnums=(2,))
    (tx, tn, ty), = seen
    assert tx == 0.0 and np.all(ty != 0.0)


def test_bad_modes_rejected():
    with pytest.raises(ValueError):
        check_grads(f_np, ARGS, modes=("sideways",), jvp=f_np_jvp, vjp=f_np_vjp)


# -- IR level: check_prog with a deliberately broken primitive row ----------------------------

def _sin_prog(shape=(3,)):
    b = Builder()
    t = TensorType("f64", shape)
    x = Var("x", t)
    b.supply.reserve("x")
    y = b.sin(x, name="y")
    z = b.mul(y, x, name="z")
    return Prog((Func("f", (x,), b.body((z,)), (z.type,)),), "f")


def _wrong_sin_jvp(b, args, tans, outs):
    return [b.mul(tans[0], b.sin(args[0]))]  # sin instead of cos


def _wrong_sin_vjp(b, args, outs, cts, need):
    return [b.mul(cts[0], b.sin(args[0]))]


X = np.array([0.3, -1.1, 2.2])


def test_check_prog_passes_on_correct_rules():
    check_prog(_sin_prog(), [X])


def test_check_prog_fails_on_wrong_sin_rules(monkeypatch):
    row = TABLE.get("sin")
    monkeypatch.setattr(row, "jvp", _wrong_sin_jvp)
    monkeypatch.setattr(row, "vjp", _wrong_sin_vjp)
    with pytest.raises(AssertionError, match="JVP vs central finite differences"):
        check_prog(_sin_prog(), [X])
    with pytest.raises(AssertionError, match="dot-product"):
        check_prog(_sin_prog(), [X], modes=("rev",))


def test_check_prog_catches_wrong_vjp_alone(monkeypatch):
    monkeypatch.setattr(TABLE.get("sin"), "vjp", _wrong_sin_vjp)
    check_prog(_sin_prog(), [X], modes=("fwd",))  # jvp still right
    with pytest.raises(AssertionError, match="dot-product"):
        check_prog(_sin_prog(), [X])


# -- public API: check_grads through pb.jvp / pb.vjp ------------------------------------------

BACKENDS = ["interp", "pysource"]


def api_f(x, y):
    return np.sum(np.sin(x) * y) + np.tanh(y[0])


def api_g(x, n):
    return {"a": np.exp(0.5 * x) * n, "b": x * x}


@pytest.mark.parametrize("backend", BACKENDS)
def test_check_grads_api_correct(backend):
    check_grads(api_f, ARGS, order=2, backend=backend)
    check_grads(api_g, (np.array([0.1, -0.7]), 3), order=2, backend=backend)


@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_check_grads_api_single_mode(mode):
    check_grads(api_f, ARGS, modes=(mode,), order=2)


def api_sin_only_here(x):
    return np.sum(np.sin(x) * x)


def api_sin_only_here_2(x):
    return np.sum(np.sin(x) * x)


def test_check_grads_api_fails_on_wrong_sin_rule(monkeypatch):
    # functions used only here, so no cached derivative of them predates the patch
    row = TABLE.get("sin")
    monkeypatch.setattr(row, "jvp", _wrong_sin_jvp)
    monkeypatch.setattr(row, "vjp", _wrong_sin_vjp)
    with pytest.raises(AssertionError):
        check_grads(api_sin_only_here, (X,), order=1)


def test_check_grads_api_wrong_vjp_alone_caught_by_dot_product(monkeypatch):
    monkeypatch.setattr(TABLE.get("sin"), "vjp", _wrong_sin_vjp)
    with pytest.raises(AssertionError, match="dot-product"):
        check_grads(api_sin_only_here_2, (X,), order=1)
