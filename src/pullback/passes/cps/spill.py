"""Stores live across a call: store lengths, and moving a store to a spill stack.

Contract:
- `with_lengths(prog) -> (prog, lengths)`: the same program in which every
  store value `s` has a companion i64 value, its length: functions take (and
  return) `s, s_len` where they took (returned) `s`, loops and ifs carry
  it, and `store_new`/`store_push`/`store_pop`/`store_zeros_like` compute
  it. `lengths[(function name, s)]` is the companion atom of the store var
  `s`. The entry function keeps its signature; an entry that takes or returns
  a store is refused (`PullbackError`).
- `save_store(b, cur, s, stacks, n)`: emit code moving the elements of `s`
  (`n` of them) onto the spill stack of its element type (`stacks[elem]`),
  then `n` onto the i64 stack; `restore_store(b, cur, s, stacks)` undoes
  it, binding `s` to a store with the same elements in the same order. `cur`
  maps each stack's key to its current value and is updated.

Why: the IR's stores cannot hold stores, so a continuation cannot capture one
as a value; its elements are captured instead. This costs O(len(s)) per call
that `s` is live across (see note [cps]).
"""
from __future__ import annotations

from ...errors import PullbackError
from ...ir.builder import Builder
from ...ir.core import Apply, Body, Const, ForForm, Func, If, Let, Loop, Prim, Prog, Var
from ...ir.names import NameSupply
from ...ir.traverse import all_names
from ...ir.types import I64, StoreType

_ONE = Const(1, I64)


def _is_store(x) -> bool:
    return isinstance(x.type, StoreType)


def _aug_types(ts) -> tuple:
    out = []
    for t in ts:
        out.append(t)
        if isinstance(t, StoreType):
            out.append(I64)
    return tuple(out)


class _Lengths:
    def __init__(self, f: Func, lengths: dict):
        self.f = f
        self.lengths = lengths
        self.supply = NameSupply(all_names(f))

    def new(self, s: Var) -> Var:
        n = Var(self.supply.fresh(s.name + "_len"), I64)
        self.lengths[(self.f.name, s)] = n
        return n

    def len_of(self, s):
        return self.lengths[(self.f.name, s)]

    def aug(self, atoms) -> tuple:
        out = []
        for a in atoms:
            out.append(a)
            if _is_store(a):
                out.append(self.len_of(a))
        return tuple(out)

    def aug_binders(self, vs) -> tuple:
        out = []
        for v in vs:
            out.append(v)
            if _is_store(v):
                out.append(self.new(v))
        return tuple(out)

    def func(self, entry: bool) -> Func:
        f = self.f
        if entry and (any(_is_store(p) for p in f.params) or any(isinstance(t, StoreType) for t in f.ret_types)):
            raise PullbackError(f"cps: the entry function '{f.name}' takes or returns a store")
        params = tuple(f.params) if entry else self.aug_binders(f.params)
        body = self.body(f.body, entry)
        rts = tuple(f.ret_types) if entry else _aug_types(f.ret_types)
        return Func(f.name, params, body, rts, f.loc)

    def body(self, body: Body, plain_result: bool = False) -> Body:
        stmts: list = []
        for st in body.stmts:
            self.let(st, stmts)
        res = tuple(body.result) if plain_result else self.aug(body.result)
        return Body(tuple(stmts), res)

    def let(self, st: Let, out: list) -> None:
        e = st.exp
        if isinstance(e, Prim):
            out.append(st)
            if e.op == "store_new":
                self.lengths[(self.f.name, st.pat[0])] = Const(0, I64)
            elif e.op == "store_zeros_like":
                self.lengths[(self.f.name, st.pat[0])] = self.len_of(e.args[0])
            elif e.op in ("store_push", "store_pop"):
                n = self.new(st.pat[0])
                op = "add" if e.op == "store_push" else "sub"
                out.append(Let((n,), Prim(op, (self.len_of(e.args[0]), _ONE)), st.loc))
            elif any(_is_store(v) for v in st.pat):
                raise PullbackError(f"cps: unknown store primitive {e.op}")
            return
        if isinstance(e, If):
            e = If(e.cond, self.body(e.then), self.body(e.else_))
        elif isinstance(e, Loop):
            params = self.aug_binders(e.params)
            e = Loop(params, self.aug(e.init), e.form, self.body(e.body))
        elif isinstance(e, Apply):
            e = Apply(e.func, self.aug(e.args))
        elif any(_is_store(v) for v in st.pat):
            raise PullbackError(f"cps: a store produced by {type(e).__name__}")
        out.append(Let(self.aug_binders(st.pat), e, st.loc))


def with_lengths(prog: Prog):
    lengths: dict = {}
    funcs = [_Lengths(f, lengths).func(f.name == prog.entry) for f in prog.funcs]
    return prog.with_funcs(funcs), lengths


def _move(b: Builder, src, dst, n, elem):
    """(src', dst') after popping `n` elements from src and pushing each onto dst."""
    lb = b.child()
    i = lb.fresh("i", I64)
    s, d = lb.fresh(src.name, src.type), lb.fresh(dst.name, dst.type)
    s2, x = lb.emit_multi("store_pop", s, name="moved")
    d2 = lb.emit("store_push", d, x, name=dst.name)
    return b.for_loop([s, d], [src, dst], i, n, lb.body([s2, d2]))


def save_store(b: Builder, cur: dict, s: Var, stacks: dict, n) -> None:
    elem = s.type.elem
    _, cur[elem] = _move(b, s, cur[elem], n, elem)
    cur[I64] = b.emit("store_push", cur[I64], n, name=stacks[I64].name)


def restore_store(b: Builder, cur: dict, s: Var, stacks: dict) -> None:
    elem = s.type.elem
    k, n = b.emit_multi("store_pop", cur[I64], name=stacks[I64].name)
    cur[I64] = k
    fresh = b.emit("store_new", elem=elem, name=s.name)
    lb = b.child()
    i = lb.fresh("i", I64)
    sp, d = lb.fresh(stacks[elem].name, stacks[elem].type), lb.fresh(s.name, s.type)
    sp2, x = lb.emit_multi("store_pop", sp, name="moved")
    d2 = lb.emit("store_push", d, x, name=s.name)
    out = b.fresh(stacks[elem].name, stacks[elem].type)
    b.let((out, s), Loop((sp, d), (cur[elem], fresh), ForForm(i, n), lb.body([sp2, d2])))
    cur[elem] = out
