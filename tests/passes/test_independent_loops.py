"""Loops with independent iterations are reversed without being re-run forward
(passes/vjp/independent.py, note [independent-loops]).

Each case checks the gradient against finite differences or a closed form, and
whether the return sweep kept its undo log (counted as `store_push` statements),
so a case that must not be rewritten fails if it is.
"""
import numpy as np
import pytest

import pullback as pb
from pullback.ir.core import Prim
from pullback.ir.traverse import iter_lets

from .test_saved_values import _work


def det_lu(A):
    n = A.shape[0]
    A = A.copy()
    d = 1.0
    for i in range(n):
        p = A[i, i]
        d = d * p
        for j in range(i + 1, n):
            f = A[j, i] / p
            for k in range(i + 1, n):
                A[j, k] -= f * A[i, k]
    return d


def det_lu_from_i(A):
    """As det_lu, but row j = i is updated too (with f = 1): the inner loop reads the
    row it writes, so iteration k of the row loop is not independent of the others."""
    n = A.shape[0]
    A = A.copy()
    d = 1.0
    for i in range(n - 1):
        p = A[i, i]
        d = d * p
        for j in range(i, n):
            f = A[j, i] / p * 0.5
            for k in range(i + 1, n):
                A[j, k] -= f * A[i, k]
    return d + np.sum(A)


def scale_rows(A, x):
    """Row j, element k is scaled by x[k] twice: independent iterations over k."""
    A = A.copy()
    for t in range(2):
        for j in range(A.shape[0]):
            for k in range(A.shape[1]):
                A[j, k] = A[j, k] * x[k]
    return np.sum(A * A)


def prefix_rows(A, x):
    """A running product along each row: iteration k reads what iteration k-1 wrote."""
    A = A.copy()
    for j in range(A.shape[0]):
        for k in range(1, A.shape[1]):
            A[j, k] = A[j, k] * A[j, k - 1] * x[k]
    return np.sum(A)


def wrapped(a, x):
    """Index k - n runs over -n..n-1: iterations k and k + n write the same element."""
    a = a.copy()
    n = a.shape[0]
    for t in range(2):
        for k in range(2 * n):
            a[k - n] = a[k - n] * x + 1.0
    return np.sum(a * a)


def row_sums(A, x):
    """The inner loop reads a whole row (a slice on the slab axis): not rewritten."""
    A = A.copy()
    for t in range(2):
        for k in range(A.shape[0]):
            A[k, 0] = A[k, 0] + x * np.sum(A[:, 1])
    return np.sum(A * A)


def _pushes(f, *args, argnums=0):
    g = pb.grad(f, argnums=argnums, backend="interp")
    prog = g._jit.staged(*args).prog
    return sum(1 for fn in prog.funcs for st in iter_lets(fn.body)
               if isinstance(st.exp, Prim) and st.exp.op == "store_push")


def _fd(f, args, argnum, eps=1e-6):
    x = np.asarray(args[argnum], dtype=float)
    out = np.zeros(x.shape)
    for i in np.ndindex(x.shape):
        d = np.zeros(x.shape)
        d[i] = eps
        hi = list(args)
        lo = list(args)
        hi[argnum] = x + d
        lo[argnum] = x - d
        out[i] = (f(*hi) - f(*lo)) / (2 * eps)
    return out


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_det_lu_gradient_is_the_cofactor_matrix(n):
    rng = np.random.default_rng(n)
    A = rng.uniform(-1.0, 1.0, (n, n)) + n * np.eye(n)
    ref = np.linalg.det(A) * np.linalg.inv(A).T
    for backend in ("interp", "pysource"):
        np.testing.assert_allclose(pb.grad(det_lu, backend=backend)(A), ref, rtol=1e-10, atol=1e-12)


def test_det_lu_on_numba():
    rng = np.random.default_rng(7)
    A = rng.uniform(-1.0, 1.0, (6, 6)) + 6 * np.eye(6)
    ref = np.linalg.det(A) * np.linalg.inv(A).T
    np.testing.assert_allclose(pb.grad(det_lu, backend="numba")(A), ref, rtol=1e-10, atol=1e-12)


def test_det_lu_return_sweep_pushes_nothing_inside():
    """Only the outer loop saves, and only d: the row and column loops, re-run by its
    return sweep, are reversed from the state before them, and the matrix is not
    logged at all (step i reads row and column i, which no later step writes)."""
    A = np.eye(4) * 4 + 0.1
    assert _pushes(det_lu, A) == 1


def _array_pushes(f, *args, argnums=0):
    g = pb.grad(f, argnums=argnums, backend="interp")
    prog = g._jit.staged(*args).prog
    return sum(1 for fn in prog.funcs for st in iter_lets(fn.body)
               if isinstance(st.exp, Prim) and st.exp.op == "store_push" and st.exp.args[1].type.shape)


def rows_down(A, x):
    """Row i + 1 accumulates row i: step i reads row i, which only earlier steps wrote."""
    A = A.copy()
    for i in range(A.shape[0] - 1):
        for k in range(A.shape[1]):
            A[i + 1, k] += A[i, k] * x[k]
    return np.sum(A * A)


def rows_up(A, x):
    """Row i reads row i + 1, which the next step writes: the log is needed."""
    A = A.copy()
    for i in range(A.shape[0] - 1):
        for k in range(A.shape[1]):
            A[i, k] = A[i, k] * x[k] + A[i + 1, k] * A[i, k]
    return np.sum(A * A)


def rows_read_then_written(A, x):
    """Step i reads row i + 1 before it updates it: the log is needed."""
    A = A.copy()
    for i in range(A.shape[0] - 1):
        for k in range(A.shape[1]):
            A[i + 1, k] += A[i + 1, k] * A[i, k] * x[k]
    return np.sum(A * A)


def every_other(A, x):
    """Step i writes row 2i: not an index with coefficient 1, so not proved."""
    A = A.copy()
    for i in range(A.shape[0] // 2):
        for k in range(A.shape[1]):
            A[2 * i, k] += A[i, k] * x[k]
    return np.sum(A * A)


def rows_back(A, x):
    """Step i writes rows i + 1 and then i (i + 1 - q): the gap to the read of row i
    is 1 - q, not provably positive."""
    A = A.copy()
    for i in range(A.shape[0] - 1):
        for q in range(2):
            for k in range(A.shape[1]):
                A[i + 1 - q, k] += A[i, k] * x[k]
    return np.sum(A * A)


def rows_wrapped(A, x):
    """Step i reads row i - 1, which is the last row at i = 0 (written last): logged."""
    A = A.copy()
    for i in range(A.shape[0]):
        for k in range(A.shape[1]):
            A[i, k] = np.sin(A[i - 1, k]) * x[k]
    return np.sum(A * A)


@pytest.mark.parametrize("f, logged", [(rows_down, False), (rows_up, True), (rows_back, True), (rows_wrapped, True),
                                       (rows_read_then_written, True), (every_other, True),
                                       (det_lu_from_i, True)])
def test_triangular_loops_need_no_undo_log(f, logged):
    """A loop whose steps read only locations no later step (nor the step itself)
    writes is reversed reading its final array (`independent.final_state`); the
    others keep their undo log. Finite differences check every gradient."""
    rng = np.random.default_rng(3)
    A, x = rng.uniform(-1.0, 1.0, (4, 3)) + 2.0, rng.uniform(0.5, 1.5, 3)
    args = (A,) if f is det_lu_from_i else (A, x)
    if f is det_lu_from_i:
        args = (rng.uniform(-1.0, 1.0, (4, 4)) + 4 * np.eye(4),)
    nums = tuple(range(len(args)))
    assert (_array_pushes(f, *args, argnums=nums) > 0) == logged
    g = pb.grad(f, argnums=nums, backend="interp")(*args)
    g = g if isinstance(g, tuple) else (g,)
    for j in nums:
        np.testing.assert_allclose(g[j], _fd(f, args, j), rtol=1e-6, atol=1e-6)
    for backend in ("pysource", "numba"):
        got = pb.grad(f, argnums=nums, backend=backend)(*args)
        got = got if isinstance(got, tuple) else (got,)
        for a, b in zip(got, g):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_row_read_equal_to_the_slab_is_not_rewritten():
    rng = np.random.default_rng(1)
    A = rng.uniform(-1.0, 1.0, (4, 4)) + 4 * np.eye(4)
    g = pb.grad(det_lu_from_i, backend="interp")(A)
    np.testing.assert_allclose(g, _fd(det_lu_from_i, (A,), 0), rtol=1e-6, atol=1e-7)
    assert _pushes(det_lu_from_i, A) > 2


def test_independent_columns_are_rewritten():
    rng = np.random.default_rng(2)
    A, x = rng.standard_normal((3, 4)), rng.uniform(0.5, 1.5, 4)
    gA, gx = pb.grad(scale_rows, argnums=(0, 1), backend="interp")(A, x)
    np.testing.assert_allclose(gA, _fd(scale_rows, (A, x), 0), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gx, _fd(scale_rows, (A, x), 1), rtol=1e-6, atol=1e-7)
    # the t loop saves the matrix per iteration; its re-run row and column loops save nothing
    assert _pushes(scale_rows, A, x, argnums=(0, 1)) == 1
    for backend in ("pysource", "numba"):
        for a, b in zip(pb.grad(scale_rows, argnums=(0, 1), backend=backend)(A, x), (gA, gx)):
            np.testing.assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize("f, args", [
    (prefix_rows, (np.arange(1.0, 13.0).reshape(3, 4) / 7, np.linspace(0.6, 1.4, 4))),
    (wrapped, (np.linspace(-1.0, 1.0, 3), 0.7)),
    (row_sums, (np.arange(1.0, 10.0).reshape(3, 3) / 9, 0.3)),
])
def test_dependent_iterations_keep_their_undo_log(f, args):
    """Each would give a wrong gradient if its inner loop were reversed from the state
    before it; finite differences check that it is not."""
    g = pb.grad(f, argnums=(0, 1), backend="interp")(*args)
    for j in range(2):
        np.testing.assert_allclose(g[j], _fd(f, args, j), rtol=1e-6, atol=1e-7)
    g2 = pb.grad(f, argnums=(0, 1), backend="pysource")(*args)
    for a, b in zip(g2, g):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_wrapped_index_keeps_its_undo_log():
    """k - n is not known to be non-negative, so the inner loop keeps its undo log:
    the t loop's matrix save plus the inner loop's element and index pushes."""
    assert _pushes(wrapped, np.linspace(-1.0, 1.0, 3), 0.7, argnums=(0, 1)) > 1


def test_det_lu_gradient_stays_cheap(monkeypatch):
    """Gradient work over primal work on the interpreter is the same at n = 6 and 12,
    and below what the store-all reversal of the inner loops costs."""
    from pullback.passes.vjp import independent

    def ratios():
        out = []
        for n in (6, 12):
            p, g = _work(det_lu, (np.eye(n) * n + 0.1,))
            out.append(g / p)
        return out

    lazy = ratios()
    monkeypatch.setattr(independent, "lazy_tape", lambda ctx, b, st: None)
    store_all = ratios()
    assert lazy[1] <= lazy[0] * 1.05, lazy
    assert lazy[1] < 0.8 * store_all[1], (lazy, store_all)


def carried_offset(a, x):
    """The slab index k + c uses c, carried by an inner loop: iteration k writes a[k]
    and a[k + 1], so iterations overlap. c is not loop-invariant, and is not taken for it."""
    a = a.copy()
    for t in range(2):
        for k in range(a.shape[0] - 1):
            c = 0
            for q in range(2):
                m = k + max(c, 0)          # provably >= 0, so only invariance rules it out
                a[m] = a[m] * x + 1.0
                c = c + 1
    return np.sum(a * a)


def test_offset_carried_by_an_inner_loop_is_not_invariant():
    args = (np.linspace(-1.0, 1.0, 4), 0.7)
    g = pb.grad(carried_offset, argnums=(0, 1), backend="interp")(*args)
    for j in range(2):
        np.testing.assert_allclose(g[j], _fd(carried_offset, args, j), rtol=1e-6, atol=1e-7)


def carry_chain(a, x):
    """Triangular (no undo log: step k reads a[k], which only step k - 1 writes) and
    linear (nothing saved), but not independent: step k + 1 reads what step k wrote,
    so the return sweep must count down although it pops nothing per iteration."""
    a = a * x
    for k in range(a.shape[0] - 1):
        a[k + 1] = a[k] * 0.5 + 1.0
    return np.sum(a * a)


def _reverse_counters(f, *args, argnums=0):
    """How many `for` loops of the gradient restore an index counting down: their
    body computes `sub(x, k)` of their own counter k (`i = n - 1 - k`)."""
    from pullback.ir.core import ForForm, Loop

    prog = pb.grad(f, argnums=argnums, backend="interp")._jit.staged(*args).prog
    count = 0
    for fn in prog.funcs:
        for st in iter_lets(fn.body):
            e = st.exp
            if isinstance(e, Loop) and isinstance(e.form, ForForm):
                k = e.form.index
                count += any(isinstance(s.exp, Prim) and s.exp.op == "sub" and s.exp.args[1] == k
                             for s in e.body.stmts)
    return count


def test_independent_loops_are_reversed_forward():
    """det_lu's row and column loops commute: their return sweeps run forward (note
    [independent-loops], "forward return sweeps"); only the pivot loop, whose
    iterations depend on each other, counts down. The gradient is unchanged."""
    A = np.eye(5) * 5 + np.arange(25.0).reshape(5, 5) / 50
    assert _reverse_counters(det_lu, A) == 1
    ref = np.linalg.det(A) * np.linalg.inv(A).T
    for backend in ("interp", "pysource", "numba"):
        np.testing.assert_allclose(pb.grad(det_lu, backend=backend)(A), ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("f, args", [
    (prefix_rows, (np.arange(1.0, 13.0).reshape(3, 4) / 7, np.linspace(0.6, 1.4, 4))),
    (wrapped, (np.linspace(-1.0, 1.0, 3), 0.7)),
    (det_lu_from_i, (np.eye(4) * 4 + np.arange(16.0).reshape(4, 4) / 40, )),
    (carry_chain, (np.linspace(0.5, 1.5, 5), 0.8)),
])
def test_dependent_loops_are_reversed_backwards(f, args):
    """Loops whose iterations depend on each other keep counting down; finite
    differences check the gradients."""
    argnums = tuple(range(len(args)))
    assert _reverse_counters(f, *args, argnums=argnums) >= 1
    g = pb.grad(f, argnums=argnums, backend="interp")(*args)
    for j in argnums:
        np.testing.assert_allclose(g[j], _fd(f, args, j), rtol=1e-6, atol=1e-6)
