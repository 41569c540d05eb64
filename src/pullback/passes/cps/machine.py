"""The step machine: the blocks of a `Cfg` emitted as one `while` loop.

Contract: `emit_machine(prog, cfg) -> Machine` gives the machine in parts:
its initial state (from the entry's parameters), its `step` (one iteration)
and where the results are; `Machine.func()` puts them together as the new
entry function (the original entry's name, params and result types): it
initialises the state, runs `while running: state = step(state)`, and returns
the entry function's result registers. The state (the loop's parameters, in
this order; `MachineLayout` names them) is

- `pc` (i64): the id of the block to run next; `HALT` (-1) once the entry
  function has returned;
- `running` (bool): `pc != HALT`, the loop condition;
- the registers: typed slots `(type, k)`. A block's k-th parameter of type T
  lives in register (T, k); a function's k-th result of type T is returned in
  register (T, k), which is where its return points read their parameters
  (the call's results). Unused registers hold zeros (or an empty store);
- `tags` (store<i64>): the return tags of the pending continuations, with
  `HALT` at the bottom;
- one *continuation stack* per captured tensor type: the values the pending
  continuations captured, pushed by calls and popped by their return points;
- for each element type of a captured *store*, a spill store<T> of its
  elements and a store<i64> of their counts (a store cannot hold stores).

One step (one loop iteration) dispatches on `pc` with a balanced tree of
`if pc < mid` and runs exactly one block. A store value is used linearly: a
register whose store a block reads and does not write is reset to an empty
store.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ...ir.builder import Builder
from ...ir.core import Body, Const, Func, If, Prim, Prog, Var
from ...ir.names import NameSupply
from ...ir.traverse import all_names, rename_body
from ...ir.types import BOOL, I64, StoreType
from .cfg import Branch, Call, Cfg, Jump, Return

HALT = -1


def _tkey(t) -> str:
    return str(t)


def layout(types) -> list:
    """Register keys `(type, k)` for a sequence of types: the k-th of its type."""
    seen: Counter = Counter()
    out = []
    for t in types:
        out.append((t, seen[t]))
        seen[t] += 1
    return out


class MachineLayout:
    """The machine's state variables (see the module docstring)."""

    def __init__(self, prog: Prog, cfg: Cfg):
        self.cfg = cfg
        self.supply = NameSupply(all_names(prog))
        need: Counter = Counter()
        for blk in cfg.blocks:
            for t, n in Counter(p.type for p in blk.params).items():
                need[t] = max(need[t], n)
        for f in cfg.funcs.values():
            for t, n in Counter(f.ret_types).items():
                need[t] = max(need[t], n)
        keys = sorted(((t, k) for t, n in need.items() for k in range(n)), key=lambda x: (_tkey(x[0]), x[1]))
        self.regs = {key: self._var(f"r_{_short(key[0])}{key[1]}", key[0]) for key in keys}
        self.pc = self._var("pc", I64)
        self.running = self._var("running", BOOL)
        self.tags = self._var("tags", StoreType(I64))
        ctypes = {v.type for blk in cfg.blocks for v in blk.restore}
        self.stacks = {t: self._var(f"k_{_short(t)}", StoreType(t)) for t in sorted(ctypes, key=_tkey)}

    def _var(self, hint, t) -> Var:
        return Var(self.supply.fresh(hint), t)

    def state(self) -> list:
        """The state variables after `running`, in loop order."""
        return [self.pc, *self.regs.values(), self.tags, *self.stacks.values()]


def _short(t) -> str:
    if isinstance(t, StoreType):
        return "s" + _short(t.elem)
    return t.dtype + ("_" + "x".join(map(str, t.shape)) if t.shape else "")


class _Emitter:
    def __init__(self, lay: MachineLayout):
        self.lay = lay
        self.cfg = lay.cfg

    # -- one block --------------------------------------------------------
    def block(self, blk) -> Body:
        lay = self.lay
        b = Builder(lay.supply)
        cur = {"tags": lay.tags, **{t: v for t, v in lay.stacks.items()}}
        for v in reversed(blk.restore):
            s2 = b.fresh(lay.stacks[v.type].name, lay.stacks[v.type].type)
            b.let((s2, v), Prim("store_pop", (cur[v.type],)))
            cur[v.type] = s2
        b.stmts.extend(blk.stmts)
        keys = layout(p.type for p in blk.params)
        consumed = {k for k in keys if isinstance(k[0], StoreType)}
        result = self.term(b, blk, blk.term, cur, consumed)
        body = b.body(result)
        return rename_body(body, lay.supply, {p: lay.regs[k] for p, k in zip(blk.params, keys)})

    def term(self, b: Builder, blk, term, cur, consumed) -> list:
        lay = self.lay
        cur = dict(cur)
        if isinstance(term, Branch):
            arms = []
            for t in (term.then, term.else_):
                sb = b.child()
                arms.append(sb.body(self.term(sb, blk, t, cur, consumed)))
            outs = tuple(b.fresh(v.name, v.type) for v in lay.state())
            b.let(outs, If(term.cond, arms[0], arms[1]))
            return list(outs)
        if isinstance(term, Jump):
            target = self.cfg.blocks[term.target]
            writes = dict(zip(layout(p.type for p in target.params), term.args))
            pc = Const(term.target, I64)
        elif isinstance(term, Return):
            writes = dict(zip(layout(self.cfg.funcs[blk.func].ret_types), term.results))
            tags2, pc = b.emit_multi("store_pop", cur["tags"], name="tags")
            cur["tags"] = tags2
        elif isinstance(term, Call):
            for v in term.saved:
                cur[v.type] = b.emit("store_push", cur[v.type], v, name=lay.stacks[v.type].name)
            cur["tags"] = b.emit("store_push", cur["tags"], Const(term.ret_block, I64), name="tags")
            callee = self.cfg.funcs[term.func]
            writes = dict(zip(layout(p.type for p in callee.params), term.args))
            pc = Const(self.cfg.entry_block[term.func], I64)
        else:
            raise TypeError(f"unknown block end {term!r}")
        regs = []
        for key, var in lay.regs.items():
            if key in writes:
                regs.append(writes[key])
            elif key in consumed:
                regs.append(b.emit("store_new", elem=key[0].elem, name=var.name))
            else:
                regs.append(var)
        return [pc, *regs, cur["tags"], *(cur[t] for t in lay.stacks)]

    # -- the dispatch tree ------------------------------------------------
    def dispatch(self, lo: int, hi: int) -> Body:
        if hi - lo == 1:
            return self.block(self.cfg.blocks[lo])
        mid = (lo + hi) // 2
        b = Builder(self.lay.supply)
        c = b.lt(self.lay.pc, Const(mid, I64), name="low")
        outs = tuple(b.fresh(v.name, v.type) for v in self.lay.state())
        b.let(outs, If(c, self.dispatch(lo, mid), self.dispatch(mid, hi)))
        return b.body(outs)


@dataclass(frozen=True)
class Machine:
    """A program as a step machine, in parts (see the module docstring).

    - `state`: the state variables: `pc`, `running`, the registers, `tags`,
      the continuation stacks (`PC`, `RUNNING` are the positions of the first two);
    - `init`: a body whose free variables are `params` (the entry's) and whose
      results are the initial state, one atom per state variable;
    - `step`: a body whose free variables are `state`, computing the next state;
    - `results`: the positions in `state` of the entry's results once
      `running` is false.
    """

    name: str
    params: tuple
    ret_types: tuple
    state: tuple
    init: Body
    step: Body
    results: tuple
    nblocks: int
    loc: object = None

    def func(self) -> Func:
        """`while running: state = step(state)`, as the entry function."""
        b = Builder(NameSupply(all_names(self.init) | all_names(self.step) | {v.name for v in self.state}))
        b.stmts.extend(self.init.stmts)
        outs = b.while_loop(self.state, self.init.result, self.state[RUNNING], self.step)
        return Func(self.name, self.params, b.body([outs[k] for k in self.results]), self.ret_types, self.loc)


PC, RUNNING = 0, 1


def emit_machine(prog: Prog, cfg: Cfg) -> Machine:
    lay = MachineLayout(prog, cfg)
    entry = prog.main
    b = Builder(lay.supply)
    writes = dict(zip(layout(p.type for p in entry.params), entry.params))
    init = [Const(cfg.entry_block[entry.name], I64), Const(True, BOOL)]
    for key, var in lay.regs.items():
        if key in writes:
            init.append(writes[key])
        else:
            init.append(b.zeros_like(key[0], name=var.name))
    tags = b.emit("store_new", elem=I64, name="tags")
    init.append(b.emit("store_push", tags, Const(HALT, I64), name="tags"))
    for t, var in lay.stacks.items():
        init.append(b.emit("store_new", elem=t, name=var.name))

    step = _Emitter(lay).dispatch(0, len(cfg.blocks))
    sb = b.child()
    sb.stmts.extend(step.stmts)
    nxt = list(step.result)
    run = sb.ne(nxt[PC], Const(HALT, I64), name="running")
    state = (lay.pc, lay.running, *lay.state()[1:])
    pos = {v: j for j, v in enumerate(state)}
    return Machine(entry.name, tuple(entry.params), tuple(entry.ret_types), state, b.body(init),
                   sb.body([nxt[PC], run, *nxt[1:]]), tuple(pos[lay.regs[k]] for k in layout(entry.ret_types)),
                   len(cfg.blocks), entry.loc)
