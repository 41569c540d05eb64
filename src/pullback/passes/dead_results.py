"""Interprocedural dead-result elimination: `dead_results(prog) -> Prog`.

Contract: a result of a non-entry function that no call site reads is removed
from the function (its `ret_types` and body result) and from every call site's
pattern; then dead code is dropped (`ir.traverse.dce`), which may make more
results dead, until nothing changes. The entry function keeps its signature,
and the program computes the same entry results. Functions the entry no
longer reaches are dropped.

Why: a derivative function returns its primal results too (the vjp of `f`
returns `f(x)` and the cotangents). When `grad` discards the value, the
forward call that only produced it is dead, and so is every callee's primal
re-execution kept alive only for it (for example `ode_last_vjp` calling
`ode` just for `y[-1]`).
"""
from __future__ import annotations

import dataclasses

from ..ir.core import Apply, Body, Let, Prog, Var
from ..ir.traverse import dce, exp_atoms, exp_scopes, map_exp, prune_prog
from ..ir.typecheck import maybe_check


def _refs(body: Body, out: set) -> None:
    out.update(a for a in body.result if isinstance(a, Var))
    for st in body.stmts:
        out.update(a for a in exp_atoms(st.exp) if isinstance(a, Var))
        for _, b in exp_scopes(st.exp):
            _refs(b, out)


def _calls(body: Body):
    for st in body.stmts:
        if isinstance(st.exp, Apply):
            yield st
        for _, b in exp_scopes(st.exp):
            yield from _calls(b)


def _drop(body: Body, keep: dict) -> Body:
    """Call sites with the dropped results removed from their patterns."""
    stmts = []
    for st in body.stmts:
        e = st.exp
        if isinstance(e, Apply) and e.func in keep:
            stmts.append(Let(tuple(v for v, k in zip(st.pat, keep[e.func]) if k), e, st.loc))
            continue
        stmts.append(Let(st.pat, map_exp(e, lambda a: a, lambda bs, b: (bs, _drop(b, keep))), st.loc))
    return Body(tuple(stmts), body.result)


def dead_results(prog: Prog) -> Prog:
    while True:
        used = {f.name: [False] * len(f.ret_types) for f in prog.funcs}
        used[prog.entry] = [True] * len(prog.func(prog.entry).ret_types)
        for f in prog.funcs:
            refs: set = set()
            _refs(f.body, refs)
            for st in _calls(f.body):
                flags = used.get(st.exp.func)
                if flags is not None:
                    for k, v in enumerate(st.pat):
                        flags[k] = flags[k] or v in refs
        keep = {name: flags for name, flags in used.items() if not all(flags)}
        if not keep:
            return maybe_check(prune_prog(prog), "dead_results")
        funcs = []
        for f in prog.funcs:
            body = _drop(f.body, keep)
            rets, donated = f.ret_types, f.donated
            if f.name in keep:
                flags = keep[f.name]
                body = Body(body.stmts, tuple(a for a, k in zip(body.result, flags) if k))
                rets = tuple(t for t, k in zip(rets, flags) if k)
                new_index = {j: sum(flags[:j]) for j in range(len(flags)) if flags[j]}
                donated = tuple((i, new_index[j]) for i, j in donated if j in new_index)
            funcs.append(dataclasses.replace(f, body=dce(body), ret_types=rets, donated=donated))
        prog = prog.with_funcs(funcs)
