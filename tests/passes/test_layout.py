"""`passes.layout` (note [transposed-layout]): a matrix filled and read column by
column in a loop is carried transposed, the statements reading it move onto the
transpose where that is free, and every value is unchanged: on the interpreter
(the reference semantics, run on the rewritten IR) and, bit for bit, against
numba without the pass."""
import numpy as np
import pytest

import pullback as pb
from pullback.backends import interp
from pullback.gradbench.modules.kmeans import (
    cost as columns,  # D[:, j] = ... per centroid
)
from pullback.gradbench.modules.kmeans import (
    direction as kmeans_dir,  # jvp of its gradient
)
from pullback.ir.core import Loop
from pullback.ir.traverse import iter_lets
from pullback.passes import layout
from pullback.passes.layout import transpose_layout


def added_and_read(C, P):               # += columns, column reads in the loop, operands of every kind
    D = np.ones((P.shape[0], C.shape[0]))
    t = np.zeros(P.shape[0])
    for j in range(C.shape[0]):
        D[:, j] += P @ C[j]
        t = t + D[:, j] * 0.5
    E = np.where(D > 0.0, D * t[:, None], -D) + C[:, 0] - 2.0
    return np.max(E, axis=0), np.sum(E, axis=1), np.min(np.exp(E) / np.sum(D), axis=1), E


def mixed(C, P):                        # an operand with no free transpose: the view is read
    D = np.zeros((P.shape[0], C.shape[0]))
    for j in range(C.shape[0]):
        D[:, j] = P[:, j % P.shape[1]] * C[j, 0]
    return D * np.ones((P.shape[0], C.shape[0])) + D, np.max(D, axis=1)


def masked(C, P):                       # an operand computed elementwise from a broadcast: transposed too
    D = np.zeros((P.shape[0], C.shape[0]))
    for j in range(C.shape[0]):
        D[:, j] = P[:, 1] - C[j, 1]
    b = np.broadcast_to(P[:, :1] - 1.0, D.shape)
    E = np.where((b > 0.0) | np.isnan(D), 0.0, D * b)
    for j in range(C.shape[0]):
        E[:, j] = E[:, j] * 2.0
    return E


def abandoned(C, P):                    # an operand transposed, then the statement refused: forgotten
    D = np.zeros((P.shape[0], C.shape[0]))
    for j in range(C.shape[0]):
        D[:, j] = P[:, 1] * C[j, 1]
    m = np.broadcast_to(P[:, :1], D.shape) * 2.0
    E = np.where(m > 1.0, D, P @ C.T)
    F = D + m
    return E, np.min(F, axis=1)


def rows_too(C, P):                     # a row read of the chain: not carried transposed
    D = np.zeros((P.shape[0], C.shape[0]))
    s = 0.0
    for j in range(C.shape[0]):
        D[:, j] = P[:, 0] * C[j, 0]
        s = s + np.sum(D[0])
    return D, s


def in_a_branch(C, P):                  # the chain read inside an `if`: not carried transposed
    D = np.zeros((P.shape[0], C.shape[0]))
    for j in range(C.shape[0]):
        D[:, j] = P[:, 0] * C[j, 0]
        if C[j, 1] > 0:
            D[:, j] = D[:, j] * 2.0
    return np.min(D, axis=1)


def nans(C, P):                         # NaN wins in min/max over the transposed layout's leading axis
    D = np.zeros((P.shape[0], C.shape[0]))
    for j in range(C.shape[0]):
        D[:, j] = np.log(P[:, 0] - C[j, 0])
    return np.min(D, axis=1), np.max(D, axis=1)


def staged(f, *args):
    return pb.jit(f).staged(*args).prog


def loops(prog):
    return [st for f in prog.funcs for st in iter_lets(f.body) if isinstance(st.exp, Loop)]


def args_for(rng, k=5, n=7, d=3):
    return rng.uniform(0.5, 1.5, (k, d)), rng.uniform(0.0, 3.0, (n, d))


@pytest.mark.parametrize("f, carried", [(columns, 1), (kmeans_dir, 2), (added_and_read, 1), (mixed, 1),
                                        (masked, 2), (abandoned, 1), (rows_too, 0), (in_a_branch, 0), (nans, 1)])
def test_values_unchanged_on_the_interpreter(f, carried):
    args = args_for(np.random.default_rng(0))
    prog = staged(f, *args)
    out = transpose_layout(prog)
    n_loops = sum(1 for st in loops(out) for p in st.exp.params if len(p.type.shape) == 2
                  and p.type.shape == (args[0].shape[0], args[1].shape[0]))
    assert n_loops == carried
    for got, want in zip(interp.run(out, *args), interp.run(prog, *args)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("f, exact", [(columns, True), (kmeans_dir, True),
                                      pytest.param(added_and_read, False, marks=pytest.mark.slow), (mixed, True),
                                      (masked, True), (abandoned, True), (nans, True)])
def test_numba_bit_for_bit(monkeypatch, f, exact):
    """Bit for bit, except where a full sum reads the transposed view (`np.sum(D)` in
    added_and_read): its additions come in another order."""
    pytest.importorskip("numba")
    from pullback.backends import numba_backend as nb

    args = args_for(np.random.default_rng(1))
    prog = staged(f, *args)
    got = nb.compile_prog(prog, parallel=False)(*args)
    monkeypatch.setattr(layout, "transpose_layout", lambda p: p)
    want = nb.compile_prog(prog, parallel=False)(*args)
    for g, w, r in zip(got, want, interp.run(prog, *args)):
        if exact:
            np.testing.assert_array_equal(g, w)
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=0)
        np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-12)


def test_kmeans_reads_rows():
    """The gradient's return sweep reads and clears rows of the transposed adjoint."""
    pytest.importorskip("numba")
    from pullback.backends import numba_backend as nb

    args = args_for(np.random.default_rng(2), k=6, n=9)
    src = nb.emit_prog(nb.lower(staged(kmeans_dir, *args)), parallel=False)
    assert "_reduce_lead_min_f64" in src
    assert "np.transpose" not in src, src
