"""Return sweep of a primitive: the row's vjp rule, skipped on symbolic zeros."""
from __future__ import annotations

from ...ir import names
from ...ir.core import Var
from ...ir.prims import TABLE
from .._common import differentiable, run_rule


def rev(ctx, b, st, adj) -> None:
    e = st.exp
    cts = [adj.get(v) for v in st.pat]
    if all(c is None for c in cts):
        return
    row = TABLE.get(e.op)
    if row.zero_deriv:
        return
    need = tuple(isinstance(a, Var) and a in ctx.varied and differentiable(a.type) for a in e.args)
    if not any(need):
        return
    hints = [names.adjoint(a.name) if isinstance(a, Var) else None for a in e.args]
    res = run_rule(b, row.rule("vjp"), hints, e.args, st.pat, cts, need, **e.p)
    for a, r, nd in zip(e.args, res, need):
        if nd and r is not None:
            adj.add(a, r)
