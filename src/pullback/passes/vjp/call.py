"""Return sweep of a call: ``x_adj += g_vjp(x, y_adj)``.

The callee's vjp re-executes the callee's forward sweep (Futhark's redundant
execution at function granularity), so recursion needs no tape. A callee
with a user-given rule (`pb.custom_vjp` / `pb.custom_jvp`) is reversed by the
function `custom.vjp_name` gives instead (note [custom-rules]).
"""
from __future__ import annotations

from ...ir import names
from ...ir.core import Apply, Var
from .._common import differentiable
from .custom import vjp_name


def rev(ctx, b, st, adj) -> None:
    e = st.exp
    callee = ctx.prog.func(e.func)
    outs = [v for v in st.pat if differentiable(v.type)]
    cts = [adj.get(v) for v in outs]
    if all(c is None for c in cts):
        return
    # an argument no result with an adjoint depends on gets nothing (note [call-activity])
    summary = ctx.deps(e.func)
    needed = None if summary is None else {i for v, d in zip(st.pat, summary) if adj.get(v) is not None for i in d}
    if not any(isinstance(a, Var) and a in ctx.varied and (needed is None or i in needed)
               for i, a in enumerate(e.args)):
        return
    vname = vjp_name(ctx, callee) or ctx.func(e.func)
    ctx.vjp_of[vname] = e.func
    ct_args = [c if c is not None else adj.get_or_zero(v) for v, c in zip(outs, cts)]
    res = [b.fresh(v.name, v.type) for v in st.pat]
    grads = [b.fresh(names.adjoint(a.name) if isinstance(a, Var) else "c_adj", p.type)
             for a, p in zip(e.args, callee.params) if differentiable(p.type)]
    b.let(tuple(res) + tuple(grads), Apply(vname, tuple(e.args) + tuple(ct_args)), st.loc)
    it = iter(grads)
    for i, (a, p) in enumerate(zip(e.args, callee.params)):
        if differentiable(p.type):
            g = next(it)
            if isinstance(a, Var) and a in ctx.varied and (needed is None or i in needed):
                adj.add(a, g)
