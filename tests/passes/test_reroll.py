"""`passes.reroll` (note [reroll]): a run of alike statement groups becomes one loop
over the groups, their results kept in stacked arrays; values are bitwise unchanged,
and what does not fit (too few groups, scalar groups, operands from unrelated
values) is left as it is."""
import numpy as np
import pytest

import pullback as pb
from pullback.backends import interp
from pullback.backends import numba_backend as nb
from pullback.ir.core import Loop, Prim
from pullback.ir.parser import parse_prog
from pullback.ir.traverse import iter_lets
from pullback.passes.reroll import RMIN, reroll


def chain_prog(parents, n=4, stacked=True):
    """GradBench ht's kinematic chain, as staging unrolls it: A[0] = rel[0],
    A[i] = A[parents[i]] @ rel[i], then (optionally) np.stack(A) @ B."""
    nb_ = len(parents)
    t = f"f64[{n},{n}]"
    lines = [f"  let a0: {t} = index(rel, 0:i64) {{spec=(('d',),)}}"]
    for i in range(1, nb_):
        lines.append(f"  let r{i}: {t} = index(rel, {i}:i64) {{spec=(('d',),)}}")
        lines.append(f"  let a{i}: {t} = matmul(a{parents[i]}, r{i})")
    if stacked:
        for i in range(nb_):
            lines.append(f"  let s{i}: f64[1,{n},{n}] = reshape(a{i}) {{shape=(1, {n}, {n})}}")
        pieces = ", ".join(f"s{i}" for i in range(nb_))
        lines.append(f"  let st: f64[{nb_},{n},{n}] = concatenate({pieces}) {{axis=0}}")
        lines.append(f"  let out: f64[{nb_},{n},{n}] = matmul(st, B)")
        ret, res = f"f64[{nb_},{n},{n}], {t}", f"out, a{nb_ - 1}"
    else:
        ret, res = t, f"a{nb_ - 1}"
    body = "\n".join(lines)
    return parse_prog(f"entry def f(rel: f64[{nb_},{n},{n}], B: f64[{n},{n}]) -> ({ret}) {{\n{body}\n"
                      f"  return ({res})\n}}\n")


def args_for(nbones, n=4, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(nbones, n, n)) * 0.5, rng.normal(size=(n, n))


def loops(prog):
    return [st for f in prog.funcs for st in iter_lets(f.body) if isinstance(st.exp, Loop)]


def count(prog, op):
    return sum(1 for f in prog.funcs for st in iter_lets(f.body) if isinstance(st.exp, Prim) and st.exp.op == op)


def same_values(a, b, args):
    for x, y in zip(interp.run(a, *args), interp.run(b, *args)):
        np.testing.assert_array_equal(x, y)


CHAIN = [-1] + list(range(21))                                     # every bone the previous one's child
HAND = [-1, 0, 1, 2, 3, 0, 5, 6, 7, 0, 9, 10, 11, 0, 13, 14, 15, 0, 17, 18, 19, 1]   # a tree: five fingers


@pytest.mark.parametrize("parents", [CHAIN, HAND], ids=["chain", "tree"])
def test_chain_becomes_one_loop_and_the_stack_is_its_array(parents):
    prog = chain_prog(parents)
    out = reroll(prog)
    same_values(prog, out, args_for(len(parents)))
    assert len(loops(out)) == 1
    assert count(out, "matmul") == 2                  # the chain's, in the loop, and the final product
    assert count(out, "concatenate") == 0             # np.stack of the chain is the loop's stacked array
    (lp,) = loops(out)
    assert lp.exp.form.bound.value == len(parents) - 1


def test_results_used_after_the_run_read_their_slot():
    prog = chain_prog(HAND, stacked=False)            # the last bone's transform is the result
    out = reroll(prog)
    same_values(prog, out, args_for(len(HAND)))
    assert len(loops(out)) == 1 and count(out, "matmul") == 1


def test_interpreted_work_stays_that_of_the_unrolled_chain():
    # cheap gradients (and primals): the loop adds one slot write and read per group, so the
    # work grows with the bones as the unrolled program's does
    ratios = []
    for nbones in (6, 24):
        parents = [-1] + list(range(nbones - 1))
        prog = chain_prog(parents)
        w = []
        for p in (prog, reroll(prog)):
            ops = interp.OpCount()
            interp.run(p, *args_for(nbones), ops=ops)
            w.append(ops.work)
        ratios.append(w[1] / w[0])
    assert all(r < 1.5 for r in ratios), ratios
    assert abs(ratios[1] - ratios[0]) < 0.25, ratios


def test_too_few_groups_are_left_alone():
    prog = chain_prog([-1] + list(range(RMIN - 1)), stacked=False)   # RMIN - 1 products
    assert reroll(prog) is prog


def test_scalar_groups_are_left_alone():
    lines = [f"  let y{i}: f64 = mul(y{i - 1}, x)" for i in range(1, 12)]
    prog = parse_prog("entry def f(x: f64) -> (f64) {\n  let y0: f64 = add(x, 1.0:f64)\n"
                      + "\n".join(lines) + "\n  return (y11)\n}\n")
    assert reroll(prog) is prog


def test_operands_from_unrelated_values_are_left_alone():
    # each product reads a different parameter: no loop reads those without gathering them first
    lines = [f"  let y{i}: f64[4,4] = matmul(x{i}, B)" for i in range(6)]
    params = ", ".join(f"x{i}: f64[4,4]" for i in range(6))
    res = ", ".join(f"y{i}" for i in range(6))
    prog = parse_prog(f"entry def f({params}, B: f64[4,4]) -> ({', '.join(['f64[4,4]'] * 6)}) {{\n"
                      + "\n".join(lines) + f"\n  return ({res})\n}}\n")
    assert reroll(prog) is prog


def test_groups_with_mixed_dataflow_are_left_alone():
    # a_i = a_{i-1} @ r_i, but the last group multiplies the other way round: r_7 @ a_6
    prog = chain_prog(CHAIN[:8], stacked=False)
    text = "\n".join(l.replace("matmul(a6, r7)", "matmul(r7, a6)") for l in _lines(prog))
    bad = parse_prog(text)
    out = reroll(bad)
    same_values(bad, out, args_for(8))
    # the first six products still reroll; the odd one stays after the loop
    assert len(loops(out)) == 1 and count(out, "matmul") == 2


def _lines(prog):
    from pullback.ir.printer import print_prog
    return print_prog(prog).split("\n")


def _kinematic(theta, rel, parents):
    """A user's kinematic chain: static parents, the list stacked at the end (whose
    every transform the tangent needs, as GradBench ht's skinning does)."""
    absolutes = []
    for i in range(len(parents)):
        R = rel[i] * np.cos(theta[i])
        absolutes.append(R if parents[i] < 0 else absolutes[parents[i]] @ R)
    return np.sum(np.sin(np.stack(absolutes)) * rel)


def test_numba_rerolls_the_chain_and_its_tangents_and_agrees_with_the_interpreter():
    rng = np.random.default_rng(3)
    parents = tuple(HAND)
    theta, rel = rng.normal(size=len(parents)), rng.normal(size=(len(parents), 4, 4)) * 0.5
    jit_i = pb.jit(lambda t, r: pb.jacfwd(lambda u: _kinematic(u, r, parents))(t), backend="interp")
    jit_n = pb.jit(lambda t, r: pb.jacfwd(lambda u: _kinematic(u, r, parents))(t), backend="numba")
    want = jit_i(theta, rel)
    np.testing.assert_allclose(jit_n(theta, rel), want, rtol=1e-12, atol=1e-12)
    src = nb.emit_prog(nb.lower(jit_n.staged(theta, rel).prog))
    assert "for g in range(21)" in src      # the chain with its tangents: one loop over the bones
    assert src.count("_pb_mm") <= 5         # the helper and its three calls in the loop, not 3 per bone


def update_chain(n=6, size=16, used_midway=False):
    """x[i] = v * i, unrolled: each update threads the array to the next."""
    lines = [f"  let c{i}: f64[{size}] = mul(v, {float(i)}:f64)\n"
             f"  let a{i + 1}: f64[{size},{size}] = index_update(a{i}, c{i}, {i}:i64) {{spec=(('d',),), mode='set'}}"
             for i in range(n)]
    res, ret = f"a{n}", f"f64[{size},{size}]"
    if used_midway:
        res, ret = f"a{n}, a{n // 2}", f"f64[{size},{size}], f64[{size},{size}]"
    return parse_prog(f"entry def f(a0: f64[{size},{size}], v: f64[{size}]) -> ({ret}) {{\n" + "\n".join(lines)
                      + f"\n  return ({res})\n}}\n")


def test_a_value_only_the_next_group_reads_is_carried_not_stacked():
    prog = update_chain()
    out = reroll(prog)
    args = (np.zeros((16, 16)), np.arange(16.0))
    same_values(prog, out, args)
    (lp,) = loops(out)
    assert [p.type.shape for p in lp.exp.params] == [(16, 16)]          # the array itself, no stack of copies
    assert count(out, "index_update") == 1 and count(out, "full") == 0


def test_updates_whose_every_version_is_used_are_not_stacked():
    # keeping every version of an updated array would copy the whole array per update
    prog = update_chain(used_midway=True)
    out = reroll(prog)
    same_values(prog, out, (np.zeros((16, 16)), np.arange(16.0)))
    assert count(out, "full") == 0


def test_groups_without_a_recurrence_are_left_alone():
    # independent products of rows: nothing would shrink (each result stacked, then read back
    # where used), and the reads after such a loop would form the same run again (this hung)
    lines = []
    for i in range(6):
        lines.append(f"  let r{i}: f64[4,4] = index(rel, {i}:i64) {{spec=(('d',),)}}")
        lines.append(f"  let y{i}: f64[4,4] = matmul(r{i}, B)")
    res = ", ".join(f"y{i}" for i in range(6))
    prog = parse_prog(f"entry def f(rel: f64[6,4,4], B: f64[4,4]) -> ({', '.join(['f64[4,4]'] * 6)}) {{\n"
                      + "\n".join(lines) + f"\n  return ({res})\n}}\n")
    assert reroll(prog) is prog
