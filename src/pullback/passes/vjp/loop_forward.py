"""Return sweeps that may run forward: loops whose adjoints only accumulate.

Contract (note [forward-return-sweep] in docs/design.md): `order_free(...)`
says, for a return-sweep body that `loop.rev_store` built, whether its
iterations commute: the adjoint of every loop parameter passes through an
iteration unchanged, and every free variable's adjoint only gains terms
(`add`, `index_update(mode="add")`) that read no adjoint carried by the loop.
Then `rev(ctx, b, st, adj, tape)` emits the return sweep as a *forward* loop
that recomputes the primal state from the loop's initial values, iteration by
iteration, instead of popping it; the forward sweep's saves are dropped. The
sums come out in another order (rounding differs in the last bits); nothing
else changes. Only `for` loops whose state is saved by value qualify (no undo
logs, no stores of derivative code).
"""
from __future__ import annotations

from ...ir.core import Prim, Var
from ...ir.traverse import free_vars, rename_body
from ..activity import mark_body
from .body import fwd_body, recomputed


def order_free(rbody, pa_params, new_pa, fa_params, new_fa) -> bool:
    """Whether the return-sweep body `rbody` (results `new_pa`, `new_fa` for the
    carried adjoints `pa_params`, `fa_params`) has commuting iterations."""
    if any(n is not p for n, p in zip(new_pa, pa_params)):
        return False
    chain = {p: p for p in fa_params}      # value -> the carried adjoint it accumulates into
    for st in rbody.stmts:
        e = st.exp
        if not (free_vars(st) & set(chain)):
            continue                        # reads no carried adjoint (pass-through ones are constant)
        if isinstance(e, Prim) and e.op == "add" and len(st.pat) == 1:
            a, c = e.args
            if c in chain and a not in chain:
                a, c = c, a
            if a in chain and c not in chain:
                chain[st.pat[0]] = chain[a]
                continue
        if isinstance(e, Prim) and e.op == "index_update" and e.p.get("mode") == "add" \
                and e.args[0] in chain and not (set(e.args[1:]) & set(chain)):
            chain[st.pat[0]] = chain[e.args[0]]
            continue
        return False
    return all(r in chain and chain[r] is p for r, p in zip(new_fa, fa_params))


def rev(ctx, b, st, adj, tape) -> None:
    """The return sweep of loop `st` as a forward loop that recomputes its state."""
    from .loop import _drop_saves, reverse_frame, reverse_iteration

    e = st.exp
    fr = reverse_frame(ctx, b, st, adj)
    act, fvs, rb, k, pa, pa_init, fa, fa_init = fr.act, fr.fvs, fr.rb, fr.k, fr.pa, fr.pa_init, fr.fa, fr.fa_init
    state = [rb.fresh(p.name, p.type) for p in e.params]
    restored = dict(zip(e.params, state))
    restored[e.form.index] = k
    for p in e.params:
        if p in ctx.varied:
            ctx.varied.add(restored[p])
    body = recomputed(rename_body(e.body, ctx.supply, restored))
    mark_body(body, ctx.varied, ctx.deps)
    tapes = fwd_body(ctx, rb, body)         # not lazy: the body's results are the next state
    inner = reverse_iteration(ctx, rb, body, tapes, fr)
    res = [inner.get_or_zero(restored[e.params[i]], rb) for i in act] + [inner.get(v) for v in fvs] + \
        list(body.result)
    params = [pa[i] for i in act] + [fa[v] for v in fvs] + state
    init = [pa_init[i] for i in act] + [fa_init[v] for v in fvs] + list(e.init)
    outs = b.for_loop(params, init, k, e.form.bound, rb.body(res), names=[p.name for p in params],
                      sums={fa[v] for v in fvs})   # note [adjoint-reassoc]
    _drop_saves(tape, list(tape.saved), values=True)
    for j, v in enumerate(fvs):
        adj.m[v] = outs[len(act) + j]
    for j, i in enumerate(act):
        if isinstance(e.init[i], Var) and e.init[i] in ctx.varied:
            adj.add(e.init[i], outs[j])
