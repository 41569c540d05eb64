import random

import pytest

import _progs
from _gen import gen_prog, rng_pick
from pullback.errors import IRError
from pullback.ir.parser import parse_prog
from pullback.ir.typecheck import check_prog, maybe_check


@pytest.mark.parametrize("name", sorted(_progs.ALL))
def test_hand_written_programs_check(name):
    check_prog(_progs.ALL[name]())


def test_random_programs_check():
    for seed in range(100):
        check_prog(gen_prog(rng_pick(random.Random(seed)), max_stmts=12))


BAD = [
    # (program text, fragment of the message)
    ("entry def f(x: f64[3]) -> (f64[3]) {\n let y: f64 = sin(x)\n return (x)\n}",
     "pattern types (f64) differ from the expression's types (f64[3])"),
    ("entry def f(x: f64[3], y: f64[2]) -> (f64[3]) {\n let z: f64[3] = add(x, y)\n return (z)\n}",
     "do not broadcast"),
    ("entry def f(x: f64) -> (f64) {\n let y: f64 = if x {\n yield (x)\n } else {\n yield (x)\n }\n return (y)\n}",
     "if condition has type f64"),
    ("entry def f(x: f64, c: bool) -> (f64) {\n let y: f64 = if c {\n yield (x)\n } else {\n yield (1:i64)\n }\n return (y)\n}",
     "branches yield different types"),
    ("entry def f(x: f64, n: f64) -> (f64) {\n let y: f64 = loop (a: f64 = x) for i: i64 < n {\n yield (a)\n }\n return (y)\n}",
     "loop bound has type f64"),
    ("entry def f(x: f64, n: i64) -> (f64) {\n let y: f64 = loop (a: f64 = n) for i: i64 < n {\n yield (a)\n }\n return (y)\n}",
     "loop initial values (i64) differ"),
    ("entry def f(x: f64, n: i64) -> (f64) {\n let y: f64 = loop (a: f64 = x) for i: i64 < n {\n yield (i)\n }\n return (y)\n}",
     "loop body yields (i64)"),
    ("entry def f(x: f64) -> (f64) {\n let y: f64 = loop (a: f64 = x) while a {\n yield (a)\n }\n return (y)\n}",
     "while condition has type f64"),
    ("entry def f(x: f64) -> (f64) {\n let y: f64 = call g(x)\n return (y)\n}", "unknown function 'g'"),
    ("def g(x: f64) -> (f64) {\n return (x)\n}\nentry def f(x: i64) -> (f64) {\n let y: f64 = call g(x)\n return (y)\n}",
     "calls 'g' with (i64) but it takes (f64)"),
    ("def g(x: f64) -> (f64) {\n return (x)\n}\nentry def f(x: f64) -> (f64) {\n let y: i64 = call g(x)\n return (y)\n}",
     "pattern types (i64)"),
    ("entry def f(x: f64) -> (f64) {\n let x: f64 = sin(x)\n return (x)\n}", "bound twice"),
    ("entry def f(x: f64) -> (i64) {\n return (x)\n}", "declared to return (i64)"),
    ("entry def f(x: f64) -> (f64) {\n let y: f64 = nosuch(x)\n return (y)\n}", "unknown primitive 'nosuch'"),
    ("entry def f(x: f64) -> (f64) {\n let y: f64 = sum(x) {axes=(0,)}\n return (y)\n}", "out of range"),
]


@pytest.mark.parametrize("text,frag", BAD)
def test_errors_name_function_and_statement(text, frag):
    p = parse_prog(text)
    with pytest.raises(IRError) as ei:
        check_prog(p)
    msg = str(ei.value)
    assert "in function 'f'" in msg and frag in msg, msg


def test_statement_is_named():
    p = parse_prog(BAD[1][0])
    with pytest.raises(IRError, match=r"statement `let \(z: f64\[3\]\) = add\(x, y\)`"):
        check_prog(p)


def test_scope_errors():
    from pullback.ir.core import Body, Func, Prog, Var
    from pullback.ir.types import F64, TensorType

    x = Var("x", F64)
    f = Func("f", (), Body((), (x,)), (F64,))
    with pytest.raises(IRError, match="'x' is used but not in scope"):
        check_prog(Prog((f,), "f"))
    f2 = Func("f", (x,), Body((), (Var("x", TensorType("f64", (2,))),)), (TensorType("f64", (2,)),))
    with pytest.raises(IRError, match="bound with type f64"):
        check_prog(Prog((f2,), "f"))
    with pytest.raises(IRError, match="entry function 'g'"):
        check_prog(Prog((f2,), "g"))


def test_inner_scope_does_not_leak():
    text = ("entry def f(x: f64, c: bool) -> (f64) {\n let y: f64 = if c {\n let z: f64 = sin(x)\n yield (z)\n"
            " } else {\n yield (x)\n }\n let w: f64 = add(y, x)\n return (w)\n}")
    check_prog(parse_prog(text))
    bad = text.replace("add(y, x)", "add(y, z)")
    with pytest.raises(IRError):
        parse_prog(bad)  # the parser already rejects it


def test_maybe_check(monkeypatch):
    p = parse_prog(BAD[0][0])
    monkeypatch.delenv("PULLBACK_CHECKS", raising=False)
    assert maybe_check(p, "test") is p
    monkeypatch.setenv("PULLBACK_CHECKS", "1")
    with pytest.raises(IRError, match="after mypass"):
        maybe_check(p, "mypass")
