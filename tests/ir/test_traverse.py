import random

from _gen import gen_prog, rng_pick
from pullback.backends import interp
from pullback.ir.core import Const, Var
from pullback.ir.names import NameSupply
from pullback.ir.parser import parse_prog
from pullback.ir.printer import print_prog
from pullback.ir.traverse import (all_names, bound_vars, dce, free_vars, prune_prog, rename_body,
                                  substitute, used_funcs)
from pullback.ir.typecheck import check_prog
from pullback.ir.types import F64

TEXT = """
def helper(u: f64) -> (f64) {
  return (u)
}
def unused(u: f64) -> (f64) {
  let v: f64 = call unused(u)
  return (v)
}
entry def f(x: f64, n: i64, c: bool) -> (f64) {
  let dead: f64 = sin(x)
  let acc: f64 = loop (a: f64 = x) for i: i64 < n {
    let fi: f64 = cast(i) {dtype='f64'}
    let b: f64 = add(a, fi)
    let dead2: f64 = cos(b)
    yield (b)
  }
  let r: f64 = if c {
    let h: f64 = call helper(acc)
    yield (h)
  } else {
    yield (x)
  }
  return (r)
}
"""


def test_free_and_bound():
    p = parse_prog(TEXT)
    f = p.main
    loop = f.body.stmts[1].exp
    assert {v.name for v in free_vars(loop)} == {"x", "n"}
    assert {v.name for v in free_vars(loop.body)} == {"a", "i"}
    assert {v.name for v in free_vars(f.body)} == {"x", "n", "c"}
    assert {v.name for v in bound_vars(f.body)} == {"dead", "acc", "a", "i", "fi", "b", "dead2", "r", "h"}
    assert "x" in all_names(f) and "h" in all_names(f)


def test_rename_and_substitute():
    p = parse_prog(TEXT)
    f = p.main
    sp = NameSupply(all_names(f))
    y = Var("y", F64)
    body = rename_body(f.body, sp, {f.params[0]: y})
    assert not ({v.name for v in bound_vars(body)} & {v.name for v in bound_vars(f.body)})
    assert y in free_vars(body) and f.params[0] not in free_vars(body)
    # the renamed copy computes the same thing
    from pullback.ir.core import Func, Prog
    g = Func("f", (y,) + f.params[1:], body, f.ret_types)
    q = Prog((p.funcs[0], p.funcs[1], g), "f")
    check_prog(q)
    for args in ((1.5, 3, True), (2.0, 0, False)):
        assert interp.run(q, *args) == interp.run(p, *args)
    s = substitute(f.body, {f.params[0]: Const(2.0, F64)})
    assert f.params[0] not in free_vars(s)
    assert {v.name for v in bound_vars(s)} == {v.name for v in bound_vars(f.body)}


def test_rename_random_programs_keeps_meaning():
    from pullback.ir.core import Func
    from _gen import gen_args, values_equal
    import warnings
    warnings.simplefilter("ignore")
    for seed in range(40):
        rng = random.Random(seed)
        p = gen_prog(rng_pick(rng))
        f = p.main
        sp = NameSupply(all_names(f))
        ps = tuple(Var(sp.fresh(v.name), v.type) for v in f.params)
        g = Func("f", ps, rename_body(f.body, sp, dict(zip(f.params, ps))), f.ret_types)
        q = p.with_funcs([g if h.name == "f" else h for h in p.funcs])
        check_prog(q)
        args = gen_args(p, rng)
        assert all(values_equal(a, b) for a, b in zip(interp.run(p, *args), interp.run(q, *args)))


def test_dce_and_prune():
    p = parse_prog(TEXT)
    body = dce(p.main.body)
    names = {v.name for v in bound_vars(body)}
    assert "dead" not in names and "dead2" not in names and "b" in names and "h" in names
    assert used_funcs(p) == {"helper", "unused"}
    assert used_funcs(p.main) == {"helper"}
    q = prune_prog(p)
    assert [f.name for f in q.funcs] == ["helper", "f"]
    check_prog(q)


def test_dce_random_keeps_meaning():
    from _gen import gen_args, values_equal
    from pullback.ir.core import Func
    import warnings
    warnings.simplefilter("ignore")
    for seed in range(40):
        rng = random.Random(seed)
        p = gen_prog(rng_pick(rng))
        q = p.with_funcs([Func(f.name, f.params, dce(f.body), f.ret_types) for f in p.funcs])
        check_prog(q)
        args = gen_args(p, rng)
        assert all(values_equal(a, b) for a, b in zip(interp.run(p, *args), interp.run(q, *args)))
        assert len(print_prog(q)) <= len(print_prog(p))
