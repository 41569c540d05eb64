"""`passes.short_rows` (note [short-rows]): a long matrix of short rows, defined outside a
loop and read in it only by elementwise primitives reduced over the rows, is read through
a column-major copy; every value is unchanged (the interpreter on the rewritten IR, and
numba bit for bit against numba without the pass), and the operands read any other way
are left alone."""
import numpy as np
import pytest

import pullback as pb
from pullback.backends import interp
from pullback.gradbench.modules.kmeans import cost as kmeans_cost
from pullback.gradbench.modules.kmeans import direction as kmeans_dir
from pullback.ir.core import Loop, Prim
from pullback.ir.traverse import iter_lets
from pullback.passes import short_rows
from pullback.passes.short_rows import LONG, SHORT, transpose_short_rows


def distances(C, P):                  # kmeans' distances: sums over each row of P
    out = 0.0
    for j in range(C.shape[0]):
        out = out + np.min(np.sum((P - C[j]) ** 2, axis=1) + np.max(np.abs(P * C[j]), axis=1))
    return out


def row_read(C, P):                   # P also read by rows in the loop: left alone
    out = 0.0
    for j in range(C.shape[0]):
        out = out + np.sum(np.sum((P - C[j]) ** 2, axis=1)) + np.sum(P[j])
    return out


def column_sums(C, P):                # reduced over the long axis: left alone
    out = np.zeros(P.shape[1])
    for j in range(C.shape[0]):
        out = out + np.sum((P - C[j]) ** 2, axis=0)
    return out


def kept(C, P):                       # an elementwise result of P leaves the loop: left alone
    out = P
    for j in range(C.shape[0]):
        out = (P - C[j]) * 2.0 + out * 0.5
    return np.sum(out, axis=1)


def kept_and_reduced(C, P):           # a value of the chain is reduced and also leaves the loop: left alone
    out = P
    s = 0.0
    for j in range(C.shape[0]):
        d = (P - C[j]) * 2.0
        s = s + np.sum(np.sum(d, axis=1))
        out = d
    return s, np.sum(out, axis=1)


def no_reduction(C, P):               # elementwise only (already read with unit stride): left alone
    out = 0.0
    for j in range(C.shape[0]):
        out = out + np.sum(np.exp(P - C[j]))
    return out


def in_a_branch(C, P):                # read inside an `if` in the loop: left alone
    out = 0.0
    for j in range(C.shape[0]):
        if C[j, 0] > 0.5:
            out = out + np.sum(np.sum((P - C[j]) ** 2, axis=1))
    return out


def branch_and_reduced(C, P):         # reduced, and also read inside an `if` of the loop: left alone
    out = 0.0
    for j in range(C.shape[0]):
        out = out + np.sum(np.sum((P - C[j]) ** 2, axis=1))
        if C[j, 0] > 0.5:
            out = out + np.sum(P * 2.0)
    return out


def args_for(rng, k=4, n=LONG + 6, d=5):
    return rng.uniform(0.5, 1.5, (k, d)), rng.uniform(0.0, 3.0, (n, d))


def staged(f, *args):
    return pb.jit(f).staged(*args).prog


def copies(prog):
    """The (k, n) copies the pass made."""
    return [st for fn in prog.funcs for st in iter_lets(fn.body) if isinstance(st.exp, Prim)
            and st.exp.op == "reshape" and st.pat[0].name.endswith("_t")]


@pytest.mark.parametrize("f, n_copies", [(distances, 1), (kmeans_cost, 1), (kmeans_dir, 1), (row_read, 0),
                                         (column_sums, 0), (kept, 0), (kept_and_reduced, 0), (no_reduction, 0),
                                         (in_a_branch, 0), (branch_and_reduced, 0)])
def test_values_unchanged_on_the_interpreter(f, n_copies):
    args = args_for(np.random.default_rng(0))
    prog = staged(f, *args)
    out = transpose_short_rows(prog)
    assert len(copies(out)) == n_copies
    for got, want in zip(interp.run(out, *args), interp.run(prog, *args)):
        np.testing.assert_array_equal(got, want)


def test_sizes_outside_the_bounds_are_left_alone():
    rng = np.random.default_rng(1)
    for k, n, d in ((4, LONG - 1, 5), (4, LONG + 6, SHORT + 1), (4, LONG + 6, 1)):
        assert not copies(transpose_short_rows(staged(distances, *args_for(rng, k, n, d))))


@pytest.mark.parametrize("f", [distances, kmeans_cost, kmeans_dir])
def test_numba_bit_for_bit_and_the_copy_is_read_column_major(monkeypatch, f):
    pytest.importorskip("numba")
    from pullback.backends import numba_backend as nb

    args = args_for(np.random.default_rng(2))
    prog = staged(f, *args)
    fn = nb.compile_prog(prog, parallel=False)
    assert "P_f = P_t.T" in fn.source and "P_f[" in fn.source, fn.source
    got = fn(*args)
    monkeypatch.setattr(short_rows, "transpose_short_rows", lambda p: p)
    plain = nb.compile_prog(prog, parallel=False)
    assert "P_f" not in plain.source
    for g, w, r in zip(got, plain(*args), interp.run(prog, *args)):
        np.testing.assert_array_equal(g, w)
        np.testing.assert_allclose(g, r, rtol=1e-13, atol=1e-13)


def test_the_copy_is_made_before_the_loop():
    args = args_for(np.random.default_rng(3))
    out = transpose_short_rows(staged(distances, *args))
    body = [fn for fn in out.funcs if fn.name == out.entry][0].body.stmts
    first_loop = next(i for i, st in enumerate(body) if isinstance(st.exp, Loop))
    (cp,) = copies(out)
    assert any(st is cp for st in body[:first_loop])
