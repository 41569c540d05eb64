"""Basic blocks: every function of a program cut into straight-line blocks.

Contract: `build_cfg(prog) -> Cfg` cuts every function reachable from the
entry into `Block`s, numbered 0, 1, ... in a deterministic order (functions in
program order, blocks in the order the conversion meets them). A block is

- `params`: the values it reads on entry (the machine keeps them in
  registers, see `machine.py`);
- `restore`: for a *return point* (the block a call returns to), the values
  the call saved, popped from the continuation stores on entry; its `params`
  are then exactly the call's results;
- `stmts`: straight-line code: `Prim`s and `If`s with no call or loop inside;
- `term`: how it ends: `Jump`, `Branch` (an `if` between two ends),
  `Call` (save the live values and a return tag, enter the callee), or
  `Return` (results into the function's result registers, pop a tag).

Every call, every loop, and every `if` with a call or loop inside becomes
blocks and jumps. A call in tail position (its results are the function's
results) is a plain jump to the callee's entry block: no continuation is
pushed. Variables keep their source names inside a block; `machine.py`
renames each block when it emits it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import PullbackError
from ...ir.core import Apply, Body, Const, ForForm, Func, If, Let, Loop, Prim, Prog, Var
from ...ir.names import NameSupply
from ...ir.traverse import all_names, exp_scopes, free_vars, iter_lets, reachable_funcs
from ...ir.types import BOOL, I64


@dataclass(frozen=True)
class Jump:
    target: int
    args: tuple


@dataclass(frozen=True)
class Return:
    results: tuple


@dataclass(frozen=True)
class Branch:
    cond: object          # an atom (bool)
    then: object          # Jump | Return | Branch
    else_: object


@dataclass(frozen=True)
class Call:
    func: str
    args: tuple
    ret_block: int        # the return point's block id: the continuation's tag
    saved: tuple          # Vars captured by the continuation (pushed in this order)


@dataclass
class Block:
    id: int
    func: str
    params: tuple
    stmts: list = field(default_factory=list)
    term: object = None
    restore: tuple = ()   # return points: the vars their continuation captured
    kind: str = "plain"   # "entry" | "return" | "plain" (loop headers, branches, joins)


@dataclass
class Cfg:
    blocks: list
    entry_block: dict     # function name -> id of its entry block
    funcs: dict           # function name -> Func


def _sorted(vs) -> tuple:
    return tuple(sorted(vs, key=lambda v: v.name))


def has_control(e) -> bool:
    """Does `e` call a function or run a loop (itself or anywhere inside)?"""
    if isinstance(e, (Apply, Loop)):
        return True
    for _, b in exp_scopes(e):
        for st in iter_lets(b):
            if isinstance(st.exp, (Apply, Loop)) or getattr(st.exp, "func", None) is not None:
                return True
    return False


@dataclass(frozen=True)
class _Cont:
    """Where a body's results go: `target is None` returns from the function;
    otherwise jump to block `target` with (results..., *extras)."""

    target: int | None
    extras: tuple = ()


_RET = _Cont(None)


class _FuncConv:
    def __init__(self, cfg: Cfg, f: Func):
        self.cfg = cfg
        self.f = f
        self.supply = NameSupply(all_names(f))

    def new_block(self, params, kind="plain", restore=()) -> Block:
        blk = Block(len(self.cfg.blocks), self.f.name, tuple(params), kind=kind, restore=tuple(restore))
        self.cfg.blocks.append(blk)
        return blk

    def run(self, entry: Block) -> None:
        self.seq(entry, list(self.f.body.stmts), self.f.body.result, _RET)

    def finish(self, results, k: _Cont):
        if k.target is None:
            return Return(tuple(results))
        return Jump(k.target, tuple(results) + k.extras)

    def seq(self, blk: Block, stmts, result, k: _Cont) -> None:
        for i, st in enumerate(stmts):
            if not has_control(st.exp):
                blk.stmts.append(st)
                continue
            rest = Body(tuple(stmts[i + 1:]), tuple(result))
            after = free_vars(Body(rest.stmts, rest.result + k.extras)) - set(st.pat)
            tail = not rest.stmts and tuple(result) == tuple(st.pat)
            e = st.exp
            if isinstance(e, Apply):
                self.call(blk, st, rest, k, _sorted(after), tail)
            elif isinstance(e, If):
                ka = self.after(st, rest, k, after, tail)
                blk.term = Branch(e.cond, self.arm(e.then, ka), self.arm(e.else_, ka))
            elif isinstance(e, Loop):
                self.loop(blk, e, self.after(st, rest, k, after, tail))
            else:
                raise PullbackError(f"cps: cannot lower a call inside {type(e).__name__} "
                                    f"(function '{self.f.name}')")
            return
        blk.term = self.finish(result, k)

    def call(self, blk, st, rest, k, saved, tail) -> None:
        e: Apply = st.exp
        if tail and k.target is None:
            blk.term = Jump(self.cfg.entry_block[e.func], tuple(e.args))  # tail call
            return
        ret = self.new_block(st.pat, kind="return", restore=saved)
        blk.term = Call(e.func, tuple(e.args), ret.id, saved)
        self.seq(ret, list(rest.stmts), rest.result, k)

    def after(self, st, rest, k, after, tail) -> _Cont:
        """The continuation of a lowered `if`/loop: `k` itself in tail position,
        else a new join block taking (outputs..., live values...)."""
        if tail:
            return k
        live = _sorted(after)
        join = self.new_block(tuple(st.pat) + live)
        self.seq(join, list(rest.stmts), rest.result, k)
        return _Cont(join.id, live)

    def arm(self, body: Body, k: _Cont):
        """The end of a branch: the branch's code in a block of its own."""
        if not body.stmts:
            return self.finish(body.result, k)
        live = _sorted(free_vars(Body(body.stmts, body.result + k.extras)))
        blk = self.new_block(live)
        self.seq(blk, list(body.stmts), body.result, k)
        return Jump(blk.id, live)

    def loop(self, blk, e: Loop, k: _Cont) -> None:
        params = tuple(e.params)
        inner = free_vars(e.body) - set(params)
        if isinstance(e.form, ForForm):
            idx, bound = e.form.index, e.form.bound
            inner.discard(idx)
            if isinstance(bound, Var):
                inner.add(bound)
            live = _sorted(inner | set(k.extras))
            head = self.new_block(params + (idx,) + live)
            body = self.new_block(params + (idx,) + live)
            c = Var(self.supply.fresh("more"), BOOL)
            head.stmts.append(Let((c,), Prim("lt", (idx, bound))))
            head.term = Branch(c, Jump(body.id, params + (idx,) + live), self.finish(params, k))
            nxt = Var(self.supply.fresh(idx.name), I64)
            stmts = list(e.body.stmts) + [Let((nxt,), Prim("add", (idx, Const(1, I64))))]
            self.seq(body, stmts, e.body.result, _Cont(head.id, (nxt,) + live))
            blk.term = Jump(head.id, tuple(e.init) + (Const(0, I64),) + live)
        else:
            live = _sorted(inner | set(k.extras))
            head = self.new_block(params + live)
            body = self.new_block(params + live)
            head.term = Branch(e.form.cond, Jump(body.id, params + live), self.finish(params, k))
            self.seq(body, list(e.body.stmts), e.body.result, _Cont(head.id, live))
            blk.term = Jump(head.id, tuple(e.init) + live)


def build_cfg(prog: Prog) -> Cfg:
    names = reachable_funcs(prog)
    funcs = [f for f in prog.funcs if f.name in names]
    cfg = Cfg([], {}, {f.name: f for f in funcs})
    entries = []
    for f in funcs:  # entry blocks first, so calls know their targets
        blk = Block(len(cfg.blocks), f.name, tuple(f.params), kind="entry")
        cfg.blocks.append(blk)
        cfg.entry_block[f.name] = blk.id
        entries.append((f, blk))
    for f, blk in entries:
        _FuncConv(cfg, f).run(blk)
    return cfg
