"""CPS with defunctionalised continuations: a whole program as one step machine.

Contract: `cps_prog(prog) -> Prog` is a pure pass. The result has one
function, the entry, with the original entry's name, parameters and result
types, and the same results on every input (the same operations run in the
same order, so they are bit-identical). Its body is a single `while` loop, a
*step machine*; no `Apply` remains and no loop is left inside the loop, so the
native stack depth of the result does not grow with the recursion depth of
the source: pending calls live in the machine's stores. `cps_machine(prog)
-> Machine` gives the same machine in parts (initial state, one step, where
the results are) for passes that run it differently (issue 11: a step
counter, interrupt and resume).

How (`cfg.py`, `machine.py`; note [cps] in docs/design.md):

- Every function reachable from the entry is cut into *blocks* of
  straight-line code (`Prim`s, and `If`s with no call or loop inside). Each
  call, each loop, and each `if` containing a call or loop, ends a block:
  loops and such ifs become blocks and jumps; a call pushes its continuation
  and jumps to the callee's entry block; a call in tail position just jumps.
- A continuation is *defunctionalised*: the tag (i64) of the block the call
  returns to, pushed on the `tags` store, plus the values that block needs
  (the values live across the call), pushed on one store per type. A return
  pops a tag into `pc`; the return point pops its captured values. A store
  live across a call is captured like any value, on a store<store<T>>.
- The machine state (the loop's parameters): `pc`, `running`, typed
  registers (a block's k-th parameter of type T is register (T, k); a
  function's results are returned in the registers of its result types),
  `tags` (with `HALT` at the bottom), and the continuation stores. One step
  dispatches on `pc` (a balanced tree of `if pc < mid`) and runs one block,
  whose work is bounded by its code: loop iterations are separate steps.
"""
from __future__ import annotations

from ...ir.core import Prog
from .cfg import build_cfg
from .machine import HALT, PC, RUNNING, Machine, emit_machine

__all__ = ["HALT", "PC", "RUNNING", "Machine", "cps_machine", "cps_prog", "cps_step_prog"]


def cps_machine(prog: Prog) -> Machine:
    """The step machine of `prog`, in parts (see `machine.Machine`). Maps run as
    sequential loops in it (`passes.lower_maps`): each iteration is a step."""
    from ..lower_maps import lower_maps

    prog = lower_maps(prog)
    return emit_machine(prog, build_cfg(prog))


def cps_prog(prog: Prog) -> Prog:
    """`prog` as one function whose body is a single step-machine loop."""
    from ...ir import typecheck

    out = Prog((cps_machine(prog).func(),), prog.entry)
    typecheck.maybe_check(out, "cps")
    return out


def cps_step_prog(prog: Prog, step_name: str) -> Prog:
    """`prog` as its step machine with the step a function of its own: the entry
    initialises the state and runs ``while running: state = step_name(state)``;
    `step_name(state...) -> state...` is one step. Whole-program checkpointing
    (note [loop-checkpointing]) reverses this loop by schedule, a step at a time."""
    from ...ir import typecheck
    from ...ir.builder import Builder
    from ...ir.core import Func
    from ...ir.names import NameSupply
    from ...ir.traverse import all_names

    m = cps_machine(prog)
    step = Func(step_name, tuple(m.state), m.step, tuple(v.type for v in m.state), m.loc)
    b = Builder(NameSupply(all_names(m.init) | {v.name for v in m.state} | {p.name for p in m.params}))
    b.stmts.extend(m.init.stmts)
    lb = b.child()
    ps = [lb.fresh(v.name, v.type) for v in m.state]
    nxt = lb.apply(step_name, ps, [v.type for v in m.state], names=[v.name for v in m.state])
    outs = b.while_loop(ps, m.init.result, ps[RUNNING], lb.body(list(nxt)))
    entry = Func(m.name, m.params, b.body([outs[k] for k in m.results]), m.ret_types, m.loc)
    out = Prog((entry, step), prog.entry)
    typecheck.maybe_check(out, "cps")
    return out
