"""Fills nobody sees (note [unobserved-fills]): a `full` that only starts a loop
which sets every row of it, one distinct row per iteration, before anything
reads it, is allocated with `np.empty`; results equal the interpreter's. Every
other fill is kept."""
import numpy as np
import pytest

pytest.importorskip("numba")

from pullback.backends import interp  # noqa: E402
from pullback.backends import numba_backend as nb  # noqa: E402
from pullback.ir.parser import parse_prog  # noqa: E402

PROG = """
entry def f(A: f64[4,3]) -> (f64[4,3]) {{
  let X: f64[4,3] = full(0.0:f64) {{shape=(4, 3)}}
  let Y: f64[4,3] = loop (R: f64[4,3] = X) for k: i64 < {n}:i64 {{
    let i: i64 = {index}
    let a: f64[3] = index(A, {row}) {{spec=(('d',), ('s', 0, 3, 1))}}
{extra}    let b: f64[3] = mul(a, 2.0:f64)
    let R2: f64[4,3] = index_update(R, b, i) {{mode='{mode}', spec={spec}}}
    yield (R2)
  }}
  return ({result})
}}
"""
BASE = dict(n=4, index="sub(3:i64, k)", row="i", extra="", mode="set", spec="(('d',), ('s', 0, 3, 1))",
            result="Y")
ROWREAD = "    let q: f64[3] = index(R, 0:i64) {spec=(('d',), ('s', 0, 3, 1))}\n    let a2: f64[3] = add(a, q)\n"


@pytest.mark.parametrize("change, empty", [
    ({}, True),
    ({"index": "add(k, 0:i64)"}, True),
    ({"n": 3, "index": "add(k, 0:i64)"}, False),                     # row 3 keeps its zeros
    ({"mode": "add"}, False),                                        # adds to the fill
    ({"spec": "(('d',), ('s', 0, 2, 1))"}, False),                   # part of each row
    ({"extra": ROWREAD}, False),                                     # reads row 0 before it is set
    ({"index": "sub(1:i64, k)", "n": 4}, False),                     # 1, 0, -1, -2: row 1 twice
])
def test_only_fully_overwritten_fills_are_empty(change, empty):
    p = {**BASE, **change}
    if p["spec"] != BASE["spec"]:
        text = PROG.format(**p).replace("let b: f64[3] = mul(a, 2.0:f64)",
                                        "let b0: f64[3] = mul(a, 2.0:f64)\n    let b: f64[2] = index(b0, ) "
                                        "{spec=(('s', 0, 2, 1),)}")
    else:
        text = PROG.format(**p)
    if p["extra"]:
        text = text.replace("mul(a, 2.0:f64)", "mul(a2, 2.0:f64)")
    prog = parse_prog(text)
    A = np.arange(12.0).reshape(4, 3) + 1.0
    fn = nb.compile_prog(prog, parallel=False)
    assert ("_pb_empty((4, 3)" in fn.source) == empty, fn.source
    np.testing.assert_array_equal(fn(A)[0], interp.run(prog, A)[0])
