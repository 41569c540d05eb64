"""The CPS / step-machine pass (passes/cps): every corpus program, and its
derivative programs, give the same results on the interpreter after `cps_prog`;
the result is one while loop with no calls; deep recursion needs no Python stack."""
from __future__ import annotations

import importlib.util
import pathlib
import sys

import numpy as np
import pytest

from pullback.backends import interp
from pullback.errors import RecursionDepthError
from pullback.frontend import stage
from pullback.ir import parser, printer, typecheck
from pullback.ir.builder import Builder
from pullback.ir.core import Apply, Const, Func, Loop, Prog, Var, WhileForm
from pullback.ir.names import NameSupply
from pullback.ir.traverse import all_names, iter_lets
from pullback.ir.types import BOOL, I64
from pullback.passes.cps import HALT, PC, RUNNING, cps_machine, cps_prog
from pullback.passes.jvp import jvp_prog
from pullback.passes.vjp import vjp_prog
from pullback.pytree import flatten

from ._irprogs import inplace_recurrence, recursive

_spec = importlib.util.spec_from_file_location("_cps_corpus_load", pathlib.Path(__file__).parents[1] / "programs" / "_load.py")
_load = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_load)

PROGRAMS = _load.load_all()
IDS = [m.__name__.split(".")[-1] for m in PROGRAMS]
SLOW: set = set()  # programs whose machine runs too long on the interpreter for the fast suite (none yet)


def _staged(m):
    static = tuple(getattr(m, "STATIC_ARGNUMS", ()))
    args = m.args()
    st = stage(m.f, args, static)
    dyn = tuple(a for i, a in enumerate(args) if i not in static)
    leaves, _ = flatten(dyn)
    return st.prog, list(leaves)


def _extra_args(prog, leaves, seed=0):
    """Leaves for the primal params, random values for the extra (tangent/cotangent) ones."""
    rng = np.random.default_rng(seed)
    out = list(leaves)
    for p in prog.main.params[len(leaves):]:
        t = p.type
        v = rng.standard_normal(t.shape) if t.is_float else np.zeros(t.shape, dtype=np.int64)
        out.append(np.asarray(v, dtype={"f64": np.float64, "f32": np.float32}.get(t.dtype, np.int64))
                   if t.shape else {"f64": np.float64, "f32": np.float32}.get(t.dtype, np.int64)(v))
    return out


def _shape_ok(out: Prog):
    """One function, whose body ends in one while loop; no call anywhere."""
    assert len(out.funcs) == 1
    body = out.main.body
    loops = [st for st in body.stmts if isinstance(st.exp, Loop)]
    assert len(loops) == 1 and isinstance(loops[0].exp.form, WhileForm)
    assert not any(isinstance(st.exp, Apply) for st in iter_lets(body))
    assert not any(isinstance(st.exp, Loop) for st in iter_lets(loops[0].exp.body))


def _same(prog, args):
    out = cps_prog(prog)
    typecheck.check_prog(out)
    _shape_ok(out)
    want = interp.run(prog, *args)
    got = interp.run(out, *args)
    assert len(want) == len(got)
    for w, g in zip(want, got):
        assert np.asarray(w).dtype == np.asarray(g).dtype
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))  # bit-identical: same operations
    return out


def _params(ms):
    return [pytest.param(m, id=i, marks=[pytest.mark.slow] if i in SLOW else [])
            for m, i in zip(PROGRAMS, IDS) if m in ms]


@pytest.mark.parametrize("m", _params(PROGRAMS))
def test_corpus_primal(m):
    prog, leaves = _staged(m)
    _same(prog, leaves)


@pytest.mark.parametrize("mode", ["vjp", "jvp"])
@pytest.mark.parametrize("m", _params(PROGRAMS))
def test_corpus_derivatives(m, mode):
    prog, leaves = _staged(m)
    d, name = (vjp_prog if mode == "vjp" else jvp_prog)(prog)
    d = Prog(d.funcs, name)
    _same(d, _extra_args(d, leaves))


def test_hand_built_programs():
    _same(recursive(), [0.3, 7])
    _same(inplace_recurrence(5), [np.linspace(0.1, 1.0, 5), 4])
    _same(inplace_recurrence(5), [np.linspace(0.1, 1.0, 5), 0])  # a loop that never runs


def chain(x, d):
    if d == 0:
        return x
    return np.sin(chain(x, d - 1)) * 1.01


def test_deep_recursion_runs_in_constant_python_stack():
    prog = stage(chain, (0.3, np.int64(3))).prog
    out = cps_prog(prog)
    d = 10 ** 4
    limit = sys.getrecursionlimit()
    got = interp.run(out, 0.3, np.int64(d))[0]
    assert sys.getrecursionlimit() == limit
    with pytest.raises(RecursionDepthError):  # the source program on the interpreter
        interp.run(prog, 0.3, np.int64(d))
    want = 0.3
    for _ in range(d):
        want = np.sin(want) * 1.01
    assert got == want
    # the machine keeps d pending continuations in its stores, not on Python's stack
    assert interp.run(out, 0.3, np.int64(3))[0] == interp.run(prog, 0.3, np.int64(3))[0]


def test_printer_parser_round_trip():
    for prog in (recursive(), inplace_recurrence(4), _staged(_load.load("tree_sum_recursive"))[0]):
        out = cps_prog(prog)
        text = printer.print_prog(out)
        assert parser.parse_prog(text) == out


def _interruptible(m, limit):
    """Programs that run machine `m` for at most `limit` steps and return its
    whole state (a capsule), and that resume from a capsule to the end: the
    hooks issue 11 builds on."""
    supply = NameSupply(all_names(m.init) | all_names(m.step) | {v.name for v in m.state})
    b = Builder(supply)
    b.stmts.extend(m.init.stmts)
    sb = b.child()
    n = sb.fresh("steps", I64)
    go = sb.fresh("go", BOOL)
    sb.stmts.extend(m.step.stmts)
    n2 = sb.add(n, Const(1, I64))
    go2 = sb.emit("and", m.step.result[RUNNING], sb.lt(n2, Const(limit, I64)))
    outs = b.while_loop([*m.state, n, go], [*m.init.result, Const(0, I64), Const(True, BOOL)], go,
                        sb.body([*m.step.result, n2, go2]))
    first = Func("first", m.params, b.body(outs[:-1]), tuple(v.type for v in m.state) + (I64,))
    capsule = tuple(Var(supply.fresh(v.name), v.type) for v in m.state)
    rb = Builder(supply)
    outs = rb.while_loop(m.state, capsule, m.state[RUNNING], m.step)
    rest = Func("resume", capsule, rb.body([outs[k] for k in m.results]), m.ret_types)
    return Prog((first,), "first"), Prog((rest,), "resume")


@pytest.mark.parametrize("name", ["recursion_mutual", "recursion_loop_inside", "tree_sum_recursive"])
def test_interrupt_and_resume_from_the_state(name):
    prog, leaves = _staged(_load.load(name))
    m = cps_machine(prog)
    want = interp.run(prog, *leaves)
    total = interp.run(_interruptible(m, 10 ** 9)[0], *leaves)[-1]
    assert total > 10
    for limit in (1, total // 2, total - 1):
        first, rest = _interruptible(m, limit)
        typecheck.check_prog(first)
        typecheck.check_prog(rest)
        *capsule, steps = interp.run(first, *leaves)
        assert steps == limit and capsule[PC] != HALT and capsule[RUNNING]
        got = interp.run(rest, *capsule)
        for w, g in zip(want, got):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
