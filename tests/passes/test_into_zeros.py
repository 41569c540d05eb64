"""`passes.into_zeros` (note [into-zeros]): an addition into a fresh zero array
read by nothing else becomes a write. Values are exact but for the sign of a
zero where the added value is -0 (`+0 + -0` is +0, the write keeps -0); each
case that must keep its addition keeps it."""
import numpy as np
import pytest

import pullback as pb
from pullback.backends import interp
from pullback.ir.core import Prim
from pullback.ir.parser import parse_prog
from pullback.ir.traverse import iter_lets
from pullback.passes.into_zeros import set_into_zeros

PROG = """
entry def f(v: {vt}[3,2], w: f64[5,4]) -> ({rets}) {{
  let z: {zt}[5,4] = full({fill}) {{shape=(5, 4)}}
  let u: {zt}[5,4] = index_update(z, v) {{mode='add', spec=(('s', 1, 4, 1), ('s', 2, 4, 1))}}
  {more}
  return ({result})
}}
"""


def program(fill="0.0:f64", vt="f64", zt="f64", more="", result="u", rets=None):
    return parse_prog(PROG.format(fill=fill, vt=vt, zt=zt, more=more, result=result, rets=rets or f"{zt}[5,4]"))


def modes(prog):
    return [st.exp.p["mode"] for f in prog.funcs for st in iter_lets(f.body)
            if isinstance(st.exp, Prim) and st.exp.op == "index_update"]


def args(vt="f64", zeros=False):
    r = np.random.default_rng(3)
    v = r.standard_normal((3, 2))
    if zeros:
        v[0, :] = -0.0
        v[1, 0] = 0.0
    return v.astype(np.int64) if vt == "i64" else v, r.standard_normal((5, 4))


CASES = {   # name -> (program, rewritten)
    "zeros": (program(), True),
    "integer zeros": (program(fill="0:i64", vt="i64", zt="i64"), True),
    "ones": (program(fill="1.0:f64"), False),
    "negative zero fill": (program(fill="-0.0:f64"), False),
    "zeros read again": (program(more="let t: f64[5,4] = add(z, w)", result="u, t", rets="f64[5,4], f64[5,4]"),
                         False),
    "value of another dtype": (program(vt="i64"), False),
}


@pytest.mark.parametrize("name", list(CASES))
def test_only_additions_into_unread_zeros_become_writes(name):
    prog, rewritten = CASES[name]
    out = set_into_zeros(prog)
    assert modes(out) == (["set"] if rewritten else ["add"])
    vt = "i64" if "integer" in name or "dtype" in name else "f64"
    for got, want in zip(interp.run(out, *args(vt)), interp.run(prog, *args(vt))):
        np.testing.assert_array_equal(got, want)
        assert np.array_equal(np.signbit(got), np.signbit(want))


def test_only_a_negative_zero_added_changes_sign():
    prog = program()
    (got,), (want,) = interp.run(set_into_zeros(prog), *args(zeros=True)), interp.run(prog, *args(zeros=True))
    np.testing.assert_array_equal(got, want)
    flipped = np.signbit(got) != np.signbit(want)
    assert flipped.sum() == 2 and (got[1, 2:4] == 0).all() and flipped[1, 2:4].all()


LOOP = """
entry def f(v: f64[2], n: i64) -> (f64[4]) {
  let a0: f64[4] = full(1.0:f64) {shape=(4,)}
  OUTER
  let (r: f64[4]) = loop (a: f64[4] = a0) for k: i64 < n {
    INNER
    let u: f64[4] = index_update(z, v) {mode='add', spec=(('s', 1, 3, 1),)}
    let a2: f64[4] = mul(a, u)
    yield (a2)
  }
  return (r)
}
"""


@pytest.mark.parametrize("where, rewritten", [("INNER", True), ("OUTER", False)])
def test_the_zeros_must_be_made_in_the_same_body(where, rewritten):
    """Made in the loop's body, a fresh zero array per iteration; made outside it, the
    update runs on the same array in every iteration (and is a copy there)."""
    z = "let z: f64[4] = full(0.0:f64) {shape=(4,)}"
    other = "OUTER" if where == "INNER" else "INNER"
    prog = parse_prog(LOOP.replace(where, z).replace(other, ""))
    out = set_into_zeros(prog)
    assert modes(out) == (["set"] if rewritten else ["add"])
    a = (np.array([0.5, -2.0]), 3)
    np.testing.assert_array_equal(interp.run(out, *a)[0], interp.run(prog, *a)[0])


def test_slice_adjoint_on_numba():
    """Reverse mode's adjoint of a slice is such an addition (ode's right-hand side):
    the numba module writes the slice into an array filled only outside it."""
    pytest.importorskip("numba")
    from pullback.backends import numba_backend as nb

    def f(x, y):
        return np.sum(np.sin(np.concatenate([x[:1], x[1:] * y[:-1]])) ** 2)

    rng = np.random.default_rng(4)
    x, y = rng.standard_normal(600), rng.standard_normal(600)
    prog = pb.jit(pb.grad(f, argnums=(0, 1))).staged(x, y).prog
    lowered = nb.lower(prog, False)
    assert "set" in modes(lowered)
    fn = nb.compile_prog(prog, parallel=False)
    assert "_pb_full((600,)" not in fn.source, fn.source
    for got, want in zip(fn(x, y), interp.run(prog, x, y)):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
