"""Reverse mode: `vjp_prog(prog, fname) -> (prog', "f_vjp")`.

Contract: ``f_vjp(params..., ct_r for each float result r) -> (results...,
ct_p for each float param p)``. The scheme is Futhark's with Tapenade's
refinements (note [reverse-mode] in docs/design.md):

- each scope has a forward sweep followed by a return sweep; the return sweep
  of an inner scope (loop body, branch, non-recursive callee) re-executes
  that scope's forward sweep;
- loops save their loop-carried values once per iteration into stores, and
  arrays updated in place are restored by an undo log (`loop.py`);
- adjoints are symbolic zeros until a contribution arrives (`adjoints.py`),
  and statements that do not vary with the inputs get no adjoint code
  (`..activity`).

One module per construct: `prim`, `call`, `if_`, `loop`; `body` sequences them;
`merge_calls` then drops primal calls that a vjp call recomputes anyway.
Calls of recursive functions are reversed in split mode (`split`, `tape`,
note [split-calls]) unless the strategy is `Joint()`: the callee's forward
sweep stores its residuals, so recursion costs linear time.
"""
from __future__ import annotations

from ...ir import names
from ...ir.builder import Builder
from ...ir.core import Func, Prog, Var
from ...ir.names import NameSupply
from .._common import DerivedNames, differentiable
from ..activity import CallDeps, mark_body
from . import split
from .adjoints import Adjoints
from .body import fwd_body, rev_body
from .merge_calls import merge_calls_func
from .tape import Retry, SplitPlan, recursive_funcs


def vjp_prog(prog: Prog, fname: str | None = None, fresh=None, checkpoint=None,
             active: tuple | None = None) -> tuple[Prog, str]:
    """`fresh(hint) -> name`, if given, names the derived functions (the frontend
    passes its own supply, which knows functions still being staged).
    `checkpoint` is a `pullback.checkpointing.Strategy` (default: "store").
    `active` (one bool per float parameter of the entry, None: all) marks the
    parameters whose adjoints are wanted: the entry's activity analysis starts
    from those only, and the others' adjoints are returned as zeros (note
    [entry-activity]). Ignored for a recursive or split entry, whose vjp other
    calls reuse."""
    from ...checkpointing import DEFAULT
    from ..inline import inline_for_ad
    from ..simplify import simplify_func

    entry = fname or prog.entry
    prog = inline_for_ad(prog)   # tiny transcendental helpers become statements (note [inline-for-ad])
    machine = prog
    if getattr(checkpoint, "loops", False):
        machine = _as_machine(prog, entry, fresh)
    plan = SplitPlan(machine, entry, checkpoint or DEFAULT, joint={entry} if machine is not prog else ())
    prog = machine
    derived = (DerivedNames(prog, names.vjp_func, fresh), DerivedNames(prog, names.fwd_func, fresh),
               DerivedNames(prog, names.bwd_func, fresh), DerivedNames(prog, names.segment_func, fresh))
    # split mode learns the residual types and the parameters each f_bwd takes
    # while it builds: build again until nothing new was learnt (note [split-calls])
    if active is not None and (all(active) or entry in plan.split or entry in recursive_funcs(prog, entry)):
        active = None
    for _ in range(64):
        plan.grew = False
        ctx = RevContext(prog, plan, derived)
        ctx.entry_active = (entry, active)
        try:
            name = ctx.func(entry)
        except Retry:
            continue
        if not plan.grew:
            break
    else:  # pragma: no cover - the plan only grows, and it is finite
        raise RuntimeError("split-mode plan did not converge")
    # dead code: primal values that re-executed forward sweeps compute but no adjoint reads
    out = prog.with_funcs(list(prog.funcs) + [simplify_func(f) for f in ctx.new_funcs])
    from ...ir import typecheck

    typecheck.maybe_check(out, "vjp")
    return out, name


def _as_machine(prog: Prog, entry: str, fresh) -> Prog:
    """Whole-program checkpointing (note [loop-checkpointing]): an entry that can
    reach a recursion becomes its step machine (`cps_step_prog`), one `while` loop
    whose state holds the call stack, so the loop schedules apply to the whole run.
    Programs with custom rules or stores (derivative code) stay as they are."""
    from ...ir.traverse import reachable_funcs
    from ..cps import cps_step_prog
    from .tape import recursive_funcs

    if not recursive_funcs(prog, entry):
        return prog
    reach = [prog.func(n) for n in sorted(reachable_funcs(prog, [entry]))]
    if any(f.rules or _uses_stores(f) for f in reach):
        # custom rules, or derivative code (stores: a derivative differentiated again,
        # e.g. a checkpointed loop's segment functions) stay as they are: split mode
        return prog
    step = DerivedNames(prog, names.step_func, fresh).name(entry)
    lowered = cps_step_prog(Prog(tuple(reach), entry), step)
    return prog.with_funcs([lowered.main if f.name == entry else f for f in prog.funcs] + [lowered.func(step)])


def _uses_stores(f) -> bool:
    from ...ir.traverse import iter_lets
    from ...ir.types import StoreType

    return (any(isinstance(p.type, StoreType) for p in f.params)
            or any(isinstance(v.type, StoreType) for st in iter_lets(f.body) for v in st.pat))


class RevContext:
    """State of one build of the pass: derived functions made so far."""

    def __init__(self, prog: Prog, plan: SplitPlan, derived):
        self.prog = prog
        self.deps = CallDeps(prog)   # which results of each callee depend on which parameters (note [call-activity])
        self.plan = plan
        self.names, self.fwd_names, self.bwd_names, self.seg_names = derived
        self.strategy = plan.strategy
        self.seg_count = 0           # segment functions of checkpointed loops made (checkpoint.py)
        self.ckpt_step = 0           # > 0 while a checkpointed loop's step is reversed (checkpoint.py)
        self.built: set = set()
        self.new_funcs: list[Func] = []
        # per-function state, set by `func`
        self.varied: set = set()
        self.fparams: set = set()    # the parameters of the function being split
        self.supply: NameSupply | None = None
        # var -> (builder, out): `out`, emitted into `builder`, holds var's value again
        # (a loop's return sweep restores the array it updated in place, note [nested-undo])
        self.equal: dict = {}
        self.nonneg: set = set()     # index vars known to be >= 0 (reverse counters; independent.py)
        self.vjp_of: dict = {}  # vjp function name -> primal function name (merge_calls)
        self.split_memo: dict = {}
        self.entry_active = (None, None)   # (entry name, its active float parameters), vjp_prog
        self.preload: dict = {}      # var -> (saved rows, loop index): read, not computed (saved.py)

    def func(self, name: str) -> str:
        """The vjp of `name` (joint contract: params, cotangents -> results, adjoints)."""
        new = self.names.name(name)
        if ("vjp", name) in self.built:
            return new
        self.built.add(("vjp", name))
        f = self.prog.func(name)
        if name in self.plan.split:
            fwd, bwd = self.split_names(name)
            self.new_funcs.append(split.wrapper(self, f, new, fwd, bwd))
            return new
        saved = (self.varied, self.supply, self.fparams)
        try:
            self.new_funcs.append(self._build(f, new))
        finally:
            self.varied, self.supply, self.fparams = saved
        return new

    def split_names(self, name: str) -> tuple[str, str]:
        """(f_fwd, f_bwd) of a split function, built on first use."""
        fwd, bwd = self.fwd_names.name(name), self.bwd_names.name(name)
        if ("split", name) not in self.built:
            self.built.add(("split", name))
            saved = (self.varied, self.supply, self.fparams)
            try:
                fo, bo = split.build(self, self.prog.func(name), fwd, bwd)
            finally:
                self.varied, self.supply, self.fparams = saved
            self.new_funcs += [fo, merge_calls_func(bo, self.vjp_of)]
        return fwd, bwd

    def _build(self, f: Func, new: str) -> Func:
        from ...ir.traverse import all_names

        self.supply = NameSupply(all_names(f))
        b = Builder(self.supply)
        self.varied = {p for p in f.params if differentiable(p.type)}
        entry, active = self.entry_active
        if active is not None and f.name == entry:
            floats = [p for p in f.params if p.type.is_float]
            self.varied -= {p for p, a in zip(floats, active) if not a}
        mark_body(f.body, self.varied, self.deps)
        tapes = fwd_body(self, b, f.body)
        adj = Adjoints(b, self.varied)
        ct_params = []
        for r in f.body.result:
            if not differentiable(r.type):
                continue
            ct = b.fresh(names.result_adjoint(r.name if isinstance(r, Var) else ""), r.type)
            ct_params.append(ct)
            if isinstance(r, Var) and r in self.varied:
                adj.add(r, ct)
        rev_body(self, b, f.body, adj, tapes)
        grads = [adj.get_or_zero(p) for p in f.params if differentiable(p.type)]
        ret = tuple(f.ret_types) + tuple(p.type for p in f.params if differentiable(p.type))
        out = Func(new, f.params + tuple(ct_params), b.body(list(f.body.result) + grads), ret, f.loc)
        return merge_calls_func(out, self.vjp_of)
