"""`passes.accumulate` (note [accumulate]): chains of additions into a zero
array are added straight into the array they end up in. Rewrite 1 (into a
zero array) keeps every bit; rewrite 2 (into a live array) can change only the
sign of a zero. Each case that must not be rewritten is checked not to be, and
values agree with the interpreter on the program before the pass and on numba
(which runs the pass)."""
import numpy as np
import pytest

import pullback as pb
from pullback.backends import interp
from pullback.backends import numba_backend as nb
from pullback.gradbench.modules import det as det_module
from pullback.ir.core import Prim
from pullback.ir.parser import parse_prog
from pullback.ir.traverse import iter_lets
from pullback.passes.accumulate import accumulate
from pullback.passes.forward_index import forward_index
from pullback.passes.inline import inline_scalar_calls, inline_small
from pullback.passes.scalarize import scalarize

HEAD = "entry def f(a: f64[4,4], v: f64[3,2], u: f64[3,1], s: f64, i: i64) -> ({rets}) {{\n"
CHAIN = """
  let z0: f64[3,4] = full({zero}) {{shape=(3, 4)}}
  let z1: f64[3,4] = index_update(z0, v{vidx}) {{mode='add', spec={vspec}}}
  let z2: f64[3,4] = index_update(z1, u) {{mode='add', spec=(('s', 0, 3, 1), ('s', {ucol}, {ucol1}, 1))}}
"""
BIG = """
  let b0: f64[4,4] = full(0.0:f64) {{shape=(4, 4)}}
  let b1: f64[4,4] = index_update(b0, z2) {{mode='add', spec=(('s', 1, 4, 1),)}}
  let b2: f64[4,4] = index_update(b1, s, 0:i64, 2:i64) {{mode='add', spec=(('d',), ('d',))}}
"""
VSPEC = "(('s', 0, 3, 1), ('s', 0, 2, 1))"


def program(tail, rets="f64[4,4]", zero="0.0:f64", vidx="", vspec=VSPEC, ucol=3):
    text = HEAD.format(rets=rets) + CHAIN.format(zero=zero, vidx=vidx, vspec=vspec, ucol=ucol, ucol1=ucol + 1)
    if rets == "f64[4,4]" or "b2" in tail:
        text += BIG.format()
    return parse_prog(text + tail + "\n}\n")


SMALL = ("  let c: f64[3,4] = index(a) {spec=(('s', 1, 4, 1),)}\n"
         "  let y: f64[3,4] = add(c, z2)\n  return (y)")
# name -> (program, whether `add` is gone, how many `full`s are left)
CASES = {
    # both rewrites: the chain is composed into b0's rows 1:, then added into `a`
    "both": (program("  let y: f64[4,4] = add(a, b2)\n  return (y)"), True, 0),
    "swapped operands": (program("  let y: f64[4,4] = add(b2, a)\n  return (y)"), True, 0),
    # rewrite 1 only: overlapping pieces (u lands in column 1, inside v's columns 0:2)
    "overlap": (program("  let y: f64[4,4] = add(a, b2)\n  return (y)", ucol=1), False, 1),
    # the chain is read twice: nothing is rewritten
    "used twice": (program("  let y: f64[4,4] = add(a, b2)\n  let t: f64[4,4] = mul(b2, 2.0:f64)\n"
                           "  return (y, t)", rets="f64[4,4], f64[4,4]"), False, 1),
    "broadcasting": (program("  let c: f64[4] = index(a, 0:i64) {spec=(('d',),)}\n"
                             "  let y: f64[4,4] = add(c, b2)\n  return (y)"), False, 1),
    # rewrite 2 straight on the small chain, and what stops it
    "small": (program(SMALL, rets="f64[3,4]"), True, 0),
    "small overlap": (program(SMALL, rets="f64[3,4]", ucol=1), False, 1),
    "nonzero base": (program(SMALL, rets="f64[3,4]", zero="1.0:f64"), False, 1),
    "negative zero base": (program(SMALL, rets="f64[3,4]", zero="-0.0:f64"), False, 1),
    "dynamic index": (program(SMALL, rets="f64[3,4]", vidx=", i", vspec="(('s', 0, 3, 1), ('ds', 2))"), False, 1),
    # rewrite 1 is stopped by the same; b2 is still a chain into zeros, added into `a`
    "nonzero base 1": (program("  let y: f64[4,4] = add(a, b2)\n  return (y)", zero="1.0:f64"), True, 1),
    "negative zero base 1": (program("  let y: f64[4,4] = add(a, b2)\n  return (y)", zero="-0.0:f64"), True, 1),
    "dynamic index 1": (program("  let y: f64[4,4] = add(a, b2)\n  return (y)", vidx=", i",
                                vspec="(('s', 0, 3, 1), ('ds', 2))"), True, 1),
}


def ops(prog):
    return [st.exp.op for f in prog.funcs for st in iter_lets(f.body) if isinstance(st.exp, Prim)]


def args(seed=0, zeros=False):
    r = np.random.default_rng(seed)
    a, v, u = r.standard_normal((4, 4)), r.standard_normal((3, 2)), r.standard_normal((3, 1))
    if zeros:   # every sign of zero, in the accumulator and in the pieces
        a[:, :2], v[:], u[:] = -0.0, -0.0, 0.0
    return a, v, u, 1.5, 2


def same(x, y, signs=True):
    for p, q in zip(x, y):
        np.testing.assert_array_equal(p, q)
        if signs:
            assert np.array_equal(np.signbit(p), np.signbit(q))


@pytest.mark.parametrize("name", list(CASES))
def test_small_programs(name):
    prog, rewritten, fulls = CASES[name]
    out = accumulate(prog)
    assert ("add" not in ops(out)) == rewritten
    assert ops(out).count("full") == fulls
    for zeros in (False, True):
        # without a rewritten `add` (rewrite 1 only, or nothing) every bit is kept
        same(interp.run(out, *args(zeros=zeros)), interp.run(prog, *args(zeros=zeros)), signs=not rewritten)


def test_only_rewrite_2_changes_a_zero_sign():
    prog = CASES["both"][0]
    want, got = interp.run(prog, *args(zeros=True))[0], interp.run(accumulate(prog), *args(zeros=True))[0]
    np.testing.assert_array_equal(got, want)
    flipped = np.signbit(got) != np.signbit(want)
    assert flipped.any() and (got[flipped] == 0).all()   # a = -0 plus a piece -0: was +0, now -0


def packed(positions, shape=(2, 2), region="(('s', 1, 3, 1), ('s', 2, 4, 1))", fill="7.0:f64"):
    """`a` plus, at `region`, a `full(fill)` whose elements at `positions` are set to scalars."""
    dims = ", ".join(map(str, shape))
    lines = [f"  let p0: f64[{dims}] = full({fill}) {{shape=({dims},)}}"]
    for k, pos in enumerate(positions):
        idx = "".join(f", {i}:i64" for i in pos)
        spec = "(" + "".join("('d',), " for _ in pos) + ")"
        lines.append(f"  let p{k + 1}: f64[{dims}] = index_update(p{k}, s{k % 4}{idx}) {{mode='set', spec={spec}}}")
    lines.append(f"  let y: f64[4,4] = index_update(a, p{len(positions)}) {{mode='add', spec={region}}}")
    head = "entry def f(a: f64[4,4], s0: f64, s1: f64, s2: f64, s3: f64) -> (f64[4,4]) {\n"
    return parse_prog(head + "\n".join(lines) + "\n  return (y)\n}\n")


FOUR = [(0, 1), (1, 1), (0, 0), (1, 0)]
PACKS = {   # name -> (program, unpacked)
    "all set once": (packed(FOUR), True),
    "one left at its fill": (packed(FOUR[:3]), False),
    "one set twice": (packed(FOUR + [(0, 1)]), False),
    "broadcast into the region": (packed([(0,), (1,)], shape=(2,)), False),
}


@pytest.mark.parametrize("name", list(PACKS))
def test_packed_values_added_element_by_element(name):
    prog, unpacked = PACKS[name]
    out = accumulate(prog)
    assert ("full" not in ops(out)) == unpacked
    assert ops(out).count("index_update") == (4 if unpacked else ops(prog).count("index_update"))
    a = np.random.default_rng(2).standard_normal((4, 4))
    a[1, 2] = -0.0
    for s in ([1.0, -2.0, 0.5, 3.0], [-0.0, 0.0, -0.0, np.inf]):
        same(interp.run(out, a, *s), interp.run(prog, a, *s))


def test_chain_outside_a_loop_is_not_moved_in():
    text = """entry def f(a: f64[4], v: f64[2]) -> (f64[4]) {
      let z0: f64[4] = full(0.0:f64) {shape=(4,)}
      let w: f64[4] = index_update(z0, v) {mode='add', spec=(('s', 1, 3, 1),)}
      let r: f64[4] = loop (p: f64[4] = a) for k: i64 < 3:i64 {
        let q: f64[4] = add(p, w)
        yield (q)
      }
      return (r)
    }"""
    prog = parse_prog(text)
    assert accumulate(prog) is prog


def slices(A):
    R = A[4:0:-1, ::-1]
    C = np.concatenate([R[::2, 3::-2], R[1::2, :2]], axis=0)
    return np.sum(np.sin(C) * C[::-1])


def staged_grad(fun, x):
    prog = pb.jit(pb.grad(fun), backend="interp").staged(x).prog
    return forward_index(inline_scalar_calls(inline_small(prog)))


def test_negative_steps():
    A = np.random.default_rng(3).standard_normal((5, 4))
    prog = staged_grad(slices, A)
    out = accumulate(prog)
    assert ops(out).count("full") < ops(prog).count("full")
    same(interp.run(out, A), interp.run(prog, A))


@pytest.mark.parametrize("ell", [2, 3, 4, 5, 6])
def test_det_gradient_one_accumulator(ell):
    A = np.random.default_rng(ell).standard_normal((ell, ell))
    prog = scalarize(staged_grad(det_module.det, A))
    out = accumulate(prog)
    np.testing.assert_array_equal(interp.run(out, A)[0], interp.run(prog, A)[0])
    for f in out.funcs:   # each adjoint: one zero matrix, no whole-matrix add, no minor-sized zeros
        # (3 x 3 and smaller adjoints are scalar code, packed once: note [scalarize])
        if f.name.startswith("det") and f.params[0].type.shape[0] >= 4:
            lets = [st for st in iter_lets(f.body) if isinstance(st.exp, Prim)]
            fulls = {st.pat[0] for st in lets if st.exp.op == "full"}
            added = [st.exp.args[0].type.shape for st in lets if st.exp.op == "index_update"
                     and st.exp.p["mode"] == "add" and st.exp.args[0] in fulls]
            assert added == [f.params[0].type.shape]
            assert not any(st.exp.op == "add" and st.pat[0].type.shape for st in lets)


SELF_READ = parse_prog("""entry def f(x: f64[8]) -> (f64[8]) {
  let a: f64[8] = mul(x, 2.0:f64)
  let s1: f64[4] = index(a) {spec=(('s', 0, 4, 1),)}
  let s2: f64[4] = index(a) {spec=(('s', 4, 8, 1),)}
  let z0: f64[8] = full(0.0:f64) {shape=(8,)}
  let z1: f64[8] = index_update(z0, s1) {mode='add', spec=(('s', 4, 8, 1),)}
  let z2: f64[8] = index_update(z1, s2) {mode='add', spec=(('s', 0, 4, 1),)}
  let y: f64[8] = add(a, z2)
  return (y)
}""")


def test_numba_small_programs():
    """numba runs the pass: its values are the interpreter's on the program before it."""
    for name in ("both", "overlap", "used twice", "dynamic index"):
        prog = CASES[name][0]
        for zeros in (False, True):
            a = args(zeros=zeros)
            same(nb.run(prog, *a), interp.run(prog, *a), signs=False)
    # the pieces are views of the accumulator itself: in place only after copying them
    assert "add" not in ops(accumulate(SELF_READ))
    x = np.arange(8.0) - 3.0
    same(nb.run(SELF_READ, x), interp.run(SELF_READ, x))
    a = np.random.default_rng(2).standard_normal((4, 4))
    same(nb.run(PACKS["all set once"][0], a, 1.0, -2.0, 0.5, 3.0),
         interp.run(PACKS["all set once"][0], a, 1.0, -2.0, 0.5, 3.0))


def emitted_vjps(ell):
    """The emitted source of each det_*_vjp function of the numba module."""
    A = np.zeros((ell, ell))
    prog = pb.jit(pb.grad(det_module.det), backend="numba").staged(A).prog
    src = nb.emit_prog(nb.lower(prog), parallel=False)
    return [part.split("@njit")[0] for part in src.split("\ndef det")[1:] if part.split("(")[0].endswith("_vjp")]


def test_det_adjoint_updated_in_place():
    """Every piece is added into the one zero matrix, in place (no copy, no new array)."""
    funcs = emitted_vjps(5)
    assert len(funcs) == 2          # 5 x 5 and 4 x 4: the 3 x 3 and 2 x 2 levels are inlined as
    #                                 scalar code and their uncalled functions not printed
    for src in funcs:
        lines = src.splitlines()
        # 3 x 3 and 2 x 2 levels are scalar code (notes [scalarize], [unpack-calls]: their
        # matrices cross the call as elements)
        if "f64[2,2]" not in lines[1] and "f64[3,3]" not in lines[1] and "[" in lines[1]:
            targets = {ln.split("[")[0].strip() for ln in lines if "+=" in ln and "# pb:index_update" in ln}
            assert len(targets) == 1 and f"{targets.pop()} = _pb_full(" in src
            # no copies; the `# pb:add` lines left are scalar: the inlined 3 x 3 and 2 x 2
            # vjps' adjoints, one local per element (no whole-matrix add: see the IR test above)
            assert not any("copy" in ln for ln in lines)


@pytest.mark.slow
@pytest.mark.parametrize("ell", [2, 3, 4, 5, 6])
def test_det_numba_equals_interp(ell):
    A = np.random.default_rng(ell).standard_normal((ell, ell))
    prog = pb.jit(pb.grad(det_module.det), backend="numba").staged(A).prog
    np.testing.assert_array_equal(nb.run(prog, A)[0], interp.run(prog, A)[0])


def row_chain(index="i", ucols=(2, 4)):
    """A chain of two pieces of a zero row, added into row `index` of `a`."""
    return parse_prog(f"""entry def f(a: f64[4,4], v: f64[2], u: f64[2], i: i64) -> (f64[4,4]) {{
  let z0: f64[4] = full(0.0:f64) {{shape=(4,)}}
  let z1: f64[4] = index_update(z0, v) {{mode='add', spec=(('s', 0, 2, 1),)}}
  let z2: f64[4] = index_update(z1, u) {{mode='add', spec=(('s', {ucols[0]}, {ucols[1]}, 1),)}}
  let y: f64[4,4] = index_update(a, z2, {index}) {{mode='add', spec=(('d',),)}}
  return (y)
}}""")


@pytest.mark.parametrize("index,ucols,rewritten", [
    ("i", (2, 4), True), ("1:i64", (2, 4), True), ("i", (1, 3), False)])
def test_chain_into_a_row(index, ucols, rewritten):
    """Rewrite 4: disjoint pieces go straight into the row, at a variable index too;
    overlapping ones stay (each element would get two additions)."""
    prog = row_chain(index, ucols)
    out = accumulate(prog)
    assert ("full" not in ops(out)) == rewritten
    assert ops(out).count("index_update") == (2 if rewritten else 3)
    r = np.random.default_rng(4)
    for i in (0, 3, -1, -4):
        a, v, u = r.standard_normal((4, 4)), r.standard_normal(2), r.standard_normal(2)
        same(interp.run(out, a, v, u, i), interp.run(prog, a, v, u, i), signs=False)
        same(nb.run(prog, a, v, u, i), interp.run(prog, a, v, u, i), signs=False)
    if index == "i":   # out of range: the same error, before and after the pass
        for run in (lambda: nb.run(prog, a, v, u, 4), lambda: interp.run(out, a, v, u, 4)):
            with pytest.raises(IndexError):
                run()


def test_chain_into_a_row_zero_signs():
    """Rewrite 4 changes at most the sign of a zero, as rewrite 2."""
    prog = row_chain()
    a = np.full((4, 4), -0.0)
    v, u = np.array([-0.0, 1.0]), np.array([-0.0, 0.0])
    want, got = interp.run(prog, a, v, u, 2)[0], interp.run(accumulate(prog), a, v, u, 2)[0]
    np.testing.assert_array_equal(got, want)
    assert ((np.signbit(got) != np.signbit(want)) <= (got == 0)).all()
