"""Interprocedural propagation of constant arguments: `const_args(prog) -> Prog`.

Contract: a parameter of a non-entry function to which every call site passes
the same constant (a scalar `Const`, or an array the caller makes with `full`
of a constant value) is removed: the function binds it at entry to that
constant, and the call sites drop the argument. The function is then
simplified (`passes/simplify.py`, whose zero rules fold arithmetic on `full`
zeros), and the process repeats until nothing changes. The entry keeps its
signature; the program computes the same results.

Why (note [const-args]): `pb.jvp(pb.grad(cost), (C, P), (ones, zeros))` passes
a zero tangent for P through two calls. Known inside the callee, every
tangent computation that only involves P folds away (kmeans' Hessian
diagonal).
"""
from __future__ import annotations

import dataclasses

from ..ir.core import Apply, Body, Const, Let, Prim, Prog, Var
from ..ir.traverse import exp_scopes, iter_lets, map_exp, substitute
from ..ir.typecheck import maybe_check


def const_args(prog: Prog) -> Prog:
    from .simplify import simplify_func

    while True:
        drop = _constant_params(prog)
        if not drop:
            return maybe_check(prog, "const_args")
        funcs = []
        for f in prog.funcs:
            body = _drop_args(f.body, drop)
            params, donated = f.params, f.donated
            if f.name in drop:
                consts = drop[f.name]
                params = tuple(p for j, p in enumerate(f.params) if j not in consts)
                lets, subst = [], {}
                for j, c in sorted(consts.items()):
                    if isinstance(c, Const):
                        subst[f.params[j]] = c
                    else:
                        lets.append(Let((f.params[j],), c, f.loc))
                body = substitute(Body(tuple(lets) + body.stmts, body.result), subst)
                kept = [j for j in range(len(f.params)) if j not in consts]
                donated = tuple((kept.index(i), j) for i, j in donated if i in kept)
            funcs.append(simplify_func(dataclasses.replace(f, params=params, body=body, donated=donated)))
        prog = prog.with_funcs(funcs)


def _constant_params(prog: Prog) -> dict:
    """function name -> {param index: the Const, or the `full` Prim, passed at every call}."""
    seen: dict = {}
    for f in prog.funcs:
        defs = {v: st.exp for st in iter_lets(f.body) for v in st.pat}
        for st in iter_lets(f.body):
            e = st.exp
            if not isinstance(e, Apply) or e.func == prog.entry:
                continue
            vals = [_constant(a, defs) for a in e.args]
            prev = seen.get(e.func)
            seen[e.func] = vals if prev is None else [v if v == p else None for v, p in zip(vals, prev)]
    out = {}
    for name, vals in seen.items():
        consts = {j: v for j, v in enumerate(vals) if v is not None}
        if consts:
            out[name] = consts
    return out


def _constant(a, defs):
    if isinstance(a, Const) and not a.type.shape:
        return a
    if isinstance(a, Var):
        e = defs.get(a)
        if isinstance(e, Prim) and e.op == "full" and isinstance(e.args[0], Const):
            return e
    return None


def _drop_args(body: Body, drop: dict) -> Body:
    stmts = []
    for st in body.stmts:
        e = st.exp
        if isinstance(e, Apply) and e.func in drop:
            e = Apply(e.func, tuple(a for j, a in enumerate(e.args) if j not in drop[e.func]))
        elif exp_scopes(e):
            e = map_exp(e, lambda a: a, lambda bs, b: (bs, _drop_args(b, drop)))
        stmts.append(Let(st.pat, e, st.loc))
    return Body(tuple(stmts), body.result)
