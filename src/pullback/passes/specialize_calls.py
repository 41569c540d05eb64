"""Call sites that pass scalar constants call a copy of the callee specialised to
them: `specialize_calls(prog) -> Prog` (note [seed-constants]).

Contract: for each function `g` that is not recursive, has no derivative
rules, is not named as anyone's rule and donates no parameters, the call
sites of `g` that pass scalar constants (`Const` of shape ()) are grouped by
which positions hold which constants. When `g` has at most `MAX_CLONES` such
groups and `g`'s statements times the groups come to at most `MAX_STMTS`,
each group gets a copy of `g` (named from `g` by the program's `NameSupply`)
without those parameters: the copy binds them to the constants and is
simplified (`passes/simplify.py`). The group's call sites call the copy with
the other arguments. Sites passing no constant keep calling `g`; `g` itself is
unchanged. Repeated up to `ROUNDS` times, since a copy may pass constants on.
Values are unchanged (the IR is pure; simplification is exact up to the sign
of a zero).

Why: `pb.jacfwd(f)(x)` maps `pb.jvp` over the rows of an identity; once the
numba backend has unrolled a small map and unpacked the rows into elements
(`unpack_calls`, `scalarize`), each direction calls the jvp with constant
0/1 tangents. const_args (note [const-args]) folds a constant only when every
site passes the same one; here each site passes its own. GradBench's particle
"ff" calls the second-order jvp of the potential twice per Euler step, once
per direction of the inner Jacobian.
"""
from __future__ import annotations

import dataclasses
import math

from ..ir.core import Apply, Body, Const, Let, Loop, Prog, Var
from ..ir.names import NameSupply
from ..ir.traverse import call_graph, exp_scopes, iter_lets, map_exp, substitute
from .inline import _inline, _recursive

MAX_CLONES = 4      # copies of one function at most
MAX_STMTS = 600     # the callee's statements times its copies, at most
ROUNDS = 3


def specialize_calls(prog: Prog) -> Prog:
    copies: dict = {}   # copy's name -> (the function copied, the positions it fixes)
    for _ in range(ROUNDS):
        new = _round(prog, copies)
        if new is prog:
            break
        prog = new
    return _merge_shared(prog, copies)


def _merge_shared(prog: Prog, copies: dict) -> Prog:
    """Inline the calls of copies of one function (fixing the same positions) that
    one body makes with the same other arguments (jacfwd's directions at one
    point), and simplify the callers: the work that does not depend on the
    constants is then done once. Inside loops, one shared variable argument is
    enough (the vjps of those directions, which differ in their cotangents)."""
    from .simplify import simplify_func

    sites, callers = set(), set()
    for f in prog.funcs:
        for body, looped in _bodies(f.body, False):
            seen: dict = {}
            for st in body.stmts:
                if isinstance(st.exp, Apply) and st.exp.func in copies:
                    seen.setdefault(copies[st.exp.func], []).append(st)
            for group in seen.values():
                columns = list(zip(*(st.exp.args for st in group)))
                same = [all(isinstance(a, Var) for a in col) and len(set(col)) == 1 for col in columns]
                if len(group) > 1 and (all(same) if not looped else any(same)):
                    sites.update(id(st) for st in group)
                    callers.add(f.name)
    if not sites:
        return prog
    funcs = {f.name: f for f in prog.funcs}
    merged = _inline(prog, call_graph(prog), {n: funcs[n] for n in copies}, only=frozenset(sites))
    return merged.with_funcs([simplify_func(f) if f.name in callers else f for f in merged.funcs])


def _bodies(body: Body, looped: bool):
    """(body, whether it runs in a loop) for `body` and every body nested in it."""
    yield body, looped
    for st in body.stmts:
        inner = looped or isinstance(st.exp, Loop)
        for _, b in exp_scopes(st.exp):
            yield from _bodies(b, inner)


def _signature(e: Apply) -> tuple:
    """((position, dtype, value), ...) of the scalar constants a call passes (not NaNs:
    they fold nothing and compare unequal)."""
    return tuple((j, a.type.dtype, a.value) for j, a in enumerate(e.args)
                 if isinstance(a, Const) and not a.type.shape
                 and not (isinstance(a.value, float) and math.isnan(a.value)))


def _round(prog: Prog, copies: dict) -> Prog:
    from .simplify import simplify_func

    graph = call_graph(prog)
    ruled = {g for f in prog.funcs for _, g in f.rules}
    funcs = {f.name: f for f in prog.funcs}
    size = {f.name: sum(1 for _ in iter_lets(f.body)) for f in prog.funcs}
    groups: dict = {}   # callee -> {signature: None} in the order met
    for f in prog.funcs:
        for st in iter_lets(f.body):
            e = st.exp
            if isinstance(e, Apply) and e.func in funcs:
                sig = _signature(e)
                if sig:
                    groups.setdefault(e.func, {})[sig] = None
    names = NameSupply(funcs)
    clones: dict = {}   # (callee, signature) -> the copy's name
    added = []
    for name, sigs in groups.items():
        g = funcs[name]
        if len(sigs) > MAX_CLONES:   # too many: the positions every such site fixes, if that is fewer
            common = set.intersection(*({j for j, _, _ in sig} for sig in sigs))
            sigs = dict.fromkeys(tuple(x for x in sig if x[0] in common) for sig in sigs)
            sigs.pop((), None)
            groups[name] = sigs
        if (not sigs or name == prog.entry or g.rules or name in ruled or g.donated or _recursive(name, graph)
                or len(sigs) > MAX_CLONES or size[name] * len(sigs) > MAX_STMTS):
            continue
        for sig in sigs:
            copy = names.fresh(name)
            clones[(name, sig)] = copy
            origin, fixed_before = copies.get(name, (name, ()))
            copies[copy] = (origin, fixed_before + tuple(sorted(j for j, _, _ in sig)))
            fixed = {j: Const(v, g.params[j].type) for j, _, v in sig}
            body = substitute(g.body, {g.params[j]: c for j, c in fixed.items()})
            params = tuple(p for j, p in enumerate(g.params) if j not in fixed)
            added.append(simplify_func(dataclasses.replace(g, name=copy, params=params, body=body)))
    if not clones:
        return prog
    positions: dict = {}   # callee -> the positions its copies fix (a site's signature restricted to them
    for name, sig in clones:   # is the key of its copy: every site's constants were grouped above)
        positions.setdefault(name, set()).update(j for j, _, _ in sig)
    out = [dataclasses.replace(f, body=_redirect(f.body, clones, positions)) for f in [*prog.funcs, *added]]
    return prog.with_funcs(out)


def _redirect(body: Body, clones: dict, positions: dict) -> Body:
    """Calls whose constants at a copy's positions match it call the copy."""
    stmts = []
    for st in body.stmts:
        e = st.exp
        if isinstance(e, Apply) and e.func in positions:
            sig = tuple(x for x in _signature(e) if x[0] in positions[e.func])
            copy = clones.get((e.func, sig)) if sig else None
            if copy is not None:
                drop = {j for j, _, _ in sig}
                e = Apply(copy, tuple(a for j, a in enumerate(e.args) if j not in drop))
        elif exp_scopes(e):
            e = map_exp(e, lambda a: a, lambda bs, b: (bs, _redirect(b, clones, positions)))
        stmts.append(Let(st.pat, e, st.loc))
    return Body(tuple(stmts), body.result)

