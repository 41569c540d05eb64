"""Return sweep of a primitive: the row's vjp rule, skipped on symbolic zeros."""
from __future__ import annotations

from ...errors import PullbackError
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
    if _sparse_into_existing(b, e, cts, need, adj):
        return
    hints = [names.adjoint(a.name) if isinstance(a, Var) else None for a in e.args]
    try:
        rule = row.rule("vjp")
    except PullbackError as err:
        raise err.with_loc(st.loc) from None
    res = run_rule(b, rule, hints, e.args, st.pat, cts, need, **e.p)
    for a, r, nd in zip(e.args, res, need):
        if nd and r is not None:
            adj.add(a, r)


def _sparse_into_existing(b, e, cts, need, adj) -> bool:
    """Reads of a few elements (`index`, `take`) add their adjoint into the
    existing adjoint array in place, instead of building a dense zero array per
    read: a loop that reads x[i] then costs O(1) per iteration, not O(len(x))."""
    if e.op not in ("index", "take") or not need[0]:
        return False
    x = e.args[0]
    old = adj.get(x)
    if old is None or cts[0].type.dtype != old.type.dtype:
        return False
    if e.op == "index":
        new = b.emit("index_update", old, cts[0], *e.args[1:], spec=e.p["spec"], mode="add",
                     name=names.adjoint(x.name))
    else:
        new = b.emit("take_add", old, e.args[1], cts[0], axis=e.p["axis"], name=names.adjoint(x.name))
    adj.m[x] = new
    return True
