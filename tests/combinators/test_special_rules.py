"""The combinators' special rules fire on what the operator computes, whatever
its spelling: the staged IR and the derivative source use the special
primitive (a sum, a prefix sum, an arg-extremum, a scatter-add) and no loop."""
import operator

import numpy as np
import pytest

import pullback as pb
from pullback.ir.core import Loop, Map
from pullback.ir.traverse import iter_lets

X = np.array([0.3, -1.2, 2.0, 0.7, 1.1])
IDX = np.array([0, 2, 2, 5, -1])


def _ops(fn, *args, vectorized=False):
    """The primitives of `fn`'s staged program (after the backends' vectorisation,
    where a `+`-hist's map of adds becomes one scatter-add) and whether it loops."""
    from pullback.passes.vectorize import vectorize

    prog = pb.jit(fn, backend="interp").staged(*args)
    prog = getattr(prog, "prog", prog)
    prog = vectorize(prog) if vectorized else prog
    lets = [st for f in prog.funcs for st in iter_lets(f.body)]
    return ({st.exp.op for st in lets if hasattr(st.exp, "op")},
            any(isinstance(st.exp, (Loop, Map)) for st in lets))


ADDS = [pb.add, operator.add, np.add, lambda a, b: b + a]


@pytest.mark.parametrize("op", ADDS, ids=["pb.add", "operator.add", "np.add", "lambda"])
def test_add_spellings(op):
    ops, loops = _ops(lambda x: pb.reduce(op, 0.0, x) + np.sum(pb.associative_scan(op, 0.0, x)), X)
    assert {"sum", "cumsum"} <= ops and not loops
    ops, loops = _ops(lambda x: np.sum(pb.hist(op, 0.0, 4, IDX, x)), X, vectorized=True)
    assert "take_add" in ops and not loops


@pytest.mark.parametrize("op,prim", [(pb.max, "argmax"), (max, "argmax"), (np.maximum, "argmax"),
                                     (pb.min, "argmin"), (np.minimum, "argmin"), (pb.mul, "prod"),
                                     (operator.mul, "prod")])
def test_reduce_spellings(op, prim):
    ops, loops = _ops(lambda x: pb.reduce(op, 1.0, x), X)
    assert prim in ops and not loops


def test_derivative_source_shows_the_rules():
    def f(x):
        return pb.reduce(pb.max, -np.inf, x) + np.sum(np.sin(pb.associative_scan(pb.add, 0.0, x)))
    src = pb.derivative_source(f, X)
    assert "argmax" in src and "np.cumsum" in src and "for " not in src


def test_general_operator_is_a_loop():
    ops, loops = _ops(lambda x: pb.reduce(lambda a, b: a + b * b, 0.0, x), X)
    assert loops


def test_scan_add_adjoint_is_the_suffix_sum():
    g = pb.grad(lambda x: np.sum(pb.associative_scan(pb.add, 0.0, x) * np.arange(5.0)), backend="interp")(X)
    np.testing.assert_allclose(g, np.cumsum(np.arange(5.0)[::-1])[::-1])


def _work(f, x):
    from pullback.backends import interp
    from pullback.frontend import stage
    from pullback.passes.vjp import vjp_prog

    st = stage(f, (x,))
    p, g = interp.OpCount(), interp.OpCount()
    interp.run(st.prog, x, ops=p)
    vprog, name = vjp_prog(st.prog)
    interp.run(vprog, x, 1.0, fname=name, ops=g)
    return p.work, g.work


def _scan_loss(x):
    return np.sum(np.sin(pb.associative_scan(pb.add, 0.0, x)))


def test_scan_add_cost_is_linear():
    (p1, g1), (p2, g2) = _work(_scan_loss, np.linspace(0.1, 1.0, 100)), _work(_scan_loss, np.linspace(0.1, 1.0, 1000))
    assert p2 >= 9 * p1                   # the counts do grow with n
    assert g2 / p2 <= 1.1 * (g1 / p1)     # the gradient stays a constant times the primal
    assert g1 / p1 <= 6


def _sequences(x, y):
    a, b = pb.reduce(lambda p, q: (p[0] + q[0], p[1] * q[1]), (x[0], y[0]), x, y)   # a tuple ne
    return a + b + pb.reduce(pb.add, 0.0, [x[0], x[1] * 2]) + np.sum(pb.map(lambda ab: ab[0] * ab[1], [x, y]))


def test_sequences_are_pytrees_or_arrays():
    """A tuple neutral element and a list passed to map stay pytrees; a list of
    numbers passed as reduce's array becomes an array, as in NumPy."""
    x, y = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    want = _sequences(x, y)
    for backend in ("interp", "pysource"):
        assert pb.jit(_sequences, backend=backend)(x, y) == pytest.approx(want)
    g = pb.grad(_sequences, argnums=(0, 1), backend="interp")(x, y)
    eps = 1e-6
    for k, arg in enumerate((x, y)):
        for i in range(3):
            d = np.zeros(3)
            d[i] = eps
            args = [x, y]
            args[k] = arg + d
            hi = _sequences(*args)
            args[k] = arg - d
            assert g[k][i] == pytest.approx((hi - _sequences(*args)) / (2 * eps), rel=1e-6, abs=1e-7)


def _probe(x, bins):
    return np.sum(pb.map(lambda i: np.sin(x[i]) * bins[i * 3], np.arange(4)))


def test_unused_adjoint_accumulators_are_dead_code():
    """grad with respect to x alone: the reverse map keeps no accumulator for the
    large `bins` (dead code elimination of a map's unused results and accumulators)."""
    from pullback.ir.traverse import dce

    x, bins = np.linspace(0.1, 0.5, 5), np.linspace(0.0, 1.0, 1000)
    st = pb.grad(_probe)._jit.staged(x, bins)
    maps = [s.exp for f in st.prog.funcs for s in iter_lets(dce(f.body)) if isinstance(s.exp, Map)]
    assert maps and all(a.type.shape != (1000,) for m in maps for a in m.accs)
    np.testing.assert_allclose(pb.grad(_probe, backend="interp")(x, bins),
                               [np.cos(x[i]) * bins[3 * i] for i in range(4)] + [0.0])
