"""`passes.sum_matmul` (note [sum-matmul]): a row or column sum (or the full sum)
of a 2-D `matmul` that nothing else reads, possibly negated, sums an operand
first and multiplies a vector; values agree within rounding. Chains read
elsewhere, batched products, products made in an enclosing body and integer
sums are left as they are."""
import numpy as np
import pytest

import pullback as pb
from pullback.backends import interp
from pullback.ir.core import Prim
from pullback.ir.parser import parse_prog
from pullback.ir.traverse import iter_lets
from pullback.passes.sum_matmul import sum_matmul

PROG = """
entry def f(A: {ta}, B: {tb}) -> ({rets}) {{
  let P: {tp} = matmul(A, B)
  {chain}
  let s: {ts} = sum({last}) {{axes={axes}}}
  return ({result})
}}
"""


def matmuls(prog):
    return [st for f in prog.funcs for st in iter_lets(f.body)
            if isinstance(st.exp, Prim) and st.exp.op == "matmul"]


def _run(prog, *args):
    return interp.run(prog, *args)


def _prog(axes, negs=0, result="s", dtype="f64", extra_rets=""):
    n, k, m = 6, 4, 5
    chain, last = [], "P"
    for i in range(negs):
        chain.append(f"let N{i}: {dtype}[{n},{m}] = neg({last})")
        last = f"N{i}"
    ts = {(0,): f"{dtype}[{m}]", (1,): f"{dtype}[{n}]", (0, 1): dtype}[axes]
    rets = ts + extra_rets
    return parse_prog(PROG.format(ta=f"{dtype}[{n},{k}]", tb=f"{dtype}[{k},{m}]", tp=f"{dtype}[{n},{m}]",
                                  chain="\n  ".join(chain), last=last, ts=ts, axes=axes,
                                  result=result, rets=rets))


RNG = np.random.default_rng(1)
A = RNG.standard_normal((6, 4))
B = RNG.standard_normal((4, 5))


@pytest.mark.parametrize("axes", [(0,), (1,), (0, 1)])
@pytest.mark.parametrize("negs", [0, 1, 2])
def test_sums_move_inside_the_product(axes, negs):
    prog = _prog(axes, negs)
    out = sum_matmul(prog)
    (mm,) = matmuls(out)
    a, b = mm.exp.args
    assert (a.type.ndim == 1) == (0 in axes) and (b.type.ndim == 1) == (1 in axes)
    assert sum(st.exp.op == "neg" for f in out.funcs for st in iter_lets(f.body)
               if isinstance(st.exp, Prim)) == negs      # each negation now of the small result
    np.testing.assert_allclose(_run(out, A, B), _run(prog, A, B), rtol=1e-13, atol=1e-13)


def test_integer_sums_and_shared_products_are_left():
    assert sum_matmul(_prog((0,), dtype="i64")) == _prog((0,), dtype="i64")
    shared = _prog((0,), result="s, P", extra_rets=", f64[6,5]")        # the product is read again
    assert sum_matmul(shared) is shared
    negated = _prog((0,), negs=1, result="s, N0", extra_rets=", f64[6,5]")   # the negation too
    assert sum_matmul(negated) is negated


def test_batched_products_and_enclosing_bodies_are_left():
    batched = parse_prog("""
entry def f(A: f64[2,6,4], B: f64[2,4,5]) -> (f64[2,5]) {
  let P: f64[2,6,5] = matmul(A, B)
  let s: f64[2,5] = sum(P) {axes=(1,)}
  return (s)
}
""")
    assert sum_matmul(batched) is batched
    outer = parse_prog("""
entry def f(A: f64[6,4], B: f64[4,5]) -> (f64[5]) {
  let P: f64[6,5] = matmul(A, B)
  let z: f64[5] = full(0.0:f64) {shape=(5,)}
  let r: f64[5] = loop (acc: f64[5] = z) for k: i64 < 3:i64 {
    let s: f64[5] = sum(P) {axes=(0,)}
    let acc2: f64[5] = add(acc, s)
    yield (acc2)
  }
  return (r)
}
""")
    assert sum_matmul(outer) is outer   # the product is computed once, outside the loop


def shifted(mu, x, W):
    return np.sum(((x - mu) @ W) ** 2)


def shifted_grad(mu, x, W):
    return pb.grad(shifted, argnums=(0, 2))(mu, x, W)


@pytest.mark.parametrize("n", [50, 400])
def test_row_adjoint_of_a_product_costs_no_product(n):
    """The adjoint of `mu` in `(x - mu) @ W` (x not differentiated) is
    `-sum(G @ W.T, axis=0)`: after the pass the gradient does two (n, d) x (d, d)
    products (forward and W's adjoint), not three, at every n."""
    rng = np.random.default_rng(n)
    d = 8
    mu, x, W = rng.standard_normal(d), rng.standard_normal((n, d)), rng.standard_normal((d, d))
    prog = pb.jit(shifted_grad).staged(mu, x, W).prog
    out = sum_matmul(prog)
    big = lambda p: [st for st in matmuls(p) if any(a.type.size >= n * d for a in st.exp.args)]  # noqa: E731
    assert len(big(prog)) == 3 and len(big(out)) == 2
    work, want = [], pb.grad(shifted, argnums=(0, 2), backend="interp")(mu, x, W)
    for p in (prog, out):
        ops = interp.OpCount()
        got = interp.run(p, mu, x, W, ops=ops)
        work.append(ops.work)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-10)
    assert work[1] <= work[0] - 2 * n * d * d + 2 * n * d, work


def test_operand_sum_is_placed_next_to_the_operand():
    """so that the numba backend fuses it into the loop that computes the operand"""
    prog = parse_prog("""
entry def f(X: f64[6,4], B: f64[4,5]) -> (f64[5], f64[4,6]) {
  let A: f64[6,4] = exp(X)
  let T: f64[4,6] = transpose(A) {perm=(1, 0)}
  let P: f64[6,5] = matmul(A, B)
  let s: f64[5] = sum(P) {axes=(0,)}
  return (s, T)
}
""")
    out = sum_matmul(prog)
    ops = [(st.exp.op, [a.name for a in st.exp.args]) for st in out.funcs[0].body.stmts]
    assert [op for op, _ in ops] == ["exp", "sum", "transpose", "matmul"]
    assert ops[1][1] == ["A"]
    X = RNG.standard_normal((6, 4))
    for got, want in zip(_run(out, X, B), _run(prog, X, B)):
        np.testing.assert_allclose(got, want, rtol=1e-13)


def test_constant_operands():
    prog = parse_prog("""
entry def f(A: f64[3,2]) -> (f64[3]) {
  let P: f64[3,2] = matmul(A, const f64[2,2] [[1.0, 2.0], [3.0, -4.0]])
  let s: f64[3] = sum(P) {axes=(1,)}
  return (s)
}
""")
    out = sum_matmul(prog)
    assert [st.exp.args[1].type.ndim for st in matmuls(out)] == [1]
    A3 = RNG.standard_normal((3, 2))
    np.testing.assert_allclose(_run(out, A3)[0], A3 @ np.array([3.0, -1.0]), rtol=1e-13)
