"""Type checker for IR programs.

Contract: `check_prog(prog)` returns None or raises `IRError` naming the
function and the statement at fault. It checks:

- each `Prim`: its row exists, the argument types fit the row's type rule, and
  the pattern's types equal the rule's output types;
- `If`: the condition is a bool scalar; both branches yield the pattern's types;
- `Loop`: init types == param types == body result types == pattern types;
  a for loop's index is an i64 scalar var and its bound an i64 scalar; a while
  loop's condition is one of its params and a bool scalar;
- `Map`: the width is an i64 constant; the index param is i64; each array has
  leading dimension `width` (when both are constants) and its element type is
  the element param's; accumulator inits, params and the body's trailing
  results agree; the pattern is the stacked results then the accumulators;
- `Apply`: the callee exists, argument types equal its param types, and the
  pattern types equal its `ret_types`;
- scoping: every used var is a param or was bound earlier in an enclosing body,
  with the same type; SSA: no name is bound twice in a function;
- each function's results match its `ret_types`; the entry function exists.

Expression classes it does not know (combinators added later) get the scope
and SSA checks only. `maybe_check(prog, where)` runs `check_prog` when the
environment variable ``PULLBACK_CHECKS=1`` is set; passes call it after they run.
"""
from __future__ import annotations

import os

from ..errors import IRError, PullbackError
from .core import Apply, Body, Const, ForForm, Func, If, Loop, Map, Prim, Prog, Var, WhileForm
from .types import TensorType

_BOOL = TensorType("bool")
_I64 = TensorType("i64")


def _ts(ts) -> str:
    return "(" + ", ".join(str(t) for t in ts) + ")"


class _Fail(Exception):
    pass


class _Checker:
    def __init__(self, prog: Prog):
        self.prog = prog
        self.funcs = {}
        for f in prog.funcs:
            if f.name in self.funcs:
                raise IRError(f"two functions are named '{f.name}'")
            self.funcs[f.name] = f

    # -- helpers ------------------------------------------------------------
    def fail(self, msg):
        raise _Fail(msg)

    def bind(self, v, seen: set) -> None:
        if not isinstance(v, Var):
            self.fail(f"binds {v!r}, which is not a variable")
        if v.name in seen:
            self.fail(f"variable '{v.name}' is bound twice (the IR is SSA)")
        seen.add(v.name)

    def atom(self, a, env: dict):
        if isinstance(a, Const):
            return a.type
        if not isinstance(a, Var):
            self.fail(f"operand {a!r} is not a variable or constant")
        b = env.get(a.name)
        if b is None:
            self.fail(f"variable '{a.name}' is used but not in scope")
        if b.type != a.type:
            self.fail(f"variable '{a.name}' is used with type {a.type} but was bound with type {b.type}")
        return a.type

    # -- structure ------------------------------------------------------------
    def func(self, f: Func) -> None:
        self.fname = f.name
        seen: set = set()
        env: dict = {}
        self.stmt = None
        try:
            for p in f.params:
                self.bind(p, seen)
                env[p.name] = p
            got = self.body(f.body, env, seen)
            if tuple(got) != tuple(f.ret_types):
                self.stmt = None
                self.fail(f"returns {_ts(got)} but is declared to return {_ts(f.ret_types)}")
            for i, j in f.donated:
                if not (0 <= i < len(f.params) and 0 <= j < len(f.ret_types)
                        and f.params[i].type == f.ret_types[j]):
                    self.stmt = None
                    self.fail(f"donates parameter {i} as result {j}, which do not match")
        except _Fail as e:
            where = f"in function '{f.name}'"
            loc = None
            if self.stmt is not None:
                from .printer import print_let

                try:
                    text = print_let(self.stmt)
                except PullbackError:
                    text = repr(self.stmt)
                where += f", statement `{text}`"
                loc = self.stmt.loc
            raise IRError(f"{where}: {e}", loc=loc) from None

    def body(self, body: Body, env: dict, seen: set) -> list:
        env = dict(env)
        for st in body.stmts:
            self.stmt = st
            outs = self.exp(st.exp, env, seen)
            self.stmt = st
            if outs is not None:
                got = tuple(v.type for v in st.pat)
                if len(outs) != len(st.pat):
                    self.fail(f"binds {len(st.pat)} values but the expression gives {len(outs)}")
                if got != tuple(outs):
                    self.fail(f"pattern types {_ts(got)} differ from the expression's types {_ts(outs)}")
            for v in st.pat:
                self.bind(v, seen)
                env[v.name] = v
        return [self.atom(a, env) for a in body.result]

    def exp(self, e, env: dict, seen: set):
        if isinstance(e, Prim):
            from .prims import TABLE

            if e.op not in TABLE:
                self.fail(f"unknown primitive '{e.op}'")
            ats = [self.atom(a, env) for a in e.args]
            try:
                return tuple(TABLE.get(e.op).type(ats, **dict(e.params)))
            except PullbackError as err:
                self.fail(f"'{e.op}' rejects operands {_ts(ats)}: {err.msg}")
            except Exception as err:  # a type rule tripping over bad params
                self.fail(f"'{e.op}' rejects operands {_ts(ats)} with params {dict(e.params)}: "
                          f"{type(err).__name__}: {err}")
        if isinstance(e, If):
            ct = self.atom(e.cond, env)
            if ct != _BOOL:
                self.fail(f"if condition has type {ct}, not bool")
            st = self.stmt
            t1 = self.body(e.then, env, seen)
            self.stmt = st
            t2 = self.body(e.else_, env, seen)
            self.stmt = st
            if t1 != t2:
                self.fail(f"branches yield different types: {_ts(t1)} and {_ts(t2)}")
            return tuple(t1)
        if isinstance(e, Loop):
            st = self.stmt
            if len(e.params) != len(e.init):
                self.fail(f"loop has {len(e.params)} params but {len(e.init)} initial values")
            its = [self.atom(a, env) for a in e.init]
            pts = [p.type for p in e.params]
            if its != pts:
                self.fail(f"loop initial values {_ts(its)} differ from the param types {_ts(pts)}")
            inner = dict(env)
            for p in e.params:
                self.bind(p, seen)
                inner[p.name] = p
            if isinstance(e.form, ForForm):
                idx = e.form.index
                if not isinstance(idx, Var) or idx.type != _I64:
                    self.fail(f"loop index must be an i64 scalar variable, got {idx!r}")
                bt = self.atom(e.form.bound, env)
                if bt != _I64:
                    self.fail(f"loop bound has type {bt}, not i64")
                self.bind(idx, seen)
                inner[idx.name] = idx
            elif isinstance(e.form, WhileForm):
                if e.form.cond not in e.params:
                    self.fail(f"while condition '{getattr(e.form.cond, 'name', e.form.cond)}' is not a loop param")
                if e.form.cond.type != _BOOL:
                    self.fail(f"while condition has type {e.form.cond.type}, not bool")
            else:
                self.fail(f"unknown loop form {type(e.form).__name__}")
            rts = self.body(e.body, inner, seen)
            self.stmt = st
            if rts != pts:
                self.fail(f"loop body yields {_ts(rts)} but the params have types {_ts(pts)}")
            return tuple(pts)
        if isinstance(e, Map):
            return self.map(e, env, seen)
        if isinstance(e, Apply):
            callee = self.funcs.get(e.func)
            if callee is None:
                self.fail(f"calls unknown function '{e.func}'")
            ats = [self.atom(a, env) for a in e.args]
            pts = [p.type for p in callee.params]
            if ats != pts:
                self.fail(f"calls '{e.func}' with {_ts(ats)} but it takes {_ts(pts)}")
            return tuple(callee.ret_types)
        # a construct this checker does not know: scopes and SSA only
        from .traverse import exp_atoms, exp_scopes

        for a in exp_atoms(e):
            self.atom(a, env)
        st = self.stmt
        for binders, b in exp_scopes(e):
            inner = dict(env)
            for v in binders:
                self.bind(v, seen)
                inner[v.name] = v
            self.body(b, inner, seen)
            self.stmt = st
        return None


    def map(self, e: Map, env: dict, seen: set):
        st = self.stmt
        if len(e.lam.params) != 1 + len(e.arrays) + len(e.accs):
            self.fail(f"map has {len(e.lam.params)} lambda params for {len(e.arrays)} arrays and "
                      f"{len(e.accs)} accumulators (expected the index first)")
        if not isinstance(e.width, Const) or e.width.type != _I64:
            self.fail("map width is not an i64 constant (shapes are static)")
        if e.index.type != _I64:
            self.fail("map index is not an i64 scalar")
        width = e.width.value
        inner = dict(env)
        for p in e.lam.params:
            self.bind(p, seen)
            inner[p.name] = p
        for a, p in zip(e.arrays, e.elems):
            t = self.atom(a, env)
            if not isinstance(t, TensorType) or t.ndim == 0:
                self.fail(f"map over '{getattr(a, 'name', a)}', which is not an array")
            if t.shape[0] != width:
                self.fail(f"map of width {width} over an array of leading dimension {t.shape[0]}")
            if p.type != TensorType(t.dtype, t.shape[1:]):
                self.fail(f"map element '{p.name}' has type {p.type} but '{getattr(a, 'name', a)}' has type {t}")
        ats = [self.atom(a, env) for a in e.accs]
        if ats != [p.type for p in e.acc_params]:
            self.fail(f"map accumulators {_ts(ats)} differ from their params {_ts(p.type for p in e.acc_params)}")
        rts = self.body(e.lam.body, inner, seen)
        self.stmt = st
        if e.n_out < 0 or rts[e.n_out:] != ats:
            self.fail(f"map body yields {_ts(rts)}, which does not end with the accumulator types {_ts(ats)}")
        outs = []
        for t in rts[:e.n_out]:
            if not isinstance(t, TensorType):
                self.fail(f"map body yields {t}, which cannot be stacked")
            outs.append(TensorType(t.dtype, (width,) + tuple(t.shape)))
        return tuple(outs) + tuple(ats)


def check_func(f: Func, prog: Prog | None = None) -> None:
    _Checker(prog or Prog((f,), f.name)).func(f)


def check_prog(prog: Prog) -> None:
    c = _Checker(prog)
    if prog.entry not in c.funcs:
        raise IRError(f"entry function '{prog.entry}' is not defined")
    for f in prog.funcs:
        c.func(f)


def checks_enabled() -> bool:
    return os.environ.get("PULLBACK_CHECKS", "") == "1"


def maybe_check(prog: Prog, where: str = "") -> Prog:
    """Run `check_prog` when PULLBACK_CHECKS=1; returns `prog` for chaining."""
    if checks_enabled():
        try:
            check_prog(prog)
        except IRError as e:
            if where:
                raise IRError(f"after {where}: {e.msg}", loc=e.loc) from None
            raise
    return prog
