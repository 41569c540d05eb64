"""Reverse mode of functions with user-given rules (`Func.rules`, note [custom-rules]).

Contract: `vjp_name(ctx, f)` is the name of the function with the vjp contract
(``params..., ct_r for each float result r -> results..., ct_p for each float
param p``) that reverse mode calls for a call of `f`, or None when `f` has no
rule (its body is differentiated as usual).

- A ("vjp", g) rule (`pb.custom_vjp`): `g` itself (the frontend staged it with
  that contract: fwd, then bwd on fwd's residuals). Its residuals are values of
  one function, so they are recomputed with it in the return sweep, like any
  joint callee's (merge_calls drops the primal call when it can).
- A ("jvp", r) rule (`pb.custom_jvp`): `r(params..., tangents...) -> (results...,
  tangent results...)` is linear in the tangents, so the vjp of its tangent
  results with respect to its tangents, at zero tangents, is the transpose:
  ``f_vjp(x, ct) = (y, ct_t)`` where `r`'s body is inlined with the tangents
  bound to zeros and reversed with only the tangents active. Calls that take
  tangent-dependent values are inlined too (transitively, up to
  `MAX_INLINE` levels), so every call left is of primals only: it is
  inactive, and a rule that calls `f` itself (``ans = f(x)``, also inside a
  helper it passes tangents to) does not make `f_vjp` call itself.

`opaque(prog)` is the program the derivative passes are given: every function
with rules has its body replaced by zeros. The passes never read such a body
(they call its rule), and analyses of the call graph (split mode's plan of
which calls reach a recursion) must not look through it. The derived
functions call it by name, and the caller keeps the real body.
"""
from __future__ import annotations

from ...ir import names
from ...ir.builder import Builder
from ...ir.core import Apply, Body, Func, If, Let, Loop, Var
from ...ir.names import NameSupply
from ...ir.traverse import all_names, map_exp, rename_body, substitute_exp
from .._common import differentiable
from ..activity import mark_body, mark_stmt
from .adjoints import Adjoints
from .body import fwd_body, rev_body


def opaque(prog):
    """`prog` with the bodies of functions that have rules replaced by zeros (see above)."""
    if not any(_has_rule(f) for f in prog.funcs):
        return prog
    return prog.with_funcs([_stub(f) if _has_rule(f) else f for f in prog.funcs])


def _has_rule(f: Func) -> bool:
    """A user-given jvp or vjp rule (a `pb.checkpoint` marker is not one: its body
    is differentiated, note [loop-checkpointing])."""
    return f.rule("jvp") is not None or f.rule("vjp") is not None


def _stub(f: Func) -> Func:
    import dataclasses

    b = Builder(NameSupply(all_names(f)))
    res = [b.zeros(t, name="opaque") for t in f.ret_types]
    return dataclasses.replace(f, body=b.body(res))


def vjp_name(ctx, f: Func) -> str | None:
    if not _has_rule(f):
        return None
    rule = f.rule("vjp")
    if rule is not None:
        return rule
    rule = f.rule("jvp")
    if rule is None:
        return None
    new = ctx.names.name(f.name)
    if ("vjp", f.name) in ctx.built:
        return new
    ctx.built.add(("vjp", f.name))
    saved = (ctx.varied, ctx.supply, ctx.fparams)
    try:
        ctx.new_funcs.append(_transpose(ctx, f, ctx.prog.func(rule), new))
    finally:
        ctx.varied, ctx.supply, ctx.fparams = saved
    return new


def _transpose(ctx, f: Func, r: Func, new: str) -> Func:
    """`f`'s vjp from its jvp rule `r` (see the module docstring)."""
    ctx.supply = supply = NameSupply(all_names(f) | all_names(r))
    b = Builder(supply, f.loc)
    params = [b.fresh(p.name, p.type) for p in f.params]
    fl = [p for p in params if differentiable(p.type)]
    tans = [b.zeros(p.type, name=names.tangent(p.name)) for p in fl]
    body = rename_body(r.body, supply, dict(zip(r.params, params + tans)))
    body = _inline_active(ctx.prog, body, set(tans), supply, 0)
    nres = len(f.ret_types)
    ctx.fparams = set()
    ctx.varied = set(tans)
    mark_body(body, ctx.varied, ctx.deps)
    tapes = fwd_body(ctx, b, body)
    adj = Adjoints(b, ctx.varied)
    cts = []
    for k, t in enumerate(f.ret_types):
        if not differentiable(t):
            continue
        ct = b.fresh(names.result_adjoint(f"r{k}"), t)
        cts.append(ct)
        tr = body.result[nres + len(cts) - 1]
        if tr in ctx.varied:
            adj.add(tr, ct)
    rev_body(ctx, b, Body(body.stmts, body.result), adj, tapes)
    grads = [adj.get_or_zero(t) for t in tans]
    ret = tuple(f.ret_types) + tuple(p.type for p in fl)
    return Func(new, tuple(params) + tuple(cts), b.body(list(body.result[:nres]) + grads), ret, f.loc)


MAX_INLINE = 32


def _inline_active(prog, body: Body, varied: set, supply, depth: int) -> Body:
    """`body` with every call that takes a value of `varied` (the tangents, and what depends on
    them) replaced by a renamed copy of its callee's body, recursively; `varied` grows as
    statements are visited (activity analysis)."""
    stmts, subst = [], {}
    for st in body.stmts:
        e = substitute_exp(st.exp, subst) if subst else st.exp
        if (isinstance(e, Apply) and depth < MAX_INLINE
                and any(isinstance(a, Var) and a in varied for a in e.args)):
            callee = prog.func(e.func)
            if not callee.rules and not callee.donated:
                copy = rename_body(callee.body, supply, dict(zip(callee.params, e.args)))
                copy = _inline_active(prog, copy, varied, supply, depth + 1)
                stmts.extend(Let(s.pat, s.exp, s.loc or st.loc) for s in copy.stmts)
                for v, a in zip(st.pat, copy.result):
                    subst[v] = a
                    if isinstance(a, Var) and a in varied:
                        varied.add(v)
                continue
        if isinstance(e, (If, Loop)):
            mark_stmt(Let(st.pat, e, st.loc), varied)
            e = map_exp(e, lambda a: a, lambda bs, b: (bs, _inline_active(prog, b, varied, supply, depth)))
        st = Let(st.pat, e, st.loc)
        mark_stmt(st, varied)
        stmts.append(st)
    return Body(tuple(stmts), tuple(subst.get(a, a) if isinstance(a, Var) else a for a in body.result))
