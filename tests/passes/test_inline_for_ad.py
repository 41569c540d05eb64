"""Inlining tiny transcendental helpers before reverse mode (passes/inline.py,
`inline_for_ad`, note [inline-for-ad]): the enclosing loop saves the helper's `exp`
instead of its vjp computing it again; other calls stay calls."""
from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.backends import interp
from pullback.frontend import stage
from pullback.ir.core import Apply
from pullback.ir.traverse import iter_lets
from pullback.passes.vjp import vjp_prog
from pullback.pytree import flatten


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def rnn(x, w, n):
    h = x
    for _ in range(n):
        h = sigmoid(w * h + x)
    return np.sum(h)


def cube(v):
    return v * v * v                      # no transcendental: stays a call


def poly(x, w, n):
    h = x
    for _ in range(n):
        h = cube(w * h) + x
    return np.sum(h)


def looped_sigmoid(v):
    for _ in range(2):                    # not straight-line: stays a call
        v = 1.0 / (1.0 + np.exp(-v))
    return v


def rnn_looped(x, w, n):
    h = x
    for _ in range(n):
        h = looped_sigmoid(w * h + x)
    return np.sum(h)


@pb.custom_vjp
def sig_rule(v):
    return 1.0 / (1.0 + np.exp(-v))


def _sig_fwd(v):
    s = sig_rule(v)
    return s, s


def _sig_bwd(s, g):
    return (2.0 * g * s * (1.0 - s),)     # twice the true derivative: the rule must be called


sig_rule.defvjp(_sig_fwd, _sig_bwd)


def rnn_rule(x, w, n):
    h = x
    for _ in range(n):
        h = sig_rule(w * h + x)
    return np.sum(h)


sig_ck = pb.checkpoint(sigmoid)


def rnn_ck(x, w, n):
    h = x
    for _ in range(n):
        h = sig_ck(w * h + x)
    return np.sum(h)


class _ExpCount(interp.OpCount):
    """Also counts the elements `exp` computes."""

    def __init__(self):
        super().__init__()
        self.exp = 0

    def prim(self, row, e, outs, loc=None) -> None:
        super().prim(row, e, outs, loc)
        if e.op == "exp":
            self.exp += int(np.prod(outs[0].type.shape))


def _exp_counts(f, args):
    """(exp elements of the primal, of the gradient) on the interpreter."""
    st = stage(f, args)
    leaves, _ = flatten(tuple(args))
    p = _ExpCount()
    interp.run(st.prog, *leaves, ops=p)
    vprog, name = vjp_prog(st.prog)
    g = _ExpCount()
    interp.run(vprog, *leaves, 1.0, fname=name, ops=g)
    return p.exp, g.exp, vprog


def _calls(prog):
    return {st.exp.func for f in prog.funcs for st in iter_lets(f.body) if isinstance(st.exp, Apply)}


def _fd(f, x, w, n, eps=1e-6):
    out = np.zeros_like(x)
    for i in range(x.size):
        d = np.zeros_like(x)
        d[i] = eps
        out[i] = (f(x + d, w, n) - f(x - d, w, n)) / (2 * eps)
    return out


@pytest.mark.parametrize("n", [4, 32])
def test_the_helpers_exp_is_saved_not_recomputed(n):
    """Cheap-gradient check at two sizes: the gradient evaluates exp as often as
    the primal (the call's vjp evaluated it again per iteration before)."""
    x, w = np.linspace(-0.5, 0.5, 5), np.linspace(0.3, 0.9, 5)
    p, g, vprog = _exp_counts(rnn, (x, w, np.int64(n)))
    assert p == 5 * n and g == p, (p, g)
    assert not any(c.startswith("sigmoid") for c in _calls(vprog))


@pytest.mark.parametrize("backend", ["interp", "numba"])
def test_inlined_helper_gradients_are_right(backend):
    x, w = np.linspace(-0.5, 0.5, 5), np.linspace(0.3, 0.9, 5)
    g = pb.grad(rnn, backend=backend)(x, w, 6)
    np.testing.assert_allclose(g, _fd(rnn, x, w, 6), rtol=1e-6, atol=1e-9)


def test_inlined_statements_keep_the_helpers_lines():
    x, w = np.linspace(-0.5, 0.5, 5), np.linspace(0.3, 0.9, 5)
    vprog = _exp_counts(rnn, (x, w, np.int64(3)))[2]
    line = sigmoid.__code__.co_firstlineno + 1
    locs = {(st.loc.file, st.loc.line) for f in vprog.funcs for st in iter_lets(f.body)
            if st.exp.__class__.__name__ == "Prim" and st.exp.op == "exp" and st.loc is not None}
    assert locs and all(ln == line and fl.endswith("test_inline_for_ad.py") for fl, ln in locs), locs


@pytest.mark.parametrize("f, helper", [(poly, "cube"), (rnn_looped, "looped_sigmoid")])
def test_other_helpers_stay_calls(f, helper):
    x, w = np.linspace(-0.5, 0.5, 5), np.linspace(0.3, 0.9, 5)
    vprog = _exp_counts(f, (x, w, np.int64(3)))[2]
    assert any(c.startswith(helper) and c != helper for c in _calls(vprog))   # its vjp is called
    np.testing.assert_allclose(pb.grad(f, backend="interp")(x, w, 3), _fd(f, x, w, 3), rtol=1e-6, atol=1e-9)


def test_custom_rules_and_checkpoints_are_not_inlined():
    x, w = np.linspace(-0.5, 0.5, 5), np.linspace(0.3, 0.9, 5)
    g_rule = pb.grad(rnn_rule, backend="interp")(x, w, 1)
    g_true = pb.grad(rnn, backend="interp")(x, w, 1)
    np.testing.assert_allclose(g_rule, 2.0 * g_true, rtol=1e-12)          # the doubled rule ran
    g_ck = pb.grad(rnn_ck, backend="interp")(x, w, 5)
    np.testing.assert_allclose(g_ck, pb.grad(rnn, backend="interp")(x, w, 5), rtol=1e-12)
    vprog = _exp_counts(rnn_ck, (x, w, np.int64(5)))[2]
    assert any(c.startswith("sigmoid") for c in _calls(vprog))            # the checkpoint stays a call
