"""Inline small functions into their callers: `inline_small(prog) -> prog`.

Contract (note [inline] in docs/design.md): a call of a function that is not
(mutually) recursive and whose body has at most `max_stmts` statements, nested
ones counted (or that is the only call of it, from a caller of at most
`max_stmts` statements that does more than forward to it), is replaced by a
renamed copy of the body; the call's results
become the copy's results. A function with user-given derivative rules
(`Func.rules`, note [custom-rules]) is never inlined: a derivative taken after
this pass must still call its rule. Functions stay in the program (a backend compiles
only what is called). Semantics are unchanged: the IR is pure.

The numba backend runs it before code generation: numba compiles every
function separately, at about 0.2 s each, and staging specialises small
helpers per static argument (det's `minor(A, j)` once per j).

`inline_for_ad(prog)` runs before reverse mode (`passes.vjp.vjp_prog`, note
[inline-for-ad]): it inlines only tiny straight-line helpers that evaluate a
transcendental (a `sigmoid`), so that the enclosing loop's forward sweep saves
that value (note [saved-values]) instead of the helper's vjp computing it again.
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
    reachable_funcs,
    rename_body,
    substitute_exp,
)

MAX_STMTS = 12
MAX_FEW_STMTS = 48      # larger functions are inlined only if their copies stay within:
MAX_COPIES = 160
WRAPPER_RATIO = 4       # a caller this many times smaller than its single-site callee is thin too


def inline_small(prog: Prog, max_stmts: int = MAX_STMTS, max_copies: int = MAX_COPIES) -> Prog:
    """Inline functions of at most `max_stmts` statements, functions of at most
    `MAX_FEW_STMTS` called only inside loops whose copies (statements times call
    sites) come to at most `max_copies` statements: ode's `rhs_vjp` (4 sites, ~30 statements) returned fresh
    adjoint arrays the caller then added up; inlined, they are added in place
    (passes/accumulate.py) and the zero-filled temporaries go; and functions of
    any size called once, from a thin wrapper (`_wrapped`) (note [inline])."""
    graph = call_graph(prog)
    sites, looped = _call_sites(prog), _call_sites(prog, in_loops=True)
    size = {f.name: sum(1 for _ in iter_lets(f.body)) for f in prog.funcs}
    wrapped = _wrapped(prog, graph, sites, size, max_stmts)
    small = {}
    for f in prog.funcs:
        n = size[f.name]
        few = (n <= MAX_FEW_STMTS and 0 < sites.get(f.name, 0) == looped.get(f.name, 0)
               and n * sites[f.name] <= max_copies)
        if (n <= max_stmts or few or f.name in wrapped) and not _recursive(f.name, graph) and not f.rules:
            small[f.name] = f
    return _inline(prog, graph, small)


def _wrapped(prog: Prog, graph: dict, sites: dict, size: dict, max_stmts: int) -> set:
    """Functions called from exactly one site, in a caller of at most `max_stmts`
    statements, or at most 1 / `WRAPPER_RATIO` of the callee's, that does more
    than forward to it (a thin wrapper: `points - skinned(theta)`, a seed and then
    the vjp, ht's complicated residual around `skinned`). numba optimises a callee's LLVM
    module, then again inside every caller's module it is linked into: inlined,
    the callee is optimised once (note [inline], "thin wrappers"). A caller whose
    body is only the call is left to `numba_opt.forwarded`."""
    out = set()
    for g in prog.funcs:
        if size[g.name] < 2:
            continue
        for f in graph[g.name]:
            if (sites.get(f, 0) == 1 and f != g.name
                    and (size[g.name] <= max_stmts or WRAPPER_RATIO * size[g.name] <= size[f])):
                out.add(f)
    return out


AD_STMTS = 8           # inline_for_ad: the largest helper it inlines


def inline_for_ad(prog: Prog, max_stmts: int = AD_STMTS) -> Prog:
    """Inline, before differentiation, calls of each function whose body is
    straight-line primitives (no branch, loop, map or call), at most `max_stmts` of
    them, at least one transcendental (`passes.vjp.saved.EXPENSIVE`), with no stores
    among its values and no rules (custom rules and `pb.checkpoint` markers stay
    calls). The call rule re-executes a
    callee in its vjp, so such a helper's `exp` ran twice per call and could not be
    saved by an enclosing loop; inlined, it is a statement of the caller's body
    (note [inline-for-ad]). The copies keep the helper's source locations."""
    from ..ir.core import Prim
    from ..ir.types import StoreType
    from .vjp.saved import EXPENSIVE

    def tiny(f):
        stmts = f.body.stmts
        return (not f.rules and len(stmts) <= max_stmts
                and all(isinstance(st.exp, Prim) for st in stmts)
                and any(st.exp.op in EXPENSIVE for st in stmts)
                and not any(isinstance(v.type, StoreType) for st in stmts for v in st.pat)
                and not any(isinstance(p.type, StoreType) for p in f.params))

    pick = {f.name: f for f in prog.funcs if tiny(f)}
    if not pick:
        return prog
    return _inline(prog, call_graph(prog), pick)


def _call_sites(prog: Prog, in_loops: bool = False, live: set | None = None) -> dict:
    """Function name -> the number of calls of it in the program (with `in_loops`,
    only those inside a loop body; with `live`, only those in the functions it names)."""
    from ..ir.core import Apply, Loop
    from ..ir.traverse import exp_scopes

    sites: dict = {}

    def walk(body, looped):
        for st in body.stmts:
            if isinstance(st.exp, Apply) and (looped or not in_loops):
                sites[st.exp.func] = sites.get(st.exp.func, 0) + 1
            for _, sub in exp_scopes(st.exp):
                walk(sub, looped or isinstance(st.exp, Loop))

    for f in prog.funcs:
        if live is None or f.name in live:
            walk(f.body, False)
    return sites


MAX_LOOP_STMTS = 100    # inline_scalar_calls: the largest function inlined at its loop sites alone


def inline_scalar_calls(prog: Prog, max_stmts: int = 256, max_copies: int = 800, roots=None) -> Prog:
    """Also inline a function whose parameters and results are scalars or small
    static arrays (`scalarize.small_type`, at least one of them an array),
    with at most `max_stmts` statements, whose copies (statements times call
    sites in the program) come to at most `max_copies` statements: after
    `passes.scalarize` its body is scalar code in the caller, where the call
    would pack and allocate its array arguments and results on every call (note
    [scalarize]; det's 2 x 2 leaf vjp, three call sites of ~40 statements).
    Over that budget, a function of at most `MAX_LOOP_STMTS` statements is
    inlined at its sites inside loop bodies alone, if their copies fit (note
    [small-jacobians]: particle's force, called at every Euler step). Sites are
    counted in the functions reachable from `roots` (default: the entry) alone:
    the copies `inline_small` left uncalled are never compiled. `max_stmts` is
    256: a larger function's call costs little beside its body, and scalarised
    in its caller it costs the passes after it more than the call saves (ht's
    derivative, whose 272- and 352-statement jvps have one live site each: 0.13 s
    more of `lower` for a 3% faster call). A function that runs a loop stays a call:
    its loop's work dwarfs the packing (saddle's inner descent, copied at its three
    sites, cost 0.4-0.6 s of compile and no time per call)."""
    from ..ir.types import TensorType
    from .scalarize import small_type

    def tiny(t):
        return isinstance(t, TensorType) and (not t.shape or (small_type(t) and int(np.prod(t.shape)) >= 1))

    graph = call_graph(prog)
    live = reachable_funcs(prog, roots)
    sites, looped = _call_sites(prog, live=live), _call_sites(prog, in_loops=True, live=live)
    pick, loops_only = {}, set()
    for f in prog.funcs:
        types = [p.type for p in f.params] + list(f.ret_types)
        n = sum(1 for _ in iter_lets(f.body))
        if (f.name == prog.entry or not 0 < sites.get(f.name, 0) or n > max_stmts or f.rules
                or _recursive(f.name, graph) or not all(tiny(t) for t in types) or not any(t.shape for t in types)
                or _loops(f.body)):
            continue
        if n * sites[f.name] <= max_copies:
            pick[f.name] = f
        elif n <= MAX_LOOP_STMTS and 0 < looped.get(f.name, 0) and n * looped[f.name] <= max_copies:
            # too many sites to copy everywhere: the ones in loops, which run per iteration (note [scalarize])
            pick[f.name] = f
            loops_only.add(f.name)
    return _inline(prog, graph, pick, frozenset(loops_only))


def _loops(body: Body) -> bool:
    """Does `body` run a loop (at any depth)?"""
    from ..ir.core import Loop

    return any(isinstance(st.exp, Loop) for st in iter_lets(body))


def _inline(prog: Prog, graph: dict, small: dict, loops_only: frozenset = frozenset(),
            only: frozenset | None = None) -> Prog:
    """Inline the calls of the functions in `small`; those of `loops_only` only where
    the call is inside a loop body; with `only`, just the call statements (`Let`s)
    whose ids it holds."""
    if not small or not any(graph[f.name] & set(small) for f in prog.funcs):
        return prog
    out = []
    for f in prog.funcs:
        if graph[f.name] & set(small):
            supply = NameSupply(all_names(f))
            f = dataclasses.replace(f, body=_body(f.body, small, supply, loops_only, only=only))
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


def _body(body: Body, small: dict, supply: NameSupply, loops_only: frozenset = frozenset(),
          in_loop: bool = False, only: frozenset | None = None) -> Body:
    from ..ir.core import Loop

    stmts, subst = [], {}
    for st in body.stmts:
        if isinstance(st.exp, Apply):
            e = substitute_exp(st.exp, subst) if subst else st.exp
            if e.func in small and (in_loop or e.func not in loops_only) and (only is None or id(st) in only):
                callee = small[e.func]
                copy = rename_body(callee.body, supply, dict(zip(callee.params, e.args)))
                copy = _body(copy, small, supply, loops_only, in_loop, only)
                stmts.extend(Let(s.pat, s.exp, s.loc or st.loc) for s in copy.stmts)
                subst.update(zip(st.pat, copy.result))
                continue
            stmts.append(Let(st.pat, e, st.loc))
            continue
        # nested bodies first, then the substitution: `only` names the statements as they are
        looped = in_loop or isinstance(st.exp, Loop)
        e = map_exp(st.exp, lambda a: a, lambda bs, b: (bs, _body(b, small, supply, loops_only, looped, only)))
        stmts.append(Let(st.pat, substitute_exp(e, subst) if subst else e, st.loc))
    result = tuple(subst.get(a, a) for a in body.result)
    return Body(tuple(stmts), result)
