"""A value that a fitting push saves is computed straight into the slot the push
fills, so the push copies nothing (`numba_stores.slot_values`, note
[numba-stores] "Values computed in their slot"): fused loops write the slot,
and a 2-D float product is `np.dot(a, b, slot)`. A value that is changed in
place after it is saved, or that leaves the loop body, keeps its own array and
the copying push."""
import numpy as np
import pytest

import pullback as pb
from pullback.backends import interp
from pullback.backends import numba_backend as nb
from pullback.backends.numba_stores import fitting_pushes, slot_values
from pullback.ir.core import Loop
from pullback.ir.traverse import use_counts
from pullback.ir.parser import parse_prog

pytest.importorskip("numba")


def saved_tanh(x, W):
    s = 0.0
    for i in range(W.shape[0]):
        t = np.tanh(x * W[i])            # saved for the return sweep
        s = s + np.sum(t * t)
    return s


def saved_product(A, B):
    s = 0.0
    for j in range(B.shape[0]):
        Q = A @ B[j]                     # a BLAS product, saved (gmm's Qx)
        s = s + np.sum(np.tanh(Q) * Q)
    return s


def carried(x, W):
    for i in range(W.shape[0]):
        x = np.tanh(x * W[i])            # saved, and carried to the next iteration
    return np.sum(x)


RNG = np.random.default_rng(3)
X, W = RNG.normal(size=5), RNG.normal(size=(4, 5))
A, B = RNG.normal(size=(60, 24)), RNG.normal(size=(3, 24, 24)) / 5   # 60 * 24 * 24 > SMALL_MATMUL


def _source(f, *args):
    return nb.emit_prog(nb.lower(pb.jit(pb.grad(f), backend="numba").staged(*args).prog))


@pytest.mark.parametrize("f,args", [(saved_tanh, (X, W)), (saved_product, (A, B)), (carried, (X, W))])
def test_gradients_match_the_interpreter(f, args):
    np.testing.assert_allclose(pb.jit(pb.grad(f), backend="numba")(*args),
                               pb.jit(pb.grad(f), backend="interp")(*args), rtol=1e-12, atol=1e-14)


def test_fused_value_is_written_in_its_slot():
    src = _source(saved_tanh, X, W)
    assert "t_4 = t_saved[0][t_saved[1]]" in src
    assert "t_saved = (t_saved[0], t_saved[1] + 1)  # pb:store_push" in src   # no copy
    assert "st_a0" not in src


def test_product_is_computed_in_its_slot():
    src = _source(saved_product, A, B)
    assert "Q = _pb_matmul_out(A, t, Q_saved[0][Q_saved[1]])" in src
    assert "Q_saved = (Q_saved[0], Q_saved[1] + 1)  # pb:store_push" in src   # no copy


def test_carried_value_is_copied():
    src = _source(carried, X, W)
    assert "_saved[0][" not in src and "st_a0" in src


# the saved value is updated after the push (its last use)
UPDATED = """entry def f(x: f64[5], W: f64[4,5]) -> (f64[5]) {
  let s0: store<f64[5]> = store_new() {cap=4, elem=f64[5]}
  let (s3: store<f64[5]>, acc: f64[5]) = loop (s1: store<f64[5]> = s0, a: f64[5] = x) for i: i64 < 4:i64 {
    let t: f64[5] = index(W, i) {spec=(('d',),)}
    let t_2: f64[5] = mul(x, t)
    let v: f64[5] = tanh(t_2)
    let s2: store<f64[5]> = store_push(s1, v)
    let w: f64[5] = index_update(v, 2.0:f64, 0:i64) {mode='set', spec=(('d',),)}
    let a2: f64[5] = add(a, w)
    yield (s2, a2)
  }
  let (s5: store<f64[5]>, tot: f64[5]) = loop (s4: store<f64[5]> = s3, b: f64[5] = acc) for k: i64 < 4:i64 {
    let (s6: store<f64[5]>, u: f64[5]) = store_pop(s4)
    let b2: f64[5] = add(b, u)
    yield (s6, b2)
  }
  return (tot)
}
"""


def test_update_after_the_push_reads_the_saved_value():
    prog = parse_prog(UPDATED)
    np.testing.assert_allclose(nb.run(prog, X, W)[0], interp.run(prog, X, W)[0], rtol=1e-13)


class _Own:
    """An ownership analysis's answers: which statements update in place."""

    def __init__(self, inplace=()):
        self.inplace, self.inplace_add = set(inplace), {}


def test_value_updated_in_place_is_not_a_slot():
    """Ownership copies `v` here (a saved value is never owned); were the update
    done in place, the slot would change after the push: `slot_values` refuses."""
    prog = parse_prog(UPDATED)
    f = prog.funcs[0]
    loop = next(st.exp for st in f.body.stmts if isinstance(st.exp, Loop))
    fitting = fitting_pushes(f.body, use_counts(f.body))
    v = next(st.pat[0] for st in loop.body.stmts if st.pat[0].name == "v")
    update = next(st for st in loop.body.stmts if st.pat[0].name == "w")
    assert list(slot_values(loop.body, fitting, _Own())) == [v]
    assert slot_values(loop.body, fitting, _Own([id(update)])) == {}
