"""Split-mode reverse through calls (note [split-calls]): linear time and memory
for recursion, counted on the interpreter (no timings), and the `checkpoint=`
keyword."""
from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.backends import interp
from pullback.checkpointing import Joint, Store
from pullback.frontend import stage
from pullback.passes.vjp import vjp_prog
from pullback.pytree import flatten


def chain(x, d):
    if d == 0:
        return x
    return np.sin(chain(x, d - 1)) * 1.01


def node(i, left, right, feat, w):
    if left[i] < 0:
        return np.tanh(feat[i] * w)
    return np.tanh(node(left[i], left, right, feat, w) * w + node(right[i], left, right, feat, w)) + feat[i]


def tree_sum(left, right, feat, w):
    return node(0, left, right, feat, w)


def balanced(leaves):
    """Arrays of child ids of a balanced binary tree with `leaves` leaves (root 0)."""
    left, right = [], []

    def build(n):
        i = len(left)
        left.append(-1)
        right.append(-1)
        if n > 1:
            a = build(n // 2)
            b = build(n - n // 2)
            left[i], right[i] = a, b
        return i

    build(leaves)
    return np.array(left, np.int64), np.array(right, np.int64)


def embed(i, left, right, ids, table):
    if left[i] < 0:
        return np.sum(np.sin(table[ids[i]]))
    return np.tanh(embed(left[i], left, right, ids, table) + 0.5 * embed(right[i], left, right, ids, table))


def counts(f, args, checkpoint):
    """(primal work, gradient work) on the interpreter, from the rows' cost rules."""
    st = stage(f, args)
    leaves, _ = flatten(tuple(args))
    p_ops = interp.OpCount()
    interp.run(st.prog, *leaves, ops=p_ops)
    vprog, name = vjp_prog(st.prog, checkpoint=checkpoint)
    cts = [1.0 for t in st.prog.main.ret_types]
    g_ops = interp.OpCount()
    interp.run(vprog, *leaves, *cts, fname=name, ops=g_ops)
    return p_ops, g_ops


def ratio(f, args, checkpoint=None):
    p, g = counts(f, args, checkpoint or Store())
    return g.stmts / p.stmts


def test_chain_gradient_is_linear_in_depth():
    r1 = ratio(chain, (0.3, np.int64(40)))
    r2 = ratio(chain, (0.3, np.int64(400)))
    assert r2 <= 6 and r2 <= 1.1 * r1, (r1, r2)


def test_the_count_catches_quadratic_joint_mode():
    """Joint mode re-executes each callee: its ratio grows with the depth, so the
    linear-time test above can fail."""
    r1 = ratio(chain, (0.3, np.int64(20)), Joint())
    r2 = ratio(chain, (0.3, np.int64(160)), Joint())
    assert r2 > 3 * r1


@pytest.mark.parametrize("n", [16, 128])
def test_tree_gradient_is_linear_in_nodes(n):
    left, right = balanced(n)
    feat = np.linspace(-1, 1, len(left))
    r = ratio(tree_sum, (left, right, feat, 0.7))
    assert r <= 6, r


def test_tree_ratio_is_flat():
    rs = []
    for n in (16, 512):
        left, right = balanced(n)
        rs.append(ratio(tree_sum, (left, right, np.linspace(-1, 1, len(left)), 0.7)))
    assert rs[1] <= 1.1 * rs[0], rs


def test_table_adjoint_is_not_dense_per_call():
    """A table passed to every node call: the gradient's work grows with the
    table size once (its zero adjoint), not once per call."""
    left, right = balanced(64)
    ids = np.arange(len(left)) % 7
    work = []
    for rows in (10, 1000):
        table = np.linspace(0, 1, rows * 3).reshape(rows, 3)
        _, g = counts(embed, (np.int64(0), left, right, ids, table), Store())
        work.append(g.work)
    calls = len(left)
    grown = work[1] - work[0]
    assert grown <= 4 * (1000 - 10) * 3, work          # a constant number of table-sized passes
    assert grown < calls * (1000 - 10) * 3 / 10, work  # far below one per call


def test_strategies_agree_and_match_finite_differences():
    for be in ("interp", "pysource"):
        g1 = pb.grad(chain, backend=be)(0.3, np.int64(30))
        g2 = pb.grad(chain, backend=be, checkpoint=pb.Joint())(0.3, np.int64(30))
        h = 1e-6
        fd = (chain(0.3 + h, 30) - chain(0.3 - h, 30)) / (2 * h)
        assert abs(g1 - g2) <= 1e-12 * max(1, abs(g1))
        assert abs(g1 - fd) <= 1e-6 * max(1, abs(fd))


def test_grad_of_grad_through_split_calls():
    def g(x, d):
        return pb.grad(chain)(x, d)

    for be in ("interp", "pysource"):
        gg = pb.grad(g, backend=be)(0.3, np.int64(6))
        hh = pb.hessian(chain, backend=be)(0.3, np.int64(6))
        h = 1e-5
        fd = (g(0.3 + h, np.int64(6)) - g(0.3 - h, np.int64(6))) / (2 * h)
        assert abs(gg - fd) <= 1e-6 and abs(hh - fd) <= 1e-6


def test_memory_report_counts_the_tape():
    m1 = pb.memory_report(chain, 0.3, np.int64(50))
    m2 = pb.memory_report(chain, 0.3, np.int64(100))
    j = pb.memory_report(chain, 0.3, np.int64(100), checkpoint=pb.Joint())
    assert m1.peak_bytes > 0 and 1.8 <= m2.peak_bytes / m1.peak_bytes <= 2.2
    assert j.peak_bytes < m2.peak_bytes
    assert m2.final_bytes == 0


def test_derivative_source_is_split():
    src = pb.derivative_source(chain, 0.3, np.int64(3))
    assert "def chain_fwd(" in src and "def chain_bwd(" in src
    bwd = src.split("def chain_bwd(")[1].split("\ndef ")[0]
    code = "\n".join(ln for ln in bwd.splitlines() if not ln.strip().startswith("#"))
    assert "chain(" not in code and "chain_fwd(" not in code   # the callee is not executed again
    assert ".pop()" in bwd and "# recompute of" in bwd         # it pops r; it recomputes d == 0
    joint = pb.derivative_source(chain, 0.3, np.int64(3), checkpoint=pb.Joint())
    assert "chain_fwd" not in joint


@pytest.mark.parametrize("bad", ["joint", 3, pb.Joint])
def test_bad_strategy_is_a_located_error(bad):
    for make in (lambda: pb.grad(chain, checkpoint=bad), lambda: pb.value_and_grad(chain, checkpoint=bad),
                 lambda: pb.jacobian(chain, checkpoint=bad), lambda: pb.hessian(chain, checkpoint=bad),
                 lambda: pb.memory_report(chain, 0.3, np.int64(2), checkpoint=bad),
                 lambda: pb.vjp(chain, 0.3, np.int64(2), checkpoint=bad)):
        with pytest.raises(pb.PullbackError) as ei:
            make()
        msg = str(ei.value)
        assert "checkpoint" in msg and "test_split_calls.py" in msg, msg


def test_strategies_are_values():
    assert pb.Joint() == pb.Joint() and hash(pb.Joint()) == hash(pb.Joint())
    assert pb.Store() != pb.Joint()
    assert repr(pb.Joint()) == "pb.Joint()"


def _donating_prog(use_after: bool):
    """g(y) donates y and writes y[0] = 1 in place; f passes a = x + x and, if
    `use_after`, still returns a after the call."""
    from pullback.ir.builder import Builder
    from pullback.ir.core import Body, Const, Func, Prog
    from pullback.ir.types import TensorType

    t = TensorType("f64", (3,))
    gb = Builder()
    y = gb.fresh("y", t)
    y2 = gb.emit("index_update", y, Const(1.0, TensorType("f64")), Const(0, TensorType("i64")),
                 spec=(("d",),), mode="set", name="y")
    g = Func("g", (y,), gb.body([y2]), (t,), donated=((0, 0),))
    fb = Builder()
    x = fb.fresh("x", t)
    a = fb.emit("add", x, x, name="a")
    (b,) = fb.apply("g", [a], [t], names=["b"])
    res = [a, b] if use_after else [b]
    f = Func("f", (x,), Body(tuple(fb.stmts), tuple(res)), tuple(r.type for r in res))
    return Prog((f, g), "f")


@pytest.mark.parametrize("use_after", [True, False])
def test_donated_argument_is_copied_when_the_caller_still_needs_it(use_after):
    from pullback.backends import pysource
    from pullback.ir.parser import parse_prog
    from pullback.ir.printer import print_prog
    from pullback.ir.typecheck import check_prog

    p = _donating_prog(use_after)
    check_prog(p)
    assert "donate(0->0)" in print_prog(p) and parse_prog(print_prog(p)) == p
    x = np.array([1.0, 2.0, 3.0])
    want = interp.run(p, x)
    got = pysource.run(p, x)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(w, g)
    src = pysource.emit_prog(p)
    assert (".copy()" in src.split("def f(")[1]) == use_after, src
    assert "y[0] = 1.0" in src.split("def g(")[1], src   # in place in the callee


def test_bad_donation_is_a_type_error():
    import dataclasses

    from pullback.ir.typecheck import check_prog

    p = _donating_prog(False)
    bad = p.with_funcs([p.funcs[0], dataclasses.replace(p.funcs[1], donated=((0, 5),))])
    with pytest.raises(Exception, match="donates parameter 0 as result 5"):
        check_prog(bad)


def even(x, n):
    if n == 0:
        return x
    return odd(np.cos(x) + x, n - 1)


def odd(x, n):
    if n == 0:
        return -x
    k = 0
    y = x
    while k < 2:
        y = y * 0.9 + np.sin(y)
        k += 1
    return even(y, n - 1)


@pytest.mark.parametrize("checkpoint", ["store", pb.Joint()], ids=["store", "joint"])
def test_mutual_recursion_with_a_loop_on_numba(checkpoint):
    """numba could not link the inlined store helpers into mutually recursive
    functions ("unresolved symbol"): such modules call them instead."""
    want = pb.grad(even, backend="interp")(0.2, np.int64(7))
    got = pb.grad(even, backend="numba", checkpoint=checkpoint)(0.2, np.int64(7))
    assert abs(got - want) <= 1e-12 * max(1.0, abs(want))
