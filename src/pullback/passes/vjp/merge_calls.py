"""Merge a re-executed primal call into the vjp call that recomputes it.

Contract (note [merge-calls] in docs/design.md): in one body, a primal call
``y = g(x)`` followed later by ``y2, gx = g_vjp(x, ct)`` (same arguments)
computes `y` twice, since `g_vjp` returns the primal results too. When the
cotangents `ct` do not depend on `y`, the primal call is dropped: the
statements between the two that depend on `y` move after the vjp call, and
`y` is replaced by `y2` everywhere. Bodies nested in statements are handled
first. The result computes the same values with one call fewer.

This turns the cost of reverse mode through calls inside reversed loops (the
loop's return sweep re-executes its body, call included, before calling the
vjp) from depth x primal into a constant factor: recursive det by minors.
"""
from __future__ import annotations

import dataclasses

from ...ir.core import Apply, Body, Func, Let
from ...ir.traverse import exp_scopes, free_vars, map_exp, substitute


def merge_calls_func(f: Func, vjp_of: dict) -> Func:
    """`vjp_of`: vjp function name -> the primal function it differentiates."""
    return dataclasses.replace(f, body=_body(f.body, vjp_of))


def _body(body: Body, vjp_of: dict) -> Body:
    stmts = [_nested(st, vjp_of) for st in body.stmts]
    result = body.result
    k = 0
    while k < len(stmts):
        merged = _merge_at(stmts, result, k, vjp_of)
        if merged is None:
            k += 1
        else:
            stmts, result = merged
    return Body(tuple(stmts), tuple(result))


def _nested(st: Let, vjp_of: dict) -> Let:
    if not exp_scopes(st.exp):
        return st
    return Let(st.pat, map_exp(st.exp, lambda a: a, lambda bs, b: (bs, _body(b, vjp_of))), st.loc)


def _merge_at(stmts: list, result, v: int, vjp_of: dict):
    """If stmts[v] is a vjp call whose primal call comes earlier, the merged
    (stmts, result); else None."""
    V = stmts[v]
    if not (isinstance(V.exp, Apply) and V.exp.func in vjp_of):
        return None
    g = vjp_of[V.exp.func]
    for p in range(v - 1, -1, -1):
        P = stmts[p]
        if not (isinstance(P.exp, Apply) and P.exp.func == g):
            continue
        n = len(P.exp.args)
        if tuple(V.exp.args[:n]) != tuple(P.exp.args) or len(V.pat) < len(P.pat):
            continue
        # statements between P and V that depend on P's results
        tainted = set(P.pat)
        moved = []
        for j in range(p + 1, v):
            if free_vars(stmts[j].exp) & tainted:
                tainted.update(stmts[j].pat)
                moved.append(j)
        if free_vars(V.exp) & tainted:
            return None  # the cotangents need y: the primal call must stay
        mapping = dict(zip(P.pat, V.pat[:len(P.pat)]))
        keep = [stmts[j] for j in range(p + 1, v) if j not in moved]
        later = [stmts[j] for j in moved] + stmts[v + 1:]
        rest = substitute(Body(tuple(later), tuple(result)), mapping)
        return stmts[:p] + keep + [V] + list(rest.stmts), rest.result
    return None
