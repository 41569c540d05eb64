"""`pb.jacobian(f, sparsity=...)`: sparse Jacobians by colouring (note [sparse-jacobian]).

Each sparse Jacobian is checked against the dense one; detected patterns
against the nonzeros of dense Jacobians at random points (a superset always,
equal on the simple programs); the cost by counting the jvp/vjp calls the
interpreter executes at two sizes.
"""
from __future__ import annotations

import inspect
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import pullback as pb
from pullback.backends import interp
from pullback.sparsity import colour

rng = np.random.default_rng(0)


# -- programs -----------------------------------------------------------------

def banded(x):
    y = x * x
    return np.concatenate([y[1:] - 2.0 * y[:-1] + np.sin(x[1:]), x[:1] * 3.0])


def tridiag(x):
    mid = x[1:-1] * x[2:] - x[:-2] * 2.0 + np.exp(x[1:-1])
    return np.concatenate([x[:1] ** 2, mid, np.cos(x[-1:])])


def block(x):
    r = x.reshape(-1, 3)
    return (r * np.sum(r * r, axis=1, keepdims=True)).ravel()


def arrowhead(x):
    head = np.reshape(np.sum(x * x), (1,))
    return np.concatenate([head, x[1:] * x[0] + np.sin(x[1:])])


CAM = np.array([0, 1, 2, 0, 1, 2, 0])
PT = np.array([0, 1, 2, 3, 3, 4, 4])


def ba_like(params):
    """Per-observation residuals of 3 camera and 2 point parameters (bundle-adjustment-like)."""
    cams = params[:9].reshape(3, 3)
    pts = params[9:].reshape(5, 2)
    c = cams[CAM]
    p = pts[PT]
    r0 = c[:, 0] * p[:, 0] + c[:, 1] - p[:, 1] * c[:, 2]
    r1 = c[:, 2] * p[:, 1] ** 2 - np.sin(c[:, 0])
    return np.stack([r0, r1], axis=1).ravel()


def branchy(x):
    if np.sum(x) > 0:
        y = np.sin(x[1:]) * x[:-1]
    else:
        y = x[1:] - x[:-1]
    return y


def loopy(x):
    n = x.shape[0]
    y = np.zeros(n)
    for i in range(n):
        if i == 0:
            y[i] = x[i] * 2.0
        else:
            y[i] = x[i] * x[i - 1]
    return y


def whiley(x):
    y = x
    k = 0
    while np.sum(y) > -1e9 and k < 3:
        y = np.sin(y) + 0.5 * y
        k = k + 1
    return y


def _cell(p, q):
    return np.array([p[0] * q[0] + p[1], p[1] * q[1], np.sin(p[2]) + q[0]])


def mapped(x):
    P = x.reshape(-1, 3)
    return pb.map(_cell, P, np.cos(P)).ravel()


def vmapped(x):
    return pb.vmap(lambda p: p * np.sum(p))(x.reshape(-1, 2)).ravel()


def gather_dyn(x, idx):
    return (x.reshape(4, 2)[idx] * 2.0).ravel()


def matvec(x):
    A = np.array([[1.0, 0.0, 0.0, 2.0], [0.0, 3.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    return A @ x


def with_helper(x):
    return _helper(x[1:], x[:-1])


def _helper(a, b):
    return a * b + np.tanh(a)


PROGRAMS = {   # name: (function, args maker, detected pattern exactly tight)
    "banded": (banded, lambda: (rng.normal(size=9),), True),
    "tridiag": (tridiag, lambda: (rng.normal(size=8),), True),
    "block": (block, lambda: (rng.normal(size=12),), True),
    "arrowhead": (arrowhead, lambda: (rng.normal(size=7),), True),
    "ba_like": (ba_like, lambda: (rng.normal(size=19),), True),
    "branchy": (branchy, lambda: (rng.normal(size=8),), True),
    "loopy": (loopy, lambda: (rng.normal(size=8),), True),
    "whiley": (whiley, lambda: (rng.normal(size=6),), True),
    "mapped": (mapped, lambda: (rng.normal(size=12),), True),
    "vmapped": (vmapped, lambda: (rng.normal(size=10),), True),
    "matvec": (matvec, lambda: (rng.normal(size=4),), True),
    "with_helper": (with_helper, lambda: (rng.normal(size=7),), True),
    "gather_dyn": (gather_dyn, lambda: (rng.normal(size=8), np.array([0, 2, 1])), False),
}


def dense(f, args, mode="rev", backend="interp"):
    J = np.asarray(pb.jacobian(f, mode=mode, backend=backend)(*args))
    return J.reshape(-1, np.asarray(args[0]).size)


# -- agreement with the dense Jacobian ----------------------------------------

@pytest.mark.parametrize("mode", ["fwd", "rev"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_equals_dense(name, mode):
    f, make, _ = PROGRAMS[name]
    args = make()
    J = pb.jacobian(f, mode=mode, sparsity="auto")(*args)
    assert isinstance(J, sp.csr_array) and J.ndim == 2
    np.testing.assert_allclose(J.toarray(), dense(f, args), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backend", ["interp", "pysource", "numba"])
@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_every_backend(backend, mode):
    for f, args in ((banded, (rng.normal(size=9),)), (ba_like, (rng.normal(size=19),))):
        J = pb.jacobian(f, mode=mode, backend=backend, sparsity="auto")(*args)
        np.testing.assert_allclose(J.toarray(), dense(f, args), rtol=1e-12, atol=1e-12)


def test_jacrev_jacfwd_and_argnums_tuple():
    def f(x, y):
        return x[1:] * y[:-1] + y[1:]

    x, y = rng.normal(size=5), rng.normal(size=5)
    Jx, Jy = pb.jacobian(f, argnums=(0, 1), sparsity="auto")(x, y)
    np.testing.assert_allclose(Jx.toarray(), pb.jacobian(f, 0)(x, y))
    np.testing.assert_allclose(Jy.toarray(), pb.jacobian(f, 1)(x, y))
    np.testing.assert_allclose(pb.jacfwd(f, 1, sparsity="auto")(x, y).toarray(), Jy.toarray())
    np.testing.assert_allclose(pb.jacrev(f, 1, sparsity="auto")(x, y).toarray(), Jy.toarray())


def test_matrix_argument_and_output_are_flattened_in_c_order():
    def f(X):
        return X[:, 1:] * X[:, :-1]

    X = rng.normal(size=(3, 4))
    J = pb.jacobian(f, sparsity="auto")(X)
    assert J.shape == (9, 12)
    np.testing.assert_allclose(J.toarray(), pb.jacobian(f)(X).reshape(9, 12))


# -- detected patterns --------------------------------------------------------

@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_auto_pattern_is_a_superset_and_tight_on_simple_programs(name):
    f, make, tight = PROGRAMS[name]
    sj = pb.jacobian(f, sparsity="auto")
    args = make()
    P = sj.pattern(*args).toarray()
    nonzero = np.zeros_like(P)
    for _ in range(3):   # nonzeros at several random points, the same argument shapes
        pts = make()
        nonzero |= dense(f, pts) != 0
        assert not np.any((dense(f, pts) != 0) & ~P), "the detected pattern misses a nonzero"
    if tight:
        np.testing.assert_array_equal(P, nonzero)
    else:
        assert P.sum() > nonzero.sum()


def test_data_dependent_gather_is_whole_array():
    P = pb.jacobian(gather_dyn, sparsity="auto").pattern(rng.normal(size=8), np.array([0, 2, 1]))
    assert P.toarray().all()


def test_pattern_of_a_loop_over_its_budget_is_conservative():
    from pullback.sparsity import detect

    x = rng.normal(size=8)
    old = detect.UNROLL
    try:
        detect.UNROLL = 5    # too small to unroll: a fixed point with the counter unknown
        st = pb.jit(loopy).staged(x)
        P = detect.detect(st.prog, 0).toarray()
    finally:
        detect.UNROLL = old
    assert not np.any((dense(loopy, (x,)) != 0) & ~P)
    assert P.all()


def test_detection_runs_once_per_signature(monkeypatch):
    from pullback.sparsity import detect

    calls = []
    real = detect.detect
    monkeypatch.setattr(detect, "detect", lambda *a: calls.append(1) or real(*a))

    def f(x):
        return x[1:] * x[:-1]

    sj = pb.jacobian(f, sparsity="auto")
    sj(rng.normal(size=5))
    sj(rng.normal(size=5))
    assert pb.jacobian(f, sparsity="auto") is sj and len(calls) == 1
    pb.jacobian(f, mode="fwd", sparsity="auto")(rng.normal(size=5))   # kept with the staged program
    assert len(calls) == 1
    sj(rng.normal(size=6))
    assert len(calls) == 2


# -- given patterns -----------------------------------------------------------

@pytest.mark.parametrize("kind", ["numpy", "csr", "coo_matrix", "int"])
def test_given_pattern(kind):
    n = 9
    x = rng.normal(size=n)
    Jd = dense(banded, (x,))
    P = np.zeros((n, n), dtype=bool)
    P[:-1, :-1] |= np.eye(n - 1, dtype=bool)
    P[:-1, 1:] |= np.eye(n - 1, dtype=bool)
    P[-1, 0] = True
    P[2, 7] = True   # an entry that is zero: kept, as an explicit zero
    given = {"numpy": P, "csr": sp.csr_array(P), "coo_matrix": sp.coo_matrix(P), "int": P.astype(int)}[kind]
    for mode in ("fwd", "rev"):
        J = pb.jacobian(banded, mode=mode, sparsity=given)(x)
        np.testing.assert_allclose(J.toarray(), Jd)
        assert J.nnz == P.sum() and J[2, 7] == 0


# -- colouring ----------------------------------------------------------------

def test_colourings_are_valid_distance2_colourings():
    for _ in range(20):
        P = sp.random_array((30, 25), density=0.1, rng=rng, format="csr") != 0
        P = sp.csr_array(P)
        assert colour.check(P, colour.colour_columns(P), axis=1)
        assert colour.check(P, colour.colour_rows(P), axis=0)


def test_banded_and_block_colour_counts():
    x = rng.normal(size=30)
    assert pb.jacobian(tridiag, mode="fwd", sparsity="auto").colours(x).max() + 1 == 3
    assert pb.jacobian(block, mode="rev", sparsity="auto").colours(x).max() + 1 == 3


# -- cost ---------------------------------------------------------------------

def _derived_calls(monkeypatch, f, mode, x):
    counts = {}
    real = interp.Interpreter.call

    def call(self, fname, args):
        counts[fname] = counts.get(fname, 0) + 1
        return real(self, fname, args)

    monkeypatch.setattr(interp.Interpreter, "call", call)
    sj = pb.jacobian(f, mode=mode, backend="interp", sparsity="auto")
    sj(x)
    monkeypatch.setattr(interp.Interpreter, "call", real)
    derived = {k: v for k, v in counts.items() if k.endswith(("_jvp", "_vjp"))}
    return sum(derived.values()), int(sj.colours(x).max()) + 1


@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_cost_is_one_jvp_or_vjp_per_colour_not_per_element(monkeypatch, mode):
    small = _derived_calls(monkeypatch, tridiag, mode, rng.normal(size=100))
    large = _derived_calls(monkeypatch, tridiag, mode, rng.normal(size=1000))
    assert small == large == (3, 3)
    ops = []
    for n in (100, 1000):   # the work grows like n (each jvp is O(n)), not like n^2
        st = pb.jacobian(tridiag, mode=mode, backend="interp", sparsity="auto")
        x = rng.normal(size=n)
        p = st.plan(x)
        prog = st._compressed._jit.staged(x, p.colours, p.ids).prog
        count = interp.OpCount()
        interp.run(prog, x, p.colours, p.ids, ops=count)
        ops.append(count.work)
    assert ops[1] < 20 * ops[0]


# -- errors -------------------------------------------------------------------

def _line():
    return inspect.currentframe().f_back.f_lineno


def test_error_bad_pattern_shape_names_the_call():
    sj = pb.jacobian(banded, sparsity=np.ones((3, 4), dtype=bool))
    with pytest.raises(pb.PullbackError) as ei:
        line = _line(); sj(np.ones(9))
    e = ei.value
    assert "has shape (3, 4)" in e.msg and "(9, 9)" in e.msg
    assert e.loc.file == __file__ and e.loc.line == line


@pytest.mark.parametrize("bad, words", [("dense", "not a pattern"), ([[True]], "got [[True]]"),
                                        (np.ones(3, dtype=bool), "2-D boolean array"), (3, "sparsity must be")])
def test_error_bad_pattern_type_names_the_line(bad, words):
    with pytest.raises(pb.PullbackError) as ei:
        line = _line(); pb.jacobian(banded, sparsity=bad)
    assert words in ei.value.msg
    assert ei.value.loc.file == __file__ and ei.value.loc.line == line


def _uses_sparse_inside(x):
    J = pb.jacobian(banded, sparsity="auto")(x)
    return J


def test_error_staged_use_names_the_line():
    line = inspect.getsourcelines(_uses_sparse_inside)[1] + 1
    for t in (pb.jit, lambda f: pb.grad(lambda x: np.sum(f(x)))):
        with pytest.raises(pb.PullbackError) as ei:
            t(_uses_sparse_inside)(np.ones(4))
        assert "cannot be called inside staged code" in ei.value.msg
        assert ei.value.loc.file == __file__ and ei.value.loc.line == line


def test_error_integer_argument_and_pytree_output():
    with pytest.raises(pb.PullbackError) as ei:
        line = _line(); pb.jacobian(banded, sparsity="auto")(np.arange(4))
    assert "float" in ei.value.msg and ei.value.loc.file == __file__

    def two(x):
        return x, x

    with pytest.raises(pb.PullbackError) as ei:
        line = _line(); pb.jacobian(two, sparsity="auto")(np.ones(3))
    assert "one float array" in ei.value.msg and ei.value.loc.line == line


def test_importing_pullback_does_not_import_the_sparsity_package():
    code = "import sys, pullback; print('pullback.sparsity' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


# -- conservative cases -------------------------------------------------------

def lin_solve(x):
    A = np.diag(x[:3]) + 3.0 * np.eye(3)
    return np.concatenate([np.linalg.solve(A, x[3:]), x[:2] * 2.0])


@pb.custom_jvp
def odd(x):
    return x * 0.0


@odd.defjvp
def _odd_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return x * 0.0, np.sum(t) + t


def custom(x):
    return odd(x[1:]) + x[:-1]


def nested_grad(x):
    g = pb.grad(lambda y: np.sum(np.sin(y) * y[0]))(x)
    return g * x


def loop_store(x):
    def inner(y):
        s = y[0]
        for i in range(3):
            s = np.sin(s) * y[i + 1]
        return s
    return pb.grad(inner)(x) + x


@pytest.mark.parametrize("f, n, tight", [(lin_solve, 6, False), (custom, 5, False),
                                         (nested_grad, 5, True), (loop_store, 5, True)],
                         ids=["solve", "custom_jvp", "nested_grad", "stores"])
def test_unknown_rows_custom_rules_and_nested_derivatives_are_conservative(f, n, tight):
    x = rng.normal(size=n)
    sj = pb.jacobian(f, mode="fwd", sparsity="auto")
    np.testing.assert_allclose(sj(x).toarray(), dense(f, (x,)), rtol=1e-10, atol=1e-12)
    P = sj.pattern(x).toarray()
    nz = dense(f, (x,)) != 0
    assert not np.any(nz & ~P)
    if tight:
        np.testing.assert_array_equal(P, nz)


def test_scalar_input_scalar_output_and_float32():
    def total(x):
        return np.sum(x * x)

    def scal(s):
        return np.array([s * 2.0, np.sin(s)])

    x = rng.normal(size=4)
    for mode in ("fwd", "rev"):
        J = pb.jacobian(total, mode=mode, sparsity="auto")(x)
        assert J.shape == (1, 4)
        np.testing.assert_allclose(J.toarray()[0], 2 * x)
        J = pb.jacobian(scal, mode=mode, sparsity="auto")(0.3)
        np.testing.assert_allclose(J.toarray()[:, 0], [2.0, np.cos(0.3)])
        x32 = x.astype(np.float32)
        J = pb.jacobian(banded, mode=mode, sparsity="auto")(x32)
        assert J.dtype == np.float32
        np.testing.assert_allclose(J.toarray(), dense(banded, (x,)), rtol=1e-5, atol=1e-5)


def block4(x):
    r = x.reshape(-1, 4)
    return (r * np.sum(r * r, axis=1, keepdims=True)).ravel()


def vblock4(x):
    return pb.vmap(lambda p: p * np.sum(p * p))(x.reshape(-1, 4)).ravel()


@pytest.mark.parametrize("f", [block4, vblock4, banded])
def test_scales_to_1e5_by_1e5(f):
    n = 100_000
    x = rng.normal(size=n)
    sj = pb.jacobian(f, mode="fwd", backend="pysource", sparsity="auto")
    P = sj.pattern(x)
    assert P.shape == (n, n) and P.nnz <= 4 * n
    assert int(sj.colours(x).max()) + 1 <= 4
    J = sj(x)
    # a leading corner against the dense Jacobian of the same function on the first 40 elements
    rows = 40 if f is not banded else 39
    np.testing.assert_allclose(J[:rows, :40].toarray(), dense(f, (x[:40],))[:rows], rtol=1e-12)


# -- random programs ----------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("gen", ["plain", "map"])
def test_hessian_patterns_of_random_programs(gen, seed, tmp_path):
    """The Jacobian of a random program's gradient (derivative code: stores, loops,
    maps with accumulators) against the dense one; the pattern covers its nonzeros."""
    from _progen import random_map_program, random_program

    gp = (random_program if gen == "plain" else random_map_program)(seed)
    if gp.arg_kinds[0] != "v":
        pytest.skip("the first argument is a scalar")
    f = gp.load(str(tmp_path))
    args = gp.make_args(np.random.default_rng(seed))
    g = pb.grad(f, 0)
    for mode in ("fwd", "rev"):
        sj = pb.jacobian(g, mode=mode, sparsity="auto")
        Jd = np.asarray(pb.jacobian(g, mode=mode)(*args))
        np.testing.assert_allclose(sj(*args).toarray(), Jd, rtol=1e-9, atol=1e-9)
        assert not np.any((Jd != 0) & ~sj.pattern(*args).toarray())
