"""The cheap-gradient invariant for `pb.map` (issue 12, §2 and "What I will check").

Work is counted on the interpreter (`interp.OpCount`: the primitive rows'
cost rules, and statements executed), never timed. For a map of width m that
reads one element of a free array of size n, the reverse sweep may touch the
whole adjoint of that array once (it starts at zero and is returned dense),
but per iteration only O(1): the n-dependent part of the gradient's work,
W(n2, m) - W(n1, m), must not grow with m. A dense per-iteration adjoint
would make it grow like m * n. For nested maps the gradient/primal ratio must
stay bounded as the sizes grow.
"""
from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.backends import interp
from pullback.checkpointing import Store
from pullback.frontend import stage
from pullback.passes.vjp import vjp_prog
from pullback.pytree import flatten


def counts(f, args):
    """(primal OpCount, gradient OpCount) on the interpreter, cotangent 1 on each output."""
    st = stage(f, args)
    leaves, _ = flatten(tuple(args))
    p_ops = interp.OpCount()
    interp.run(st.prog, *leaves, ops=p_ops)
    vprog, name = vjp_prog(st.prog, checkpoint=Store())
    g_ops = interp.OpCount()
    interp.run(vprog, *leaves, *[1.0 for _ in st.prog.main.ret_types], fname=name, ops=g_ops)
    return p_ops, g_ops


def gather_args(n, m, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=n), rng.integers(0, n, size=m), rng.normal(size=m)


def gather(big, idx, vals):
    return np.sum(pb.map(lambda j, v: np.sin(big[j]) * v + big[j], idx, vals))


def gather_iota(big, idx, vals):
    return np.sum(pb.map(lambda i: np.cos(big[idx[i]]) * vals[i], np.arange(vals.shape[0])))


def gather_nested(big, idx, vals):
    rows = pb.map(lambda j, v: pb.map(lambda k: big[(j + k) % big.shape[0]] * v, np.arange(3)), idx, vals)
    return np.sum(rows * rows)


def _read(a, j):
    return a[j]


def gather_through_helper(big, idx, vals):
    return np.sum(pb.map(lambda j, v: np.sin(_read(big, j)) * v, idx, vals))


def dense_read(big, idx, vals):
    # reads the whole array in every iteration: O(n) per iteration in the primal too
    return np.sum(pb.map(lambda j, v: np.sum(np.sin(big)) * v + big[j], idx, vals))


def n_part(fn, n1, n2, m):
    """The n-dependent part of the gradient's work at width m, and the primal's."""
    p1, g1 = counts(fn, gather_args(n1, m))
    p2, g2 = counts(fn, gather_args(n2, m))
    return g2.work - g1.work, p2.work - p1.work, (p1, g1)


@pytest.mark.parametrize("fn", [gather, gather_iota, gather_nested, gather_through_helper],
                         ids=lambda f: f.__name__)
def test_reading_one_element_costs_o1_per_iteration(fn):
    n1, n2 = 50, 2000
    d_small, dp_small, (p, g) = n_part(fn, n1, n2, 4)
    d_large, dp_large, _ = n_part(fn, n1, n2, 32)
    assert dp_small == dp_large == 0, "the primal does not depend on the free array's size"
    # the adjoint of `big` is made once (zeros, returned): about n2 - n1 elements, whatever m is
    assert d_large <= 1.05 * d_small + 100, (fn.__name__, d_small, d_large)
    assert d_small <= 4 * (n2 - n1), (fn.__name__, d_small)
    # and the rest of the gradient is a constant times the primal
    assert g.stmts <= 12 * p.stmts, (fn.__name__, p.stmts, g.stmts)


def test_the_count_catches_a_dense_read_per_iteration():
    """A lambda that reads all of `big` in each iteration has an O(n) adjoint per
    iteration, so the test above would fail on it: the n-dependent part grows with m."""
    d_small, _, _ = n_part(dense_read, 50, 2000, 4)
    d_large, _, _ = n_part(dense_read, 50, 2000, 32)
    assert d_large > 4 * d_small, (d_small, d_large)


def matmul_maps(A, B):
    return np.sum(np.sin(pb.map(lambda row: pb.map(lambda col: np.sum(row * col), B.T), A)))


def for_in_map(A, w):
    def g(r):
        s = 0.0
        for k in range(r.shape[0]):
            s = np.tanh(s * w[k] + r[k])
        return s
    return np.sum(pb.map(g, A))


def map_in_for(A, w):
    x = A[0]
    for k in range(A.shape[0]):
        x = pb.map(lambda a, b: np.tanh(a * b + w[0]), x, A[k])
    return np.sum(x)


def _ratio(fn, args):
    p, g = counts(fn, args)
    return g.work / p.work, g.stmts / p.stmts


@pytest.mark.parametrize("fn,make,bound", [
    (matmul_maps, lambda n: (np.random.default_rng(n).normal(size=(n, n)),
                             np.random.default_rng(n + 1).normal(size=(n, n))), 12),
    (for_in_map, lambda n: (np.random.default_rng(n).normal(size=(n, n)), np.random.default_rng(n + 1).normal(size=n)), 12),
    (map_in_for, lambda n: (np.random.default_rng(n).normal(size=(n, n)), np.random.default_rng(n + 1).normal(size=n)), 12),
], ids=["map_in_map_matmul", "for_in_map", "map_in_for"])
def test_gradient_to_primal_ratio_is_bounded(fn, make, bound):
    (w1, s1), (w2, s2) = _ratio(fn, make(6)), _ratio(fn, make(24))
    for r in (w1, s1, w2, s2):
        assert r <= bound, (fn.__name__, w1, s1, w2, s2)
    # not growing with the size (a few per cent of constant overhead amortised)
    assert w2 <= 1.15 * w1 + 0.5 and s2 <= 1.15 * s1 + 0.5, (fn.__name__, w1, s1, w2, s2)
