"""Inline small functions into their callers: `inline_small(prog) -> prog`.

Contract (note [inline] in docs/design.md): a call of a function that is not
(mutually) recursive and whose body has at most `max_stmts` statements, nested
ones counted, is replaced by a renamed copy of the body; the call's results
become the copy's results. A function with user-given derivative rules
(`Func.rules`, note [custom-rules]) is never inlined: a derivative taken after
this pass must still call its rule. Functions stay in the program (a backend compiles
only what is called). Semantics are unchanged: the IR is pure.

The numba backend runs it before code generation: numba compiles every
function separately, at about 0.2 s each, and staging specialises small
helpers per static argument (det's `minor(A, j)` once per j).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..ir.core import Apply, Body, Let, Prog
from ..ir.names import NameSupply
from ..ir.traverse import (
    all_names,
    call_graph,
    iter_lets,
    map_exp,
    rename_body,
    substitute_exp,
)

MAX_STMTS = 12


def inline_small(prog: Prog, max_stmts: int = MAX_STMTS) -> Prog:
    graph = call_graph(prog)
    small = {f.name: f for f in prog.funcs
             if sum(1 for _ in iter_lets(f.body)) <= max_stmts and not _recursive(f.name, graph) and not f.rules}
    return _inline(prog, graph, small)


def inline_scalar_calls(prog: Prog, small: int = 4, max_stmts: int = 400, max_copies: int = 800) -> Prog:
    """Also inline a function whose parameters and results are scalars or small
    static arrays (at most `small` elements, at least one of them an array),
    with at most `max_stmts` statements, whose copies (statements times call
    sites in the program) come to at most `max_copies` statements: after
    `passes.scalarize` its body is scalar code in the caller, where the call
    would pack and allocate its array arguments and results on every call (note
    [scalarize]; det's 2 x 2 leaf vjp, three call sites of ~40 statements)."""
    from ..ir.core import Apply
    from ..ir.types import TensorType

    def tiny(t):
        return isinstance(t, TensorType) and all(isinstance(d, int) for d in t.shape) and \
            (not t.shape or 1 <= int(np.prod(t.shape)) <= small)

    graph = call_graph(prog)
    sites: dict = {}
    for f in prog.funcs:
        for st in iter_lets(f.body):
            if isinstance(st.exp, Apply):
                sites[st.exp.func] = sites.get(st.exp.func, 0) + 1
    pick = {}
    for f in prog.funcs:
        types = [p.type for p in f.params] + list(f.ret_types)
        n = sum(1 for _ in iter_lets(f.body))
        if (f.name != prog.entry and 0 < sites.get(f.name, 0) and n <= max_stmts and n * sites[f.name] <= max_copies
                and not f.rules and not _recursive(f.name, graph) and all(tiny(t) for t in types)
                and any(t.shape for t in types)):
            pick[f.name] = f
    return _inline(prog, graph, pick)


def _inline(prog: Prog, graph: dict, small: dict) -> Prog:
    if not small or not any(graph[f.name] & set(small) for f in prog.funcs):
        return prog
    out = []
    for f in prog.funcs:
        if graph[f.name] & set(small):
            supply = NameSupply(all_names(f))
            f = dataclasses.replace(f, body=_body(f.body, small, supply))
        out.append(f)
    return prog.with_funcs(out)


def _recursive(name: str, graph: dict) -> bool:
    seen, todo = set(), list(graph.get(name, ()))
    while todo:
        g = todo.pop()
        if g == name:
            return True
        if g not in seen:
            seen.add(g)
            todo.extend(graph.get(g, ()))
    return False


def _body(body: Body, small: dict, supply: NameSupply) -> Body:
    stmts, subst = [], {}
    for st in body.stmts:
        e = substitute_exp(st.exp, subst) if subst else st.exp
        if isinstance(e, Apply) and e.func in small:
            callee = small[e.func]
            copy = rename_body(callee.body, supply, dict(zip(callee.params, e.args)))
            copy = _body(copy, small, supply)
            stmts.extend(Let(s.pat, s.exp, s.loc or st.loc) for s in copy.stmts)
            subst.update(zip(st.pat, copy.result))
            continue
        e = map_exp(e, lambda a: a, lambda bs, b: (bs, _body(b, small, supply)))
        stmts.append(Let(st.pat, e, st.loc))
    result = tuple(subst.get(a, a) for a in body.result)
    return Body(tuple(stmts), result)
