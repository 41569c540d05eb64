"""Local rewrites of primitive applications: `rewrite_prims(prog, rule) -> prog`.

Contract: `rule(e, defs)` gets each `Prim` statement's expression and `defs`,
the defining `Prim` of every single-result variable in scope (the statements
before it in its body and in the enclosing bodies), and returns a replacement
`Prim` with the same value, or None. Functions whose bodies changed are passed
through `ir.traverse.dce`, which drops what the rewrites left unread. Used by
`forward_index` and `strong_mul`, which run on the numba backend before
printing.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ..ir.core import Body, Let, Prim, Prog
from ..ir.traverse import dce, map_exp


def rewrite_prims(prog: Prog, rule: Callable) -> Prog:
    out, changed = [], False
    for f in prog.funcs:
        body = _body(f.body, {}, rule)
        if body is not f.body:
            changed = True
            f = dataclasses.replace(f, body=dce(body))
        out.append(f)
    return prog.with_funcs(out) if changed else prog


def _body(body: Body, outer: dict, rule) -> Body:
    defs = dict(outer)
    stmts, changed = [], False
    for st in body.stmts:
        e = st.exp
        if isinstance(e, Prim):
            r = rule(e, defs)
            if r is not None:
                e, changed = r, True
            if len(st.pat) == 1:
                defs[st.pat[0]] = e
        else:
            e2 = map_exp(e, lambda a: a, lambda bs, b: (bs, _body(b, defs, rule)))
            changed = changed or e2 is not e
            e = e2
        stmts.append(st if e is st.exp else Let(st.pat, e, st.loc))
    return Body(tuple(stmts), body.result) if changed else body
