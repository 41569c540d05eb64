"""`pb.reduce`, `pb.associative_scan`, `pb.hist` and `pb.scatter` nested in other
code and in each other, to second order, and random programs (Hypothesis)
against their unrolled Python loops (issue 12, §4; note [reducers]). The
plain references and shared inputs live in `test_reducers`."""
from __future__ import annotations

import operator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hst

import pullback as pb
from pullback.testing import check_grads

from .test_reducers import INF, M83, X8, fold, lin

# -- nesting, closures, second order ------------------------------------------------------------------

def op_reads_a_traced_value(x, w):
    return pb.reduce(lambda a, b: a + w * b * b, 0.0, x)


def reducers_in_a_loop(X):
    s = 0.0
    for i in range(X.shape[0]):
        s = s + pb.reduce(pb.max, -INF, X[i]) * pb.reduce(pb.mul, 1.0, X[i])
    return s


def op_with_an_if(x):
    def op(a, b):
        if a > b:
            return a - 0.1 * b
        return b
    return pb.reduce(op, -10.0, x)


def op_with_a_loop(x):
    def op(a, b):
        for _ in range(3):
            a = a + 0.1 * b
        return a
    return pb.reduce(op, 0.0, x)


def reduce_in_scan(X):
    return pb.associative_scan(pb.add, 0.0, pb.map(lambda r: pb.reduce(pb.max, -INF, r), X))


def reduce_in_vmap(X):
    return pb.vmap(lambda r: pb.reduce(pb.mul, 1.0, r))(X)


def _fold_if(x):
    acc = -10.0
    for b in x:
        acc = acc - 0.1 * b if acc > b else b
    return acc


NESTED = {
    "op_reads_a_traced_value": (op_reads_a_traced_value, (X8, 0.7), lambda x, w: fold(lambda a, b: a + w * b * b, 0.0, x)),
    "reducers_in_a_loop": (reducers_in_a_loop, (M83,), lambda X: sum(max(r) * np.prod(r) for r in X)),
    "op_with_an_if": (op_with_an_if, (X8,), _fold_if),
    "op_with_a_loop": (op_with_a_loop, (X8,), lambda x: fold(lambda a, b: a + 0.3 * b, 0.0, x)),
    "reduce_in_scan": (reduce_in_scan, (M83,), lambda X: np.cumsum(X.max(axis=1))),
    "reduce_in_vmap": (reduce_in_vmap, (M83,), lambda X: np.prod(X, axis=1)),
}


@pytest.mark.parametrize("backend", ["interp", "pysource"])
@pytest.mark.parametrize("name", sorted(NESTED))
def test_nesting_to_second_order(name, backend):
    f, args, ref = NESTED[name]
    np.testing.assert_allclose(pb.jit(f, backend=backend)(*args), ref(*args), rtol=1e-12, atol=1e-12)
    check_grads(f, args, order=2, backend=backend, rng=np.random.default_rng(2), err_msg=name)


def test_vmap_of_grad_and_grad_of_vmap():
    X = M83.T.copy()
    want = np.zeros_like(X)
    want[np.arange(3), np.argmax(X, axis=1)] = 1.0
    g = pb.vmap(pb.grad(lambda r: pb.reduce(pb.max, -INF, r)))
    np.testing.assert_array_equal(g(X), want)
    h = pb.grad(lambda X: np.sum(pb.vmap(lambda r: pb.reduce(pb.max, -INF, r))(X)))
    np.testing.assert_array_equal(h(X), want)


def test_integer_arrays():
    k = np.array([3, 9, -2, 9])
    assert pb.jit(lambda k: pb.reduce(pb.max, -100, k), backend="interp")(k) == 9
    np.testing.assert_array_equal(pb.jit(lambda k: pb.associative_scan(pb.add, 0, k), backend="pysource")(k),
                                  np.cumsum(k))
    np.testing.assert_array_equal(pb.jit(lambda k: pb.hist(pb.add, 0, 3, np.array([0, 2, 2, 5]), k),
                                         backend="interp")(k), [3, 0, 7])


# -- random programs (Hypothesis): the combinators against their unrolled loops -----------------------

OPS = {"add": (pb.add, 0.0), "mul": (operator.mul, 1.0), "max": (max, -INF), "min": (np.minimum, INF),
       "lin": (lin, 0.0)}


def _unrolled(kind, op, ne, idx, nb):
    """The combinator as a Python loop over static indices (pullback stages it unrolled)."""
    def reduce_(x):
        return fold(op, ne, [x[j] for j in range(x.shape[0])]) + 0.0 * np.sum(x)

    def scan_(x):
        out, acc = [], ne
        for j in range(x.shape[0]):
            acc = op(acc, x[j])
            out.append(acc)
        return np.sum(np.tanh(np.array(out))) if out else 0.0 * np.sum(x)

    def hist_(x):
        bins = [ne + 0.0 * x[0] for _ in range(nb)] if x.shape[0] else []
        for j in range(x.shape[0]):
            if 0 <= idx[j] < nb:
                bins[idx[j]] = op(bins[idx[j]], x[j])
        return sum(np.tanh(b) for b in bins) + 0.0 * np.sum(x)

    return {"reduce": reduce_, "scan": scan_, "hist": hist_}[kind]


def _staged(kind, op, ne, idx, nb):
    return {"reduce": lambda x: pb.reduce(op, ne, x) + 0.0 * np.sum(x),
            "scan": lambda x: np.sum(np.tanh(pb.associative_scan(op, ne, x))),
            "hist": lambda x: np.sum(np.tanh(pb.hist(op, ne, nb, idx, x))) + 0.0 * np.sum(x)}[kind]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hst.integers(0, 2**32 - 1), hst.integers(1, 6), hst.sampled_from(sorted(OPS)),
       hst.sampled_from(["reduce", "scan", "hist"]), hst.sampled_from(["interp", "pysource"]))
def test_random_against_unrolled(seed, n, opname, kind, backend):
    rng = np.random.default_rng(seed)
    op, ne = OPS[opname]
    x = rng.uniform(-1.5, 1.5, n)
    if opname == "mul" and rng.random() < 0.3:
        x[rng.integers(n)] = 0.0       # zeros in products
    nb = int(rng.integers(1, 5))
    idx = rng.integers(-2, nb + 2, n)
    f, ref = _staged(kind, op, ne, idx, nb), _unrolled(kind, op, ne, idx, nb)
    want = pb.jit(ref, backend="interp")(x)
    assert np.isfinite(want)    # tanh of a bin left at +-inf is finite, and its derivative 0
    np.testing.assert_allclose(pb.jit(f, backend=backend)(x), want, rtol=1e-10)
    np.testing.assert_allclose(pb.grad(f, backend=backend)(x), pb.grad(ref, backend="interp")(x),
                               rtol=1e-9, atol=1e-12)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hst.integers(0, 2**32 - 1), hst.integers(1, 8), hst.integers(0, 6))
def test_random_scatter(seed, n, m):
    rng = np.random.default_rng(seed)
    idx = (rng.permutation(n + 6)[:m] - 3).astype(np.int64)    # unique; some out of range, some negative
    d, v = rng.normal(size=n), rng.normal(size=m)

    def f(d, v):
        return np.sum(np.sin(pb.scatter(d, idx, v * v)))

    def ref(d, v):
        out = [d[i] for i in range(n)]
        for j in range(m):
            if 0 <= idx[j] < n:
                out[idx[j]] = v[j] * v[j]
        return sum(np.sin(o) for o in out)

    np.testing.assert_allclose(pb.jit(f, backend="interp")(d, v), pb.jit(ref, backend="interp")(d, v))
    for a, b in zip(pb.grad(f, argnums=(0, 1), backend="pysource")(d, v),
                    pb.grad(ref, argnums=(0, 1), backend="interp")(d, v)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-14)
