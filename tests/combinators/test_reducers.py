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
    "reduce_max_builtin": (reduce_max_builtin, (X8,), lambda x: fold(lambda a, b: max(a, b), -INF, x)),
    "reduce_min_lambda": (reduce_min_lambda, (X8,), lambda x: fold(lambda a, b: min(a, b), INF, x)),
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
    # `+`-hist: a map adding into its bins (an accumulator), never a sequential loop;
    # the backends' vectorisation makes it one scatter-add
    from pullback.passes.vectorize import vectorize

    prog = stage(lambda x: pb.hist(pb.add, 0.0, 3, np.array([0, 1, 1]), x), (X8[:3],)).prog
    text = print_prog(prog)
    assert "map [" in text and "mode='add'" in text and "loop" not in text, text
    text = print_prog(vectorize(prog))
    assert "take_add" in text and "map [" not in text and "loop" not in text, text


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
        jitted = pb.jit(traced_dup, backend=backend)
        grad = pb.grad(lambda d, v, i: np.sum(traced_dup(d, v, i)), backend=backend)
        _expect(IndexError, lambda: jitted(d, v, np.array([3, 0, 3, 9])),  # noqa: B023 - called at once
                traced_dup, "# traced", "index 3 occurs more than once")
        _expect(IndexError, lambda: grad(d, v, np.array([2, 2, 0, 1])),  # noqa: B023 - called at once
                traced_dup, "# traced", "index 2 occurs more than once")
    # duplicates out of range are ignored, as their writes are
    np.testing.assert_array_equal(pb.jit(traced_dup, backend="interp")(d, v, np.array([7, 7, -1, -1])), d)
    eager = lambda: pb.scatter(d, np.array([0, 0, 1, 2]), v)  # eager
    _expect(PullbackError, eager, test_duplicate_scatter_indices_are_located_errors, "# eager",
            "index 0 occurs more than once")


def _numba_scatter(d, v, i):
    return pb.scatter(d, i, v)  # numba


@pytest.mark.slow
def test_duplicate_scatter_indices_on_numba():
    f = pb.jit(_numba_scatter, backend="numba")
    np.testing.assert_array_equal(f(np.zeros(4), np.ones(2), np.array([3, -3])), [0, 0, 0, 1])
    _expect(IndexError, lambda: f(np.zeros(4), np.ones(2), np.array([1, 1])), _numba_scatter, "# numba",
            "occurs more than once")


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
        _expect(exc, lambda: pb.jit(fn, backend="interp")(X8), fn, needle, words)  # noqa: B023 - called at once


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
    def f(x, op, nb):
        return pb.hist(op, 1.0, nb, np.array([0, 3, 2, 3, -1, 8]), x * 1.5)

    for op in (pb.add, pb.max, pb.mul):
        small = _counts(lambda x: f(x, op, 10), (np.ones(6),))  # noqa: B023 - called at once
        big = _counts(lambda x: f(x, op, 1000), (np.ones(6),))  # noqa: B023 - called at once
        # the bins are made once (the primal's full(); the seed is an input): nothing else grows
        assert big[1] - small[1] <= big[0] - small[0], (op, small, big)


def test_the_count_catches_a_dense_adjoint():
    """The counter behind the two tests above: a gather's adjoint zeros the whole
    array, so its work grows with the array."""
    def f(d, v):
        return d[np.array([1, 2])] * v

    assert _counts(f, (np.ones(5000), np.ones(2)))[1] > 10 * _counts(f, (np.ones(50), np.ones(2)))[1]
