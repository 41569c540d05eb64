"""Call sites passing scalar constants call specialised copies
(`passes.specialize_calls`, note [seed-constants]); copies called from one body
with the same other arguments are inlined there and share their work; the
simplifier folds the guards that constant 0/1 tangents leave
(`simplify._scalar_rule`). Values are the interpreter's, before and after."""
import math

import numpy as np
import pytest

import pullback as pb
from pullback.backends import interp
from pullback.backends import numba_backend as nb
from pullback.ir.core import Apply, Const, Loop, Prim
from pullback.ir.parser import parse_prog
from pullback.ir.traverse import iter_lets
from pullback.passes import specialize_calls as sc
from pullback.passes.simplify import simplify_func

G = """def g(x: f64, a: f64) -> (f64) {
  let s: f64 = sin(x)
  let y: f64 = mul(s, a)
  let z: f64 = add(y, a)
  return (z)
}
"""


def calls(prog, fname=None):
    return [st.exp for f in prog.funcs if fname in (None, f.name) for st in iter_lets(f.body)
            if isinstance(st.exp, Apply)]


def count(prog, op, fname):
    return sum(1 for st in iter_lets(prog.func(fname).body) if isinstance(st.exp, Prim) and st.exp.op == op)


def same_values(a, b, args):
    for x, y in zip(interp.run(a, *args), interp.run(b, *args)):
        np.testing.assert_array_equal(x, y)


def test_constant_sites_call_copies_and_others_the_function():
    prog = parse_prog(G + """entry def f(x: f64, y: f64) -> (f64, f64, f64) {
  let p: f64 = call g(x, 2.0:f64)
  let q: f64 = call g(y, 3.0:f64)
  let r: f64 = call g(x, y)
  return (p, q, r)
}
""")
    out = sc.specialize_calls(prog)
    sites = calls(out, "f")
    assert [e.func for e in sites].count("g") == 1                       # g(x, y) keeps g
    copies = [out.func(e.func) for e in sites if e.func != "g"]
    assert len(copies) == 2 and all(len(c.params) == 1 for c in copies)  # the constant moved inside
    assert not any(isinstance(a, Const) for e in sites for a in e.args)
    same_values(prog, out, (0.7, -1.3))


def test_copies_at_one_point_are_merged_and_share_their_work():
    prog = parse_prog(G + """entry def f(x: f64) -> (f64, f64) {
  let p: f64 = call g(x, 2.0:f64)
  let q: f64 = call g(x, 3.0:f64)
  return (p, q)
}
""")
    out = sc.specialize_calls(prog)
    assert not calls(out, "f")                  # both inlined ...
    assert count(out, "sin", "f") == 1          # ... and sin(x) computed once
    same_values(prog, out, (0.4,))


G3 = """def g(x: f64, a: f64, c: f64) -> (f64) {
  let s: f64 = sin(x)
  let y: f64 = mul(s, a)
  let z: f64 = add(y, c)
  return (z)
}
"""


def test_copies_sharing_some_arguments_are_merged_in_loops_only():
    # the vjps of jacfwd's directions at one point: the same point, different cotangents
    prog = parse_prog(G3 + """entry def f(x: f64, u: f64, v: f64, n: i64) -> (f64, f64, f64) {
  let p: f64 = call g(x, 2.0:f64, u)
  let q: f64 = call g(x, 3.0:f64, v)
  let r: f64 = loop (acc: f64 = 0.0:f64) for i: i64 < n {
    let a1: f64 = call g(x, 2.0:f64, u)
    let a2: f64 = call g(x, 3.0:f64, v)
    let a3: f64 = add(a1, a2)
    let acc2: f64 = add(acc, a3)
    yield (acc2)
  }
  return (p, q, r)
}
""")
    out = sc.specialize_calls(prog)
    f = out.func("f")
    top = [st.exp for st in f.body.stmts if isinstance(st.exp, Apply)]
    loop = next(st.exp for st in f.body.stmts if isinstance(st.exp, Loop))
    assert len(top) == 2                                              # outside the loop: calls kept
    assert not any(isinstance(st.exp, Apply) for st in iter_lets(loop.body))   # in it: merged
    assert sum(1 for st in iter_lets(loop.body) if isinstance(st.exp, Prim) and st.exp.op == "sin") == 1
    same_values(prog, out, (0.4, 1.5, -0.5, np.int64(3)))


def test_too_many_constants_leave_the_function_alone():
    n = sc.MAX_CLONES + 1
    lines = "\n".join(f"  let p{k}: f64 = call g(x{k}, {k + 1}.0:f64)" for k in range(n))
    params = ", ".join(f"x{k}: f64" for k in range(n))
    prog = parse_prog(G + f"entry def f({params}) -> ({', '.join(['f64'] * n)}) {{\n{lines}\n"
                      f"  return ({', '.join(f'p{k}' for k in range(n))})\n}}\n")
    out = sc.specialize_calls(prog)
    assert {e.func for e in calls(out)} == {"g"}


def _simplified(body: str, params: str, ret: str):
    prog = parse_prog(f"entry def f({params}) -> ({ret}) {{\n{body}\n}}\n")
    return prog, prog.with_funcs([simplify_func(prog.func("f"))])


def test_guards_of_constant_tangents_fold():
    # smul(1, d) and smul(0, d) as a derivative rule writes them (note [edge-numerics]), after
    # the constant's comparison folded: `(1 == 0) | (d == 0)` -> d == 0, `(0 == 0) | ...` -> True
    body = """  let r1: f64 = mul(d, 1.0:f64)
  let n1: bool = isnan(r1)
  let e1: bool = eq(d, 0.0:f64)
  let f1: bool = or(false:bool, e1)
  let c1: bool = and(n1, f1)
  let w1: f64 = where(c1, 0.0:f64, r1)
  let r0: f64 = mul(0.0:f64, d)
  let n0: bool = isnan(r0)
  let t0: bool = or(true:bool, e1)
  let c0: bool = and(n0, t0)
  let w0: f64 = where(c0, 0.0:f64, r0)
  let s0: f64 = smul(0.0:f64, d)
  let s1: f64 = smul(d, 1.0:f64)
  return (w1, w0, s0, s1)"""
    prog, out = _simplified(body, "d: f64", "f64, f64, f64, f64")
    body_out = out.func("f").body
    assert not any(isinstance(st.exp, Prim) and st.exp.op in ("where", "isnan", "smul") for st in body_out.stmts)
    for d in (1.5, -2.0, 0.0, math.inf, -math.inf, math.nan):
        got, want = interp.run(out, d), interp.run(prog, d)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(np.nan_to_num(got), np.nan_to_num(want))   # up to the sign of a zero


def test_a_plain_product_by_zero_is_not_folded():
    # 0 * inf is NaN: without the guard there is nothing to fold
    prog, out = _simplified("  let r: f64 = mul(0.0:f64, d)\n  return (r)", "d: f64", "f64")
    assert any(isinstance(st.exp, Prim) and st.exp.op == "mul" for st in out.func("f").body.stmts)
    assert math.isnan(interp.run(out, math.inf)[0])


# -- end to end: an inner jacfwd at every step of a loop (GradBench particle's "ff") ----------

def pot(x, w):
    c = np.array([1.0, w])
    return 1.0 / np.sqrt(np.sum((x - c) ** 2)) + 1.0 / np.sqrt(np.sum(x * x))


def traj(w):
    x, v = np.array([0.0, 2.0]), np.array([0.5, 0.0])
    k = 0
    while x[1] > 0.0 and k < 200:
        v = v - 0.1 * pb.jacfwd(pot)(x, w)
        x = x + 0.1 * v
        k += 1
    return x[0] ** 2


def dtraj(w):
    return pb.jacfwd(lambda u: traj(u[0]))(np.array([w]))


def test_inner_jacfwd_in_a_loop_is_specialised_merged_and_agrees():
    w = 0.3
    prog = nb.lower(pb.jit(dtraj, backend="numba").staged(w).prog)
    in_loops = [e for f in prog.funcs for st in iter_lets(f.body) if isinstance(st.exp, Loop)
                for st2 in iter_lets(st.exp.body) for e in [st2.exp] if isinstance(e, Apply)]
    assert not in_loops, in_loops          # each step's two directions: inlined, their primal shared
    got = pb.jit(dtraj, backend="numba")(w)
    want = pb.jit(dtraj, backend="interp")(w)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    h = 1e-6
    fd = (pb.jit(traj, backend="interp")(w + h) - pb.jit(traj, backend="interp")(w - h)) / (2 * h)
    np.testing.assert_allclose(got[0], fd, rtol=1e-5)


@pytest.mark.parametrize("steps", [(8, 32)])
def test_interpreted_work_does_not_grow(steps):
    """Cheap derivatives: specialisation only removes work; the interpreter's count of the
    lowered program stays at or below the staged one's, at two trip counts."""
    def scaled(w, n):
        x, v = np.array([0.0, 2.0]), np.array([0.5, 0.0])
        k = 0
        while k < n:
            v = v - 0.01 * pb.jacfwd(pot)(x, w)
            x = x + 0.01 * v
            k += 1
        return x[0] ** 2

    def d(w, n):
        return pb.jacfwd(lambda u: scaled(u[0], n))(np.array([w]))

    for n in steps:
        staged = pb.jit(d, backend="interp").staged(0.3, np.int64(n)).prog
        work = []
        for p in (staged, nb.lower(staged)):
            ops = interp.OpCount()
            interp.run(p, 0.3, np.int64(n), ops=ops)
            work.append(ops.work)
        assert work[1] <= work[0], (n, work)
