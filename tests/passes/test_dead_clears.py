"""`passes.dead_clears` (note [dead-clears]): a loop that reads each slice of a
carried array once and then clears it, at an index naming a different slice in
every iteration, with the array unused after the loop, keeps the slices
instead of clearing them; every value is unchanged. Anything else is left as
it is."""
import numpy as np
import pytest

import pullback as pb
from pullback.backends import interp
from pullback.gradbench.modules.kmeans import direction
from pullback.ir.core import Loop, Prim
from pullback.ir.parser import parse_prog
from pullback.ir.traverse import iter_lets
from pullback.passes.dead_clears import dead_clears

PROG = """
entry def f(X: f64[4,3]) -> ({rets}) {{
  let (Y: f64[4,3], s: f64) = loop (A: f64[4,3] = X, acc: f64 = 0.0:f64) for k: i64 < {n}:i64 {{
    let i: i64 = {index}
    let r: f64[4] = index(A, {read}) {{spec=(('s', 0, 4, 1), ('d',))}}
    let A2: f64[4,3] = index_update(A, 0.0:f64, i) {{mode='set', spec=(('s', 0, 4, 1), ('d',))}}
    let t: f64 = sum(r) {{axes=(0,)}}
    let acc2: f64 = add(acc, t)
    yield (A2, acc2)
  }}
  return ({result})
}}
"""


def clears(prog):
    return [st for f in prog.funcs for st in iter_lets(f.body)
            if isinstance(st.exp, Prim) and st.exp.op == "index_update" and st.exp.p["mode"] == "set"]


@pytest.mark.parametrize("index, n, read, result, dropped", [
    ("sub(2:i64, k)", 3, "i", "s", True),           # 2, 1, 0
    ("add(k, 0:i64)", 3, "i", "s", True),
    ("sub(k, 3:i64)", 3, "i", "s", True),           # -3, -2, -1: all from the end
    ("sub(1:i64, k)", 3, "i", "s", False),          # 1, 0, -1: both signs: refused (conservative)
    ("sub(k, 2:i64)", 4, "i", "s", False),          # -2, -1, 0, 1: slice 1 twice (-2 and 1)
    ("sub(2:i64, k)", 3, "i", "s, Y", False),       # the cleared array is read after the loop
    ("sub(2:i64, k)", 3, "0:i64", "s", False),      # reads another slice than it clears
])
def test_only_unobserved_clears_are_dropped(index, n, read, result, dropped):
    rets = "f64, f64[4,3]" if "Y" in result else "f64"
    prog = parse_prog(PROG.format(index=index, n=n, read=read, result=result, rets=rets))
    out = dead_clears(prog)
    assert (len(clears(out)) == 0) == dropped
    X = np.arange(12.0).reshape(4, 3) + 1.0
    for got, want in zip(interp.run(out, X), interp.run(prog, X)):
        np.testing.assert_array_equal(got, want)


def test_kmeans_return_sweep_reads_without_clearing():
    rng = np.random.default_rng(0)
    P = rng.uniform(size=(30, 2))
    C = P[:4] + 1e-3
    prog = pb.jit(direction).staged(C, P).prog
    out = dead_clears(prog)
    assert len(clears(out)) < len(clears(prog))
    loops = [st for f in out.funcs for st in iter_lets(f.body) if isinstance(st.exp, Loop)]
    assert loops
    for got, want in zip(interp.run(out, C, P), interp.run(prog, C, P)):
        np.testing.assert_array_equal(got, want)
