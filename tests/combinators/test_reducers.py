"""`pb.reduce`, `pb.associative_scan`, `pb.hist` and `pb.scatter` against plain
Python loops (issue 12, §1-2; note [reducers]).

For every case and backend: the staged value equals the plain-loop reference
(`REF`, written without pullback); forward and reverse mode agree with
central differences (`pullback.testing.check_grads`); the eager functions
(outside staged code) equal the reference too. Then the special rules: the
operator is recognised by what it computes, whatever its spelling; `*` with
one and two zeros; ties in min/max (only the first winner gets the
adjoint); empty inputs; out-of-range and negative indices; duplicate
scatter indices (located errors); reduce inside `pb.map`; and op counts of
the scatter and hist derivatives at two sizes (the cheap-gradient
invariant: no O(len(dest)) / O(num_bins) work per derivative).
"""
from __future__ import annotations

import operator

import numpy as np
import pytest

import pullback as pb
from pullback.backends import interp
from pullback.errors import PullbackError, ShapeError
from pullback.frontend import stage
from pullback.ir.printer import print_prog
from pullback.passes.vjp import vjp_prog
from pullback.pytree import flatten
from pullback.testing import check_grads

HERE = __file__
INF = np.inf
IDX = np.array([2, 0, -1, 2, 5, 1, -7, 0])     # bins 0..3 (hist) / rows 0..4 (scatter): 5, -1, -7 ignored
UIDX = np.array([3, 0, -1, 9, 1, -4])          # unique in range (scatter)


# -- the plain Python references ---------------------------------------------------------------

def fold(op, ne, xs):
    acc = ne
    for x in xs:
        acc = op(acc, x)
    return acc


def scan_ref(op, ne, xs):
    out, acc = [], ne
    for x in xs:
        acc = op(acc, x)
        out.append(acc)
    return np.array(out)


def hist_ref(op, ne, nb, idx, vals):
    bins = [np.array(ne, dtype=float) * np.ones(np.shape(vals)[1:]) for _ in range(nb)]
    for i, v in zip(idx, vals):
        if 0 <= i < nb:
            bins[i] = op(bins[i], v)
    return np.array(bins)


def scatter_ref(dest, idx, vals):
    out = np.array(dest, dtype=float)
    for i, v in zip(idx, vals):
        if 0 <= i < len(out):
            out[i] = v
    return out


def lin(a, b):
    return a + b + a * b        # associative: (1 + a)(1 + b) - 1, neutral 0


def softmax_pair(a, b):         # (running max, sum of exp(x - max)): associative, neutral (-inf, 0)
    m = np.maximum(a[0], b[0])
    return m, a[1] * np.exp(a[0] - m) + b[1] * np.exp(b[0] - m)


# -- the staged cases (each a function of float arrays) and their references -----------------------

def reduce_add(x):
    return pb.reduce(pb.add, 0.5, x)


def reduce_operator_add(x):
    return pb.reduce(operator.add, 0.0, x) * 2.0


def reduce_mul(x):
    return pb.reduce(np.multiply, 2.0, x)


def reduce_max_builtin(x):
    return pb.reduce(max, -INF, x)


def reduce_min_lambda(x):
    return pb.reduce(lambda a, b: np.minimum(b, a), INF, x)


def reduce_general(x):
    return pb.reduce(lin, 0.0, 0.3 * x)


def reduce_rows_max(X):
    return pb.reduce(pb.max, -INF, X)


def reduce_rows_add(X):
    return pb.reduce(pb.add, np.zeros(3), X)


def reduce_tuple(x):
    m, s = pb.reduce(softmax_pair, (-INF, 0.0), x, np.ones_like(x))
    return m + np.log(s)


def reduce_in_map(X):
    return pb.map(lambda row: pb.reduce(pb.max, -INF, row) * pb.reduce(lin, 0.0, 0.2 * row), X)


def scan_add(x):
    return pb.associative_scan(pb.add, 1.0, x)


def scan_mul(x):
    return pb.associative_scan(operator.mul, 1.0, x)


def scan_max(x):
    return pb.associative_scan(np.maximum, -INF, x)


def scan_general(x):
    return pb.associative_scan(lin, 0.0, 0.3 * x)


def scan_tuple(x):
    m, s = pb.associative_scan(softmax_pair, (-INF, 0.0), x, np.ones_like(x))
    return m + np.log(s)


def hist_add(x):
    return pb.hist(pb.add, 0.25, 4, IDX, x)


def hist_mul(x):
    return pb.hist(pb.mul, 1.0, 4, IDX, x)


def hist_max(x):
    return pb.hist(max, -10.0, 4, IDX, x)


def hist_min(x):
    return pb.hist(np.minimum, 10.0, 4, IDX, x)


def hist_general(x):
    return pb.hist(lin, 0.0, 4, IDX, 0.3 * x)


def hist_rows_add(X):
    return pb.hist(pb.add, 0.0, 4, IDX, X)


def hist_rows_max(X):
    return pb.hist(pb.max, -10.0, 4, IDX, X)


def scatter_1d(d, v):
    return pb.scatter(d, UIDX, v)


def scatter_traced_idx(d, v, idx):
    return pb.scatter(d * 2.0, idx, v * v)


def scatter_rows(D, V):
    return pb.scatter(D, UIDX, V)


_R = np.random.default_rng(0)
X8 = _R.normal(size=8)
M83 = _R.normal(size=(8, 3))
D10, V6, D103, V63 = _R.normal(size=10), _R.normal(size=6), _R.normal(size=(10, 3)), _R.normal(size=(6, 3))


def _softmax_fold(x):
    m, s = fold(softmax_pair, (-INF, 0.0), zip(x, np.ones_like(x)))
    return m + np.log(s)


def _softmax_scan(x):
    out, acc = [], (-INF, 0.0)
    for v in x:
        acc = softmax_pair(acc, (v, 1.0))
        out.append(acc[0] + np.log(acc[1]))
    return np.array(out)


CASES = {   # name: (function, args, plain reference)
    "reduce_add": (reduce_add, (X8,), lambda x: fold(lambda a, b: a + b, 0.5, x)),
    "reduce_operator_add": (reduce_operator_add, (X8,), lambda x: 2.0 * fold(lambda a, b: a + b, 0.0, x)),
    "reduce_mul": (reduce_mul, (X8,), lambda x: fold(lambda a, b: a * b, 2.0, x)),
    "reduce_max_builtin": (reduce_max_builtin, (X8,), lambda x: fold(lambda a, b: a if a >= b else b, -INF, x)),
    "reduce_min_lambda": (reduce_min_lambda, (X8,), lambda x: fold(lambda a, b: a if a <= b else b, INF, x)),
    "reduce_general": (reduce_general, (X8,), lambda x: fold(lin, 0.0, 0.3 * x)),
    "reduce_rows_max": (reduce_rows_max, (M83,), lambda X: fold(np.maximum, np.full(3, -INF), X)),
    "reduce_rows_add": (reduce_rows_add, (M83,), lambda X: fold(np.add, np.zeros(3), X)),
    "reduce_tuple": (reduce_tuple, (X8,), _softmax_fold),
    "reduce_in_map": (reduce_in_map, (M83,), lambda X: np.array(
        [fold(max, -INF, r) * fold(lin, 0.0, 0.2 * r) for r in X])),
    "scan_add": (scan_add, (X8,), lambda x: scan_ref(lambda a, b: a + b, 1.0, x)),
    "scan_mul": (scan_mul, (X8,), lambda x: scan_ref(lambda a, b: a * b, 1.0, x)),
    "scan_max": (scan_max, (X8,), lambda x: scan_ref(max, -INF, x)),
    "scan_general": (scan_general, (X8,), lambda x: scan_ref(lin, 0.0, 0.3 * x)),
    "scan_tuple": (scan_tuple, (X8,), _softmax_scan),
    "hist_add": (hist_add, (X8,), lambda x: hist_ref(lambda a, b: a + b, 0.25, 4, IDX, x)),
    "hist_mul": (hist_mul, (X8,), lambda x: hist_ref(lambda a, b: a * b, 1.0, 4, IDX, x)),
    "hist_max": (hist_max, (X8,), lambda x: hist_ref(max, -10.0, 4, IDX, x)),
    "hist_min": (hist_min, (X8,), lambda x: hist_ref(min, 10.0, 4, IDX, x)),
    "hist_general": (hist_general, (X8,), lambda x: hist_ref(lin, 0.0, 4, IDX, 0.3 * x)),
    "hist_rows_add": (hist_rows_add, (M83,), lambda X: hist_ref(np.add, 0.0, 4, IDX, X)),
    "hist_rows_max": (hist_rows_max, (M83,), lambda X: hist_ref(np.maximum, -10.0, 4, IDX, X)),
    "scatter_1d": (scatter_1d, (D10, V6), lambda d, v: scatter_ref(d, UIDX, v)),
    "scatter_rows": (scatter_rows, (D103, V63), lambda d, v: scatter_ref(d, UIDX, v)),
}
BACKENDS = ["interp", "pysource", pytest.param("numba", marks=pytest.mark.slow)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_value_and_derivatives(name, backend):
    f, args, ref = CASES[name]
    want = ref(*args)
    np.testing.assert_allclose(pb.jit(f, backend=backend)(*args), want, rtol=1e-12, atol=1e-12)
    check_grads(f, args, modes=("fwd", "rev"), order=1, backend=backend, rng=np.random.default_rng(1),
                err_msg=name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_eager_matches_the_reference(name):
    f, args, ref = CASES[name]
    np.testing.assert_allclose(f(*args), ref(*args), rtol=1e-12, atol=1e-12)


def test_traced_scatter_indices():
    idx = np.array([4, 11, 0, -2, 7, 3])
    for backend in ("interp", "pysource"):
        got = pb.jit(scatter_traced_idx, backend=backend)(D10, V6, idx)
        np.testing.assert_allclose(got, scatter_ref(2.0 * D10, idx, V6 * V6))
        check_grads(lambda d, v: scatter_traced_idx(d, v, idx), (D10, V6), order=1, backend=backend)
        g = pb.grad(lambda d, v, i: np.sum(np.sin(scatter_traced_idx(d, v, i))), argnums=(0, 1),
                    backend=backend)(D10, V6, idx)
        out = scatter_ref(2.0 * D10, idx, V6 * V6)
        gd = 2.0 * np.cos(out)
        gd[[4, 0, 7, 3]] = 0.0
        gv = np.array([np.cos(out[i]) * 2 * v if 0 <= i < 10 else 0.0 for i, v in zip(idx, V6)])
        np.testing.assert_allclose(g[0], gd)
        np.testing.assert_allclose(g[1], gv)


@pytest.mark.slow
def test_scan_on_numba():
    x = np.array([0.5, -1.0, 2.0, 0.25])
    np.testing.assert_allclose(pb.jit(scan_general, backend="numba")(x), scan_ref(lin, 0.0, 0.3 * x))
    np.testing.assert_allclose(pb.grad(lambda x: np.sum(hist_max(x)), backend="numba")(X8),
                               pb.grad(lambda x: np.sum(hist_max(x)), backend="interp")(X8))


# -- operator recognition ------------------------------------------------------------------------

def _ir(f, *args):
    return print_prog(stage(f, args).prog)


@pytest.mark.parametrize("op", [pb.add, operator.add, np.add, lambda a, b: a + b, lambda a, b: b + a])
def test_plus_is_recognised_whatever_its_spelling(op):
    text = _ir(lambda x: pb.reduce(op, 0.0, x), X8)
    assert "sum(" in text and "loop" not in text, text


@pytest.mark.parametrize("op,arg", [(pb.max, "argmax"), (max, "argmax"), (np.maximum, "argmax"),
                                    (lambda a, b: np.maximum(a, b), "argmax"), (pb.min, "argmin"),
                                    (min, "argmin"), (np.minimum, "argmin"), (operator.mul, "prod"),
                                    (pb.mul, "prod")])
def test_min_max_mul_are_recognised(op, arg):
    text = _ir(lambda x: pb.reduce(op, 1.0, x), X8)
    assert f"{arg}(" in text and "loop" not in text, text


def test_other_operators_become_one_loop():
    text = _ir(lambda x: pb.reduce(lambda a, b: a + 2.0 * b, 0.0, x), X8)
    assert "loop" in text and "sum(" not in text, text
    text = _ir(lambda x: pb.hist(pb.add, 0.0, 3, np.array([0, 1, 1]), x), X8[:3])
    assert "take_add" in text and "loop" not in text, text


# -- special cases -------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["interp", "pysource"])
def test_product_with_zeros(backend):
    g = pb.grad(lambda x: pb.reduce(pb.mul, 1.0, x), backend=backend)
    x = np.array([2.0, 0.0, 3.0, -1.5])
    np.testing.assert_array_equal(g(x), [0.0, 2.0 * 3.0 * -1.5, 0.0, 0.0])
    x2 = np.array([2.0, 0.0, 3.0, 0.0])
    np.testing.assert_array_equal(g(x2), np.zeros(4))
    x0 = np.array([2.0, 4.0, -0.5])
    np.testing.assert_allclose(g(x0), [-2.0, -1.0, 8.0])
    _, t = pb.jvp(lambda x: pb.reduce(pb.mul, 1.0, x), (x,), (np.ones(4),), backend=backend)
    assert t == 2.0 * 3.0 * -1.5
    _, t = pb.jvp(lambda x: pb.reduce(pb.mul, 1.0, x), (x2,), (np.ones(4),), backend=backend)
    assert t == 0.0


@pytest.mark.parametrize("backend", ["interp", "pysource"])
def test_ties_give_the_whole_adjoint_to_the_first_winner(backend):
    x = np.array([1.0, 3.0, -2.0, 3.0, 3.0])
    np.testing.assert_array_equal(pb.grad(lambda x: pb.reduce(max, -INF, x), backend=backend)(x),
                                  [0, 1, 0, 0, 0])
    np.testing.assert_array_equal(pb.grad(lambda x: pb.reduce(pb.min, INF, -x), backend=backend)(x),
                                  [0, -1, 0, 0, 0])
    # the general loop (scan) and hist keep the earlier operand on a tie too
    np.testing.assert_array_equal(
        pb.grad(lambda x: pb.associative_scan(pb.max, -INF, x)[-1], backend=backend)(x), [0, 1, 0, 0, 0])
    idx = np.array([1, 0, 1, 0, 0])
    np.testing.assert_array_equal(
        pb.grad(lambda x: pb.hist(pb.max, -INF, 2, idx, x)[0], backend=backend)(x), [0, 1, 0, 0, 0])
    X = np.array([[1.0, 5.0], [1.0, 2.0], [0.0, 5.0]])
    np.testing.assert_array_equal(pb.grad(lambda X: np.sum(pb.reduce(pb.max, -INF, X)), backend=backend)(X),
                                  [[1, 1], [0, 0], [0, 0]])
    # a tie with the neutral element: the neutral element (first in the fold) wins
    np.testing.assert_array_equal(pb.grad(lambda x: pb.reduce(pb.max, 3.0, x), backend=backend)(x), np.zeros(5))


def test_nan_propagates_like_numpy():
    x = np.array([1.0, np.nan, 2.0])
    assert np.isnan(pb.jit(lambda x: pb.reduce(pb.max, -INF, x), backend="interp")(x))
    assert np.isnan(pb.jit(lambda x: pb.associative_scan(pb.min, INF, x), backend="interp")(x)[-1])


@pytest.mark.parametrize("backend", ["interp", "pysource"])
def test_empty_inputs(backend):
    e = np.zeros(0)
    assert pb.jit(lambda x: pb.reduce(pb.max, -5.0, x), backend=backend)(e) == -5.0
    assert pb.jit(lambda x: pb.reduce(lin, 0.5, x), backend=backend)(e) == 0.5
    assert pb.jit(lambda x: pb.associative_scan(pb.add, 0.0, x), backend=backend)(e).shape == (0,)
    np.testing.assert_array_equal(
        pb.jit(lambda x: pb.hist(pb.mul, 1.0, 3, np.zeros(0, np.int64), x), backend=backend)(e), np.ones(3))
    np.testing.assert_array_equal(
        pb.jit(lambda d, x: pb.scatter(d, np.zeros(0, np.int64), x), backend=backend)(D10, e), D10)
    assert pb.jit(lambda x: pb.hist(pb.add, 0.0, 0, np.array([0, 1]), x), backend=backend)(X8[:2]).shape == (0,)
    np.testing.assert_array_equal(pb.grad(lambda x: pb.reduce(pb.add, 1.0, x) + np.sum(x), backend=backend)(e), e)
    assert pb.reduce(pb.add, 2.0, e) == 2.0 and pb.associative_scan(pb.add, 0.0, e).shape == (0,)


@pytest.mark.parametrize("backend", ["interp", "pysource"])
def test_out_of_range_indices_are_ignored(backend):
    idx = np.array([-1, -3, 3, 100])
    np.testing.assert_array_equal(pb.jit(lambda x: pb.hist(pb.add, 0.5, 3, idx, x), backend=backend)(X8[:4]),
                                  np.full(3, 0.5))
    np.testing.assert_array_equal(pb.grad(lambda x: np.sum(pb.hist(pb.max, 0.0, 3, idx, x)), backend=backend)(
        X8[:4]), np.zeros(4))
    g = pb.grad(lambda d, v: np.sum(pb.scatter(d, idx, v) ** 2), argnums=(0, 1), backend=backend)(D10[:3], V6[:4])
    np.testing.assert_allclose(g[0], 2 * D10[:3])
    np.testing.assert_array_equal(g[1], np.zeros(4))


# -- errors ---------------------------------------------------------------------------------------

def _line_of(fn, needle):
    import inspect

    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, s in enumerate(lines) if needle in s)


def _expect(exc, call, where, needle, words):
    with pytest.raises(exc) as info:
        call()
    err = info.value
    assert err.loc is not None and err.loc.line == _line_of(where, needle), str(err)
    assert f"{HERE}:{err.loc.line}" in str(err) and words in str(err), str(err)


def test_duplicate_scatter_indices_are_located_errors():
    def const_dup(d, v):
        return pb.scatter(d, np.array([1, 4, -1, 1]), v)  # const

    def traced_dup(d, v, i):
        return pb.scatter(d, i, v)  # traced

    d, v = np.zeros(5), np.ones(4)
    _expect(PullbackError, lambda: pb.jit(const_dup, backend="interp")(d, v), const_dup, "# const",
            "index 1 occurs more than once")
    for backend in ("interp", "pysource"):
        _expect(IndexError, lambda: pb.jit(traced_dup, backend=backend)(d, v, np.array([3, 0, 3, 9])),
                traced_dup, "# traced", "index 3 occurs more than once")
        _expect(IndexError, lambda: pb.grad(lambda d, v, i: np.sum(traced_dup(d, v, i)), backend=backend)(
            d, v, np.array([2, 2, 0, 1])), traced_dup, "# traced", "index 2 occurs more than once")
    # duplicates out of range are ignored, as their writes are
    np.testing.assert_array_equal(pb.jit(traced_dup, backend="interp")(d, v, np.array([7, 7, -1, -1])), d)
    eager = lambda: pb.scatter(d, np.array([0, 0, 1, 2]), v)  # eager
    _expect(PullbackError, eager, test_duplicate_scatter_indices_are_located_errors, "# eager",
            "index 0 occurs more than once")


def test_bad_arguments_are_located_errors():
    def wrong_type(x):
        return pb.reduce(lambda a, b: a > b, 0.0, x)  # type

    def ne_arity(x):
        return pb.reduce(softmax_pair, 0.0, x, x)  # arity

    def lengths(x):
        return pb.associative_scan(softmax_pair, (0.0, 0.0), x, x[:3])  # lengths

    def not_callable(x):
        return pb.hist(3, 0.0, 2, np.array([0, 1]), x[:2])  # callable

    def float_idx(x):
        return pb.hist(pb.add, 0.0, 2, np.array([0.0, 1.0]), x[:2])  # floats

    def bad_values(d):
        return pb.scatter(d, np.array([0, 1]), np.ones(3))  # values

    for fn, needle, exc, words in [(wrong_type, "# type", PullbackError, "must return"),
                                   (ne_arity, "# arity", PullbackError, "tuple of 2 values"),
                                   (lengths, "# lengths", ShapeError, "leading dimensions"),
                                   (not_callable, "# callable", PullbackError, "not a function"),
                                   (float_idx, "# floats", ShapeError, "vector of integers"),
                                   (bad_values, "# values", ShapeError, "values of shape")]:
        _expect(exc, lambda: pb.jit(fn, backend="interp")(X8), fn, needle, words)


# -- cheap gradients: op counts at two sizes -------------------------------------------------------

def _counts(f, args):
    """(primal work, vjp work) on the interpreter, from the rows' cost rules."""
    st = stage(f, args)
    leaves, _ = flatten(tuple(args))
    p = interp.OpCount()
    interp.run(st.prog, *leaves, ops=p)
    vprog, name = vjp_prog(st.prog)
    cts = [np.ones(t.shape) if t.shape else 1.0 for t in st.prog.main.ret_types]
    g = interp.OpCount()
    interp.run(vprog, *leaves, *cts, fname=name, ops=g)
    return p.work, g.work


def test_scatter_derivative_is_independent_of_the_destination_size():
    idx = np.array([5, 1, -1, 40, 3])

    def f(d, v, i):
        return pb.scatter(d, i, v * 2.0)

    small = _counts(f, (np.ones(50), np.ones(5), idx))
    big = _counts(f, (np.ones(5000), np.ones(5), idx))
    assert big[0] == small[0] and big[1] == small[1], (small, big)
    assert small[1] <= 10 * small[0], small


def test_hist_derivative_grows_with_values_not_bins():
    for op in (pb.add, pb.max, pb.mul):
        def f(x):
            return pb.hist(op, 1.0, nb, np.array([0, 3, 2, 3, -1, 8]), x * 1.5)

        nb = 10
        small = _counts(f, (np.ones(6),))
        nb = 1000
        big = _counts(f, (np.ones(6),))
        # the bins are made once (the primal's full(); the seed is an input): nothing else grows
        assert big[1] - small[1] <= big[0] - small[0], (op, small, big)


def test_the_count_catches_a_dense_adjoint():
    """The counter behind the two tests above: a gather's adjoint zeros the whole
    array, so its work grows with the array."""
    def f(d, v):
        return d[np.array([1, 2])] * v

    assert _counts(f, (np.ones(5000), np.ones(2)))[1] > 10 * _counts(f, (np.ones(50), np.ones(2)))[1]


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

from hypothesis import HealthCheck, given, settings, strategies as hst  # noqa: E402

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
