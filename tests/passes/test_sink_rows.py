"""`passes.sink_rows` (note [sink-rows]): an elementwise array that a loop reads
once per iteration, one distinct row each time, and that nothing else reads, is
computed row by row in the loop instead of materialised before it (its cheap
elementwise operands too). Values are unchanged; anything else is left as it is."""
import numpy as np
import pytest

import pullback as pb
from pullback.backends import interp
from pullback.gradbench.modules.kmeans import direction
from pullback.ir.core import Loop, Prim
from pullback.ir.parser import parse_prog
from pullback.ir.traverse import iter_lets
from pullback.passes.sink_rows import sink_rows

PROG = """
entry def f(A: f64[4,3], B: f64[4,3], v: f64[1,3]) -> ({rets}) {{
  let E: f64[4,3] = {inner}
  let X: f64[4,3] = {x0}
  let Z: f64[3] = full(0.0:f64) {{shape=(3,)}}
  let (Y: f64[4,3], s: f64[3]) = loop (R: f64[4,3] = X, acc: f64[3] = Z) for k: i64 < {n}:i64 {{
    let i: i64 = {index}
    let r: f64[3] = index(R, i) {{spec=(('d',), ('s', 0, 3, 1))}}
{extra}    let acc2: f64[3] = add(acc, {use})
    yield (R, acc2)
  }}
  return ({result})
}}
"""

BASE = dict(inner="sub(A, B)", x0="mul(E, v)", n=4, index="sub(3:i64, k)", use="r", result="s", extra="")
ROW0 = "    let r0: f64[3] = index(R, 0:i64) {spec=(('d',), ('s', 0, 3, 1))}\n    let r1: f64[3] = add(r, r0)\n"
COLS = "    let r0: f64[3] = sum(R) {axes=(0,)}\n    let r1: f64[3] = add(r, r0)\n"


def reads_of(prog, name):
    """Statements that index the variable called `name` inside a loop body."""
    out = []
    for f in prog.funcs:
        for st in iter_lets(f.body):
            if isinstance(st.exp, Loop):
                out += [s for s in iter_lets(st.exp.body) if isinstance(s.exp, Prim) and s.exp.op == "index"
                        and getattr(s.exp.args[0], "name", None) == name]
    return out


def run_both(prog, *args):
    out = sink_rows(prog)
    for got, want in zip(interp.run(out, *args), interp.run(prog, *args)):
        np.testing.assert_array_equal(got, want)
    return out


ARGS = (np.arange(12.0).reshape(4, 3) + 1.0, np.linspace(-1.0, 1.0, 12).reshape(4, 3),
        np.array([[2.0, -0.5, 3.0]]))


@pytest.mark.parametrize("change, sunk", [
    ({}, True),
    ({"index": "add(k, 0:i64)"}, True),
    ({"index": "sub(k, 4:i64)"}, True),                        # -4 .. -1: all from the end
    ({"index": "sub(1:i64, k)", "n": 3}, False),                # 1, 0, -1: both signs (conservative)
    ({"index": "mul(k, 0:i64)"}, False),                        # row 0 every iteration (not +-k + c)
    ({"extra": ROW0, "use": "r1"}, False),                      # another row read too
    ({"extra": COLS, "use": "r1"}, False),                      # read by another primitive too
    ({"result": "s, Y", "rets": "f64[3], f64[4,3]"}, False),    # the array is used after the loop
    ({"result": "s, X", "rets": "f64[3], f64[4,3]"}, False),    # its value is used elsewhere
])
def test_only_single_distinct_row_reads_are_sunk(change, sunk):
    prog = parse_prog(PROG.format(**{**BASE, "rets": "f64[3]", **change}))
    out = run_both(prog, *ARGS)
    assert (not reads_of(out, "R") and bool(reads_of(out, "A"))) == sunk


def test_transcendental_operands_are_read_not_recomputed():
    prog = parse_prog(PROG.format(**dict(BASE, inner="exp(A)", rets="f64[3]")))
    out = run_both(prog, *ARGS)
    assert reads_of(out, "E") and not reads_of(out, "R")       # exp(A) stays one materialised array
    assert not any(isinstance(s.exp, Prim) and s.exp.op == "exp"
                   for f in out.funcs for st in iter_lets(f.body) if isinstance(st.exp, Loop)
                   for s in iter_lets(st.exp.body))


def free_rows(A, B):
    X = A * B + 1.0
    out = np.zeros(A.shape[1])
    for j in range(A.shape[0]):
        out = out + np.sin(X[A.shape[0] - 1 - j])
    return out


def free_rows_twice(A, B):
    X = A * B + 1.0
    out = np.zeros(A.shape[1])
    for j in range(A.shape[0]):
        out = out + np.sin(X[j // 2])                # rows read twice: not sunk
    return out


@pytest.mark.parametrize("f, sunk", [(free_rows, True), (free_rows_twice, False)])
def test_free_array_read_by_rows(f, sunk):
    A, B = ARGS[0], ARGS[1]
    prog = pb.jit(f).staged(A, B).prog
    out = run_both(prog, A, B)
    assert (not reads_of(out, "X")) == sunk


def test_kmeans_adjoint_is_not_materialised():
    """The return sweep's D_adj (a mask times 1 / count) is computed per centroid."""
    from pullback.passes.dead_clears import dead_clears
    from pullback.passes.layout import transpose_layout

    rng = np.random.default_rng(0)
    P = rng.uniform(size=(30, 2))
    C = P[:4] + 1e-3
    prog = transpose_layout(dead_clears(pb.jit(direction).staged(C, P).prog))  # as numba_backend.lower
    out = run_both(prog, C, P)
    carried = [p.name for f in out.funcs for st in iter_lets(f.body) if isinstance(st.exp, Loop)
               for p in st.exp.params]
    assert not any(n.startswith("D_adj") for n in carried), carried
    assert any(n.startswith("D_adj") for f in prog.funcs for st in iter_lets(f.body)
               if isinstance(st.exp, Loop) for n in (p.name for p in st.exp.params))


NARROW = """
entry def f(A: f64[4,3], B: f64[4,3]) -> ({rets}) {{
  let M: bool[4,3] = lt(A, B)
  let F: f64[4,3] = cast(M) {{dtype='f64'}}
  let S: f64[3] = sum(F) {{axes=(0,)}}
  let X: f64[4,3] = mul(F, A)
  let Z: f64[3] = full(0.0:f64) {{shape=(3,)}}
  let s: f64[3] = loop (acc: f64[3] = Z) for k: i64 < 4:i64 {{
    let r: f64[3] = index(X, k) {{spec=(('d',), ('s', 0, 3, 1))}}
    let acc2: f64[3] = add(acc, r)
    yield (acc2)
  }}
  return ({result})
}}
"""


@pytest.mark.parametrize("result, rets, mask_read", [("s, S", "f64[3], f64[3]", True), ("s", "f64[3]", False)])
def test_narrow_values_computed_anyway_are_read(result, rets, mask_read):
    """The bool mask M, computed anyway for S, is read (1 byte per element) rather
    than recomputed from A and B (16); without S nothing computes it, so it is
    recomputed."""
    prog = parse_prog(NARROW.format(result=result, rets=rets))
    out = run_both(prog, *ARGS[:2])
    assert not reads_of(out, "X")
    assert bool(reads_of(out, "M")) == mask_read and bool(reads_of(out, "B")) != mask_read
    assert not reads_of(out, "F")


@pytest.mark.parametrize("n, k", [(30, 4), (240, 32)])
def test_recomputed_rows_cost_at_most_a_constant_more(n, k):
    """Cheap-gradient invariant: computing the rows in the loop costs a constant
    factor of the materialised arrays' work, at two sizes (interpreter op counts)."""
    from pullback.backends.interp import OpCount
    from pullback.passes.dead_clears import dead_clears
    from pullback.passes.layout import transpose_layout

    rng = np.random.default_rng(0)
    P = rng.uniform(size=(n, 2))
    C = P[:k] + 1e-3
    prog = transpose_layout(dead_clears(pb.jit(direction).staged(C, P).prog))
    before, after = OpCount(), OpCount()
    interp.run(prog, C, P, ops=before)
    interp.run(sink_rows(prog), C, P, ops=after)
    assert after.work <= 1.1 * before.work, (after.work, before.work)
