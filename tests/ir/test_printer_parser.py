import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import _progs
from _gen import gen_prog, hyp_pick, rng_pick
from pullback.errors import IRError
from pullback.ir.core import Const, Func, Prog, Prim, Let, Body, Var
from pullback.ir.parser import parse_prog, parse_type, parse_func
from pullback.ir.printer import print_prog, print_func, print_body, print_atom
from pullback.ir.types import StoreType, TensorType


@pytest.mark.parametrize("name", sorted(_progs.ALL))
def test_hand_written_round_trip(name):
    p = _progs.ALL[name]()
    text = print_prog(p)
    assert parse_prog(text) == p
    assert print_prog(parse_prog(text)) == text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_round_trip(data):
    p = gen_prog(hyp_pick(data), max_stmts=10)
    text = print_prog(p)
    q = parse_prog(text)
    assert q == p, text


def test_many_seeded_round_trips():
    for seed in range(150):
        p = gen_prog(rng_pick(random.Random(seed)), max_stmts=12)
        assert parse_prog(print_prog(p)) == p


def test_readable_syntax():
    text = print_prog(_progs.loop_update_prog())
    assert "entry def f(x: f64[3], s: f64) -> (f64, f64[3]) {" in text
    assert "loop (a_2: f64[3] = a) for i: i64 < 3:i64 {" in text
    assert "index_update(a_2, v, i) {mode='set', spec=(('d',),)}" in text
    assert "return (total, a_4)" in text


def test_constants_round_trip_exactly():
    vals = [0.1, -0.0, 1e-300, float("inf"), -float("inf"), 2.0 ** 70, 1 / 3]
    for v in vals:
        c = Const(v, TensorType("f64"))
        f = Func("f", (), Body((), (c,)), (c.type,))
        q = parse_prog(print_prog(Prog((f,), "f")))
        got = q.funcs[0].body.result[0]
        assert got == c and repr(got.value) == repr(v)
    assert print_atom(Const(3, TensorType("i64"))) == "3:i64"
    assert print_atom(Const(True, TensorType("bool"))) == "true:bool"
    arr = Const(np.array([[1.5, 2.0], [3.0, 4.0]]), TensorType("f64", (2, 2)))
    assert print_atom(arr) == "const f64[2,2] [[1.5, 2.0], [3.0, 4.0]]"
    empty = Const(np.zeros((0, 3)), TensorType("f64", (0, 3)))
    bools = Const(np.array([True, False]), TensorType("bool", (2,)))
    f32 = Const(np.array([0.1, 3.0], dtype=np.float32), TensorType("f32", (2,)))
    f = Func("f", (), Body((), (empty, bools, f32)), (empty.type, bools.type, f32.type))
    p = Prog((f,), "f")
    assert parse_prog(print_prog(p)) == p


def test_params_round_trip():
    x = Var("x", TensorType("f64", (4, 4)))
    odd = (("k", ((1, -2), "s'q\"", None, True, 2.5, float("inf"), (), ("a",))),
           ("elem", StoreType(TensorType("f32", (2,)))), ("t", TensorType("i64", ())))
    st = Let((Var("y", TensorType("f64", (4, 4))),), Prim("mystery", (x,), odd))
    f = Func("f", (x,), Body((st,), (st.pat[0],)), (x.type,))
    p = Prog((f,), "f")
    assert parse_prog(print_prog(p)) == p


def test_types_and_funcs():
    assert parse_type("f64[2,3]") == TensorType("f64", (2, 3))
    assert parse_type("store<i64[0]>") == StoreType(TensorType("i64", (0,)))
    f = _progs.recursive_prog().funcs[0]
    assert parse_func(print_func(f)) == f
    assert "yield" in print_body(f.body)


def test_entry_marking():
    p = _progs.recursive_prog()
    text = print_prog(p)
    assert "entry def main" in text and "\ndef fact" in "\n" + text
    q = Prog(p.funcs, "missing")
    assert parse_prog(print_prog(q)) == q


@pytest.mark.parametrize("text,line,frag", [
    ("def f(x: f64) -> (f64) {\n  return (y)\n}\n", 2, "undefined variable 'y'"),
    ("def f(x: f64) -> (f64) {\n  let y: f64 = sin(x)\n  let z f64 = cos(y)\n  return (z)\n}", 3, "expected ':'"),
    ("def f(x: f65) -> (f64) {\n return (x)\n}", 1, "unknown type"),
    ("def f(x: f64) -> (f64) {\n\n  return (x)\n", 4, "expected '}'"),
    ("def f(x: f64) -> (f64) {\n  let y: f64 = loop (a: f64 = x) while q {\n yield (a)\n }\n return (y)\n}", 2,
     "not a loop parameter"),
    ("def f() -> (f64[2]) {\n  return (const f64[2] [1.0])\n}", 2, "has 1 elements"),
    ("def f() -> (f64) {\n  return (1.5:i64)\n}", 2, "not a i64 value"),
    ("def f() -> (f64) {\n  return ($)\n}", 2, "unexpected character"),
])
def test_parse_errors_name_the_line(text, line, frag):
    with pytest.raises(IRError) as ei:
        parse_prog(text)
    msg = str(ei.value)
    assert f"line {line}" in msg and frag in msg, msg


def test_comments_and_locs_are_ignored():
    p = _progs.loop_update_prog()
    text = print_prog(p, locs=True)
    assert "# demo.py:5" in text
    assert parse_prog(text) == p


def test_fingerprint_hashes_large_constants():
    """`fingerprint` (the numba module hash's view of a program) writes a large
    constant as a digest: equal for equal values, different for any change."""
    import numpy as np

    from pullback.frontend import stage
    from pullback.ir.printer import DIGEST_MIN, fingerprint, print_prog

    def prog_with(c):
        return stage(lambda x: np.sum(x * c), (np.ones(len(c)),)).prog

    big = np.linspace(0.0, 1.0, 100 * DIGEST_MIN)
    text = fingerprint(prog_with(big))
    assert "sha256:" in text and len(text) < len(print_prog(prog_with(big))) / 50
    assert fingerprint(prog_with(big.copy())) == text
    changed = big.copy()
    changed[-1] = np.nextafter(changed[-1], 2.0)
    assert fingerprint(prog_with(changed)) != text
    small = np.linspace(0.0, 1.0, 5)
    assert fingerprint(prog_with(small)) == print_prog(prog_with(small))
