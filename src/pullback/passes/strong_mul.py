"""Fold guarded products into the `smul` primitive: `strong_mul(prog) -> prog`
(note [strong-mul]).

Contract: a statement `w = where(c, 0, r)` with `r = mul(a, d)` and
`c = isnan(r) & ((a == 0) | (d == 0))` (either order of each operand: the
form `ir.prims._util.smul` emits for every product in a derivative rule)
becomes `w = smul(a, d)`, the same value by definition of `smul`; the guard's
statements are then dropped by `ir.traverse.dce` where nothing else reads
them. Only float64 results are folded. The numba backend runs it just before
printing: the guard is six statements per product, most of the derivative
code numba has to type and lower, and one scalar expression in a fused loop.
"""
from __future__ import annotations

import dataclasses

from ..ir.core import Body, Const, Let, Prim, Prog, Var
from ..ir.traverse import dce, map_exp


def strong_guard(c, r, defs) -> tuple | None:
    """(a, d) if `c` is `isnan(r) & ((a == 0) | (d == 0))` with `r = a * d`;
    `defs` maps a variable to its defining `Prim`."""
    rd, cd = defs.get(r), defs.get(c)
    if rd is None or cd is None or rd.op != "mul" or cd.op != "and":
        return None
    a, d = rd.args
    p, q = cd.args
    pd = defs.get(p)
    if pd is None or pd.op != "isnan" or pd.args[0] != r:
        p, q = q, p
    pd, qd = defs.get(p), defs.get(q)
    if pd is None or pd.op != "isnan" or pd.args[0] != r or qd is None or qd.op != "or":
        return None
    eqs = []
    for e in qd.args:
        ed = defs.get(e)
        if ed is None or ed.op != "eq" or not _is_zero(ed.args[1]):
            return None
        eqs.append(ed.args[0])
    return (a, d) if set(eqs) == {a, d} else None


def _is_zero(a) -> bool:
    return isinstance(a, Const) and not a.type.shape and a.value == 0


def strong_mul(prog: Prog) -> Prog:
    out, changed = [], False
    for f in prog.funcs:
        body = _body(f.body, {})
        if body is not f.body:
            changed = True
            f = dataclasses.replace(f, body=dce(body))
        out.append(f)
    return prog.with_funcs(out) if changed else prog


def _body(body: Body, outer: dict) -> Body:
    defs = dict(outer)
    stmts, changed = [], False
    for st in body.stmts:
        e = st.exp
        if isinstance(e, Prim):
            if (e.op == "where" and len(st.pat) == 1 and st.pat[0].type.dtype == "f64"
                    and _is_zero(e.args[1]) and isinstance(e.args[2], Var)):
                ad = strong_guard(e.args[0], e.args[2], defs)
                if ad is not None and tuple(defs[e.args[2]].args) == ad:
                    e = Prim("smul", ad)
                    changed = True
            if len(st.pat) == 1:
                defs[st.pat[0]] = e
        else:
            e2 = map_exp(e, lambda a: a, lambda bs, b: (bs, _body(b, defs)))
            changed = changed or e2 is not e
            e = e2
        stmts.append(st if e is st.exp else Let(st.pat, e, st.loc))
    return Body(tuple(stmts), body.result) if changed else body
