"""A call of a transformed function leaves no reference cycles behind: its result
arrays are freed as soon as the caller drops them, not when the garbage collector
next runs. (`pytree.unflatten` was a closure that called itself: a cycle holding
every call's results, so large gradients piled up between collections and were
page-faulted in again on each call.)"""
import gc
import weakref

import numpy as np
import pytest

import pullback as pb


def f(x, y):
    return np.sum(np.sin(x) * y), {"a": x * 2.0, "b": [y, x + y]}


def loss(x, y):
    return np.sum(np.sin(x) * y)


CALLS = {
    "jit": lambda b: pb.jit(f, backend=b),
    "grad": lambda b: pb.grad(loss, argnums=(0, 1), backend=b),
    "value_and_grad": lambda b: pb.value_and_grad(loss, backend=b),
    "jacobian": lambda b: pb.jacobian(lambda x, y: np.sin(x) * y, backend=b),
    "hessian": lambda b: pb.hessian(loss, backend=b),
    "vmap": lambda b: pb.vmap(lambda x, y: np.sin(x) * y, backend=b),
    "jvp": lambda b: _jvp(pb.jit(f, backend=b)),
    "vjp": lambda b: _vjp(pb.jit(loss, backend=b)),
}


def _jvp(g):
    return lambda x, y: pb.jvp(g, (x, y), (x, y))


def _vjp(g):
    return lambda x, y: pb.vjp(g, x, y)[1](1.0)


# hessian on numba compiles for ~5 s from a cold cache: slow (the others cover the call path)
CASES = [pytest.param(k, b, marks=pytest.mark.slow) if (k, b) == ("hessian", "numba") else (k, b)
         for k in sorted(CALLS) for b in ("interp", "pysource", "numba")]


@pytest.mark.parametrize("kind, backend", CASES)
def test_results_are_freed_without_the_collector(kind, backend):
    if backend == "numba":
        pytest.importorskip("numba")
    fn = CALLS[kind](backend)
    x, y = np.linspace(0.0, 1.0, 5), np.linspace(1.0, 2.0, 5)
    fn(x, y)                       # staging and compiling may make cycles: not counted
    # young generations only: with the collector off, everything the calls below
    # make stays in generation 0, where a cycle they make is found; a full
    # collection of the suite's heap took about 2 s per test
    gc.collect(0)
    gc.disable()
    try:
        out = fn(x, y)
        leaves = [v for v in _leaves(out) if isinstance(v, np.ndarray) and v is not x and v is not y]
        assert leaves, out
        refs = [weakref.ref(v) for v in leaves]
        del out, leaves
        assert [r() is None for r in refs] == [True] * len(refs)
        for _ in range(3):
            fn(x, y)
        assert gc.collect(0) == 0
    finally:
        gc.enable()


def _leaves(x):
    if isinstance(x, dict):
        return [v for k in x for v in _leaves(x[k])]
    if isinstance(x, (list, tuple)):
        return [v for e in x for v in _leaves(e)]
    return [x]
