"""Return sweep of an `if`: each branch re-executes its forward sweep, then
runs its return sweep; the branches return the adjoint contributions to the
free variables they read."""
from __future__ import annotations

from ...ir import names
from ...ir.core import If, Var
from ...ir.traverse import free_vars, rename_body
from .._common import differentiable, zero_of
from ..activity import mark_body
from .adjoints import Adjoints
from .body import fwd_body, recomputed, rev_body


def rev(ctx, b, st, adj) -> None:
    e = st.exp
    cts = [adj.get(v) for v in st.pat]
    if all(c is None for c in cts):
        return
    fvs = sorted((v for v in free_vars(e.then) | free_vars(e.else_)
                  if v in ctx.varied and differentiable(v.type)), key=lambda v: v.name)
    seeded = {v: adj.get(v) for v in fvs if adj.get(v) is not None}
    branches = []
    for br in (e.then, e.else_):
        sb = b.child()
        body = recomputed(rename_body(br, ctx.supply, {}))
        mark_body(body, ctx.varied, ctx.deps)
        tapes = fwd_body(ctx, sb, body)
        inner = Adjoints(sb, ctx.varied)
        inner.m.update(seeded)  # accumulate into the existing adjoints (sparse updates stay in place)
        for r, c in zip(body.result, cts):
            if c is not None and (not isinstance(r, Var) or r in ctx.varied):
                inner.add(r, c)
        rev_body(ctx, sb, body, inner, tapes)
        branches.append((sb, [inner.get(v) for v in fvs]))
    keep = [k for k in range(len(fvs)) if any(br[1][k] is not None for br in branches)]
    if not keep:
        return
    bodies = [sb.body([g[k] if g[k] is not None else zero_of(sb, fvs[k], names.adjoint(fvs[k].name))
                       for k in keep]) for sb, g in branches]
    outs = [b.fresh(names.adjoint(fvs[k].name), fvs[k].type) for k in keep]
    b.let(tuple(outs), If(e.cond, bodies[0], bodies[1]), st.loc)
    for k, o in zip(keep, outs):
        if fvs[k] in seeded:
            adj.m[fvs[k]] = o   # the branch carried the old adjoint through
        else:
            adj.add(fvs[k], o)
