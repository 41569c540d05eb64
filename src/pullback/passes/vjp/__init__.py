"""Reverse mode: `vjp_prog(prog, fname) -> (prog', "f_vjp")`.

Contract: ``f_vjp(params..., ct_r for each float result r) -> (results...,
ct_p for each float param p)``. The scheme is Futhark's with Tapenade's
refinements (note [reverse-mode] in docs/design.md):

- each scope has a forward sweep followed by a return sweep; the return sweep
  of an inner scope (loop body, branch, callee) re-executes that scope's
  forward sweep, so there is no global tape;
- loops save their loop-carried values once per iteration into stores, and
  arrays updated in place are restored by an undo log (`loop.py`);
- adjoints are symbolic zeros until a contribution arrives (`adjoints.py`),
  and statements that do not vary with the inputs get no adjoint code
  (`..activity`).

One module per construct: `prim`, `call`, `if_`, `loop`; `body` sequences them;
`merge_calls` then drops primal calls that a vjp call recomputes anyway.
"""
from __future__ import annotations

from ...ir import names
from ...ir.builder import Builder
from ...ir.core import Func, Prog, Var
from ...ir.names import NameSupply
from .._common import DerivedNames, differentiable
from ..activity import mark_body
from .adjoints import Adjoints
from .body import fwd_body, rev_body
from .merge_calls import merge_calls_func


def vjp_prog(prog: Prog, fname: str | None = None, fresh=None) -> tuple[Prog, str]:
    """`fresh(hint) -> name`, if given, names the derived functions (the frontend
    passes its own supply, which knows functions still being staged)."""
    ctx = RevContext(prog, fresh)
    name = ctx.func(fname or prog.entry)
    from ..simplify import simplify_func

    # dead code: primal values that re-executed forward sweeps compute but no adjoint reads
    out = prog.with_funcs(list(prog.funcs) + [simplify_func(f) for f in ctx.new_funcs])
    from ...ir import typecheck

    typecheck.maybe_check(out, "vjp")
    return out, name


class RevContext:
    """State of one run of the pass: derived functions made so far."""

    def __init__(self, prog: Prog, fresh=None):
        self.prog = prog
        self.names = DerivedNames(prog, names.vjp_func, fresh)
        self.new_funcs: list[Func] = []
        # per-function state, set by `func`
        self.varied: set = set()
        self.supply: NameSupply | None = None
        # var -> (builder, out): `out`, emitted into `builder`, holds var's value again
        # (a loop's return sweep restores the array it updated in place, note [nested-undo])
        self.equal: dict = {}
        self.vjp_of: dict = {}  # vjp function name -> primal function name (merge_calls)

    def func(self, name: str) -> str:
        new, build = self.names.get(name)
        if not build:
            return new
        saved = (self.varied, self.supply)
        try:
            self.new_funcs.append(self._build(self.prog.func(name), new))
        finally:
            self.varied, self.supply = saved
        return new

    def _build(self, f: Func, new: str) -> Func:
        from ...ir.traverse import all_names

        self.supply = NameSupply(all_names(f))
        b = Builder(self.supply)
        self.varied = {p for p in f.params if differentiable(p.type)}
        mark_body(f.body, self.varied)
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
