"""Generic IR traversals: free/bound variables, renaming, substitution,
dead-code elimination, call graphs.

Contract:
- `free_vars(x)`: vars used but not bound inside a `Body` or `Exp` (or `Let`).
  Loop parameters and the for-loop index are bound in the loop body;
  lambda parameters are bound in the lambda body; `Apply` names functions,
  which are not variables.
- `bound_vars(body)`: every var bound anywhere inside (nested ones too).
- `rename_body(body, supply, mapping)`: a copy with every bound var given a
  fresh name (`supply.fresh(old)`) and free vars replaced via `mapping`.
  `substitute(body, mapping)` replaces free vars only.
- `dce(body)`: drops statements none of whose outputs are used (every `Prim`,
  `If`, `Loop`, `Apply` counts as pure: a statement is kept exactly when some
  output is used), recursively in sub-bodies; a loop's carried values and a
  map's stacked results and accumulators that nothing live reads are dropped.
- `used_funcs(prog_or_func_or_body)`, `call_graph(prog)`, `prune_prog(prog)`.

Expressions are visited through `exp_children`/`map_exp`, which know the core
classes and fall back to a generic walk over dataclass fields for classes
added later (parallel combinators holding `Lambda`s): a field that is an
atom (or a tuple of atoms) is a use, a `Body` is a sub-scope binding nothing,
and an object with `params` (vars) and `body` (a `Body`) is a sub-scope
binding its params.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Iterable, Iterator

from .core import Apply, Body, Const, ForForm, Func, If, Lambda, Let, Loop, Map, Prim, Prog, Var, WhileForm
from .names import NameSupply

# ---------------------------------------------------------------------------
# children of an expression
# ---------------------------------------------------------------------------


def _is_atom(x) -> bool:
    return isinstance(x, (Var, Const))


def _is_lambda(x) -> bool:
    return (not isinstance(x, (Body, Loop)) and hasattr(x, "params") and hasattr(x, "body")
            and isinstance(getattr(x, "body"), Body) and isinstance(getattr(x, "params"), tuple))


def exp_atoms(e) -> list:
    """Atoms an expression uses directly (outside its sub-bodies)."""
    if isinstance(e, Prim):
        return list(e.args)
    if isinstance(e, Apply):
        return list(e.args)
    if isinstance(e, If):
        return [e.cond]
    if isinstance(e, Loop):
        out = list(e.init)
        if isinstance(e.form, ForForm):
            out.append(e.form.bound)
        return out
    out = []
    if dataclasses.is_dataclass(e):
        for f in dataclasses.fields(e):
            v = getattr(e, f.name)
            if _is_atom(v):
                out.append(v)
            elif isinstance(v, tuple):
                out.extend(x for x in v if _is_atom(x))
    return out


def exp_scopes(e) -> list[tuple[tuple[Var, ...], Body]]:
    """Sub-bodies of an expression, each with the vars it binds on entry."""
    if isinstance(e, (Prim, Apply)):
        return []
    if isinstance(e, If):
        return [((), e.then), ((), e.else_)]
    if isinstance(e, Loop):
        binders = tuple(e.params)
        if isinstance(e.form, ForForm):
            binders = binders + (e.form.index,)
        return [(binders, e.body)]
    out = []
    if dataclasses.is_dataclass(e):
        for f in dataclasses.fields(e):
            v = getattr(e, f.name)
            for x in (v if isinstance(v, tuple) else (v,)):
                if isinstance(x, Body):
                    out.append(((), x))
                elif _is_lambda(x):
                    out.append((tuple(x.params), x.body))
    return out


def _renamed_sums(e, params) -> frozenset:
    """`e.sums` (note [adjoint-reassoc]) for the loop's params renamed to `params`."""
    return frozenset(q for p, q in zip(e.params, params) if p in e.sums) if e.sums else frozenset()


def map_exp(e, atom_fn: Callable, scope_fn: Callable):
    """Rebuild `e` with atoms mapped by `atom_fn(atom)` and each sub-scope by
    `scope_fn(binders, body) -> (binders, body)`. Sub-scopes are visited in
    the order of `exp_scopes`."""
    if isinstance(e, Prim):
        return Prim(e.op, tuple(atom_fn(a) for a in e.args), e.params)
    if isinstance(e, Apply):
        return Apply(e.func, tuple(atom_fn(a) for a in e.args))
    if isinstance(e, If):
        cond = atom_fn(e.cond)
        _, then = scope_fn((), e.then)
        _, else_ = scope_fn((), e.else_)
        return If(cond, then, else_)
    if isinstance(e, Loop):
        init = tuple(atom_fn(a) for a in e.init)
        if isinstance(e.form, ForForm):
            bound = atom_fn(e.form.bound)
            binders, body = scope_fn(tuple(e.params) + (e.form.index,), e.body)
            params, index = binders[:-1], binders[-1]
            return Loop(tuple(params), init, ForForm(index, bound), body, _renamed_sums(e, params))
        binders, body = scope_fn(tuple(e.params), e.body)
        ci = list(e.params).index(e.form.cond) if e.form.cond in e.params else None
        cond = binders[ci] if ci is not None else e.form.cond
        return Loop(tuple(binders), init, WhileForm(cond), body, _renamed_sums(e, binders))
    if not dataclasses.is_dataclass(e):
        raise TypeError(f"unknown expression {type(e).__name__}")

    def one(x):
        if _is_atom(x):
            return atom_fn(x)
        if isinstance(x, Body):
            return scope_fn((), x)[1]
        if _is_lambda(x):
            ps, b = scope_fn(tuple(x.params), x.body)
            return dataclasses.replace(x, params=tuple(ps), body=b)
        return x

    changes = {}
    for f in dataclasses.fields(e):
        v = getattr(e, f.name)
        changes[f.name] = tuple(one(x) for x in v) if isinstance(v, tuple) else one(v)
    return dataclasses.replace(e, **changes)


# ---------------------------------------------------------------------------
# free / bound variables
# ---------------------------------------------------------------------------


def _free_body(body: Body, bound: frozenset, out: set) -> None:
    bound = set(bound)
    for st in body.stmts:
        _free_exp(st.exp, bound, out)
        bound.update(st.pat)
    for a in body.result:
        if isinstance(a, Var) and a not in bound:
            out.add(a)


def _free_exp(e, bound, out: set) -> None:
    for a in exp_atoms(e):
        if isinstance(a, Var) and a not in bound:
            out.add(a)
    for binders, b in exp_scopes(e):
        _free_body(b, frozenset(bound) | frozenset(binders), out)


def free_vars(x) -> set[Var]:
    """Vars used in a Body, Exp or Let but not bound inside it."""
    out: set[Var] = set()
    if isinstance(x, Body):
        _free_body(x, frozenset(), out)
    elif isinstance(x, Let):
        _free_exp(x.exp, frozenset(), out)
    elif isinstance(x, Func):
        _free_body(x.body, frozenset(x.params), out)
    elif _is_atom(x):
        if isinstance(x, Var):
            out.add(x)
    else:
        _free_exp(x, frozenset(), out)
    return out


def iter_lets(body: Body) -> Iterator[Let]:
    """Every Let in `body`, nested ones included (pre-order)."""
    for st in body.stmts:
        yield st
        for _, b in exp_scopes(st.exp):
            yield from iter_lets(b)


def use_counts(body: Body):
    """How many times each variable is read in `body` (nested bodies' statements
    and results included), as a `collections.Counter`."""
    from collections import Counter

    uses: Counter = Counter()
    for st in iter_lets(body):
        uses.update(a for a in exp_atoms(st.exp) if isinstance(a, Var))
        for _, b in exp_scopes(st.exp):
            uses.update(a for a in b.result if isinstance(a, Var))
    uses.update(a for a in body.result if isinstance(a, Var))
    return uses


def iter_bodies(body: Body) -> Iterator[Body]:
    """`body` and every body nested in it (pre-order)."""
    yield body
    for st in body.stmts:
        for _, b in exp_scopes(st.exp):
            yield from iter_bodies(b)


def bound_vars(x) -> set[Var]:
    """Every var bound anywhere inside (let patterns, loop params and index,
    lambda params); for a Func, its params too."""
    out: set[Var] = set()
    body = x.body if isinstance(x, Func) else x
    if isinstance(x, Func):
        out.update(x.params)
    if isinstance(body, Body):
        for st in iter_lets(body):
            out.update(st.pat)
            for binders, _ in exp_scopes(st.exp):
                out.update(binders)
    else:  # an expression
        for binders, b in exp_scopes(body):
            out.update(binders)
            out |= bound_vars(b)
    return out


def all_names(x) -> set[str]:
    """Names of all vars in a Func (params, bound, used) or Prog (all functions)."""
    if isinstance(x, Prog):
        out = set()
        for f in x.funcs:
            out |= all_names(f)
        return out
    if isinstance(x, Func):
        vs = bound_vars(x) | free_vars(x.body)
    else:
        vs = bound_vars(x) | free_vars(x)
    return {v.name for v in vs}


# ---------------------------------------------------------------------------
# substitution and renaming
# ---------------------------------------------------------------------------


def _subst_body(body: Body, mapping: dict, rename: NameSupply | None) -> Body:
    mapping = dict(mapping)

    def atom_fn(a):
        return mapping.get(a, a) if isinstance(a, Var) else a

    def bind(vs):
        if rename is None:
            for v in vs:
                mapping.pop(v, None)  # shadowing: a bound var is not substituted
            return tuple(vs)
        out = []
        for v in vs:
            nv = Var(rename.fresh(v.name), v.type)
            mapping[v] = nv
            out.append(nv)
        return tuple(out)

    def scope_fn(binders, b):
        saved = dict(mapping)
        new_binders = bind(binders)
        nb = _subst_body_inner(b, mapping, rename, atom_fn, bind)
        mapping.clear()
        mapping.update(saved)
        return new_binders, nb

    def _subst_body_inner(b, m, rn, afn, bnd):
        stmts = []
        for st in b.stmts:
            e = map_exp(st.exp, afn, scope_fn)
            stmts.append(Let(bnd(st.pat), e, st.loc))
        return Body(tuple(stmts), tuple(afn(a) for a in b.result))

    return _subst_body_inner(body, mapping, rename, atom_fn, bind)


def substitute(body: Body, mapping: dict) -> Body:
    """Replace free vars by atoms via `mapping`; bound vars keep their names."""
    if not mapping:
        return body
    return _subst_body(body, mapping, None)


def substitute_exp(e, mapping: dict):
    if not mapping:
        return e
    b = substitute(Body((Let((), e),), ()), mapping)
    return b.stmts[0].exp


def rename_body(body: Body, supply: NameSupply, mapping: dict | None = None) -> Body:
    """Copy `body`, giving every bound var a fresh name from `supply` and
    replacing free vars via `mapping` (Var -> Atom)."""
    return _subst_body(body, mapping or {}, supply)


def rename_func(f: Func, supply: NameSupply | None = None, name: str | None = None) -> Func:
    """A copy of `f` with fresh names for params and all bound vars."""
    supply = supply or NameSupply()
    params = tuple(Var(supply.fresh(p.name), p.type) for p in f.params)
    body = rename_body(f.body, supply, dict(zip(f.params, params)))
    return dataclasses.replace(f, name=name or f.name, params=params, body=body)


def map_bodies(body: Body, fn: Callable[[Body], Body]) -> Body:
    """Apply `fn` bottom-up to `body` and every body nested in it."""

    def scope_fn(binders, b):
        return binders, map_bodies(b, fn)

    stmts = tuple(Let(st.pat, map_exp(st.exp, lambda a: a, scope_fn), st.loc) for st in body.stmts)
    return fn(Body(stmts, body.result))


def map_funcs(prog: Prog, fn: Callable[[Func], Func]) -> Prog:
    return prog.with_funcs([fn(f) for f in prog.funcs])


def rewrite_bodies(prog: Prog, fn: Callable) -> Prog:
    """Each function's body as `fn(f)` gives it for function `f`; `prog` itself where `fn`
    returned every body unchanged (the same object)."""
    import dataclasses

    out, changed = [], False
    for f in prog.funcs:
        body = fn(f)
        if body is not f.body:
            changed = True
            f = dataclasses.replace(f, body=body)
        out.append(f)
    return prog.with_funcs(out) if changed else prog


# ---------------------------------------------------------------------------
# dead code
# ---------------------------------------------------------------------------


def dce(body: Body) -> Body:
    """Drop statements whose outputs are all unused, and loop-carried values
    that nothing live reads (recursively)."""
    live: set[Var] = {a for a in body.result if isinstance(a, Var)}
    kept = []
    for st in reversed(body.stmts):
        if not any(v in live for v in st.pat):
            continue
        if isinstance(st.exp, Loop):
            st = _dead_loop_params(st, live)
        elif isinstance(st.exp, Map):
            st = _dead_map_parts(st, live)
        e = map_exp(st.exp, lambda a: a, lambda bs, b: (bs, dce(b)))
        live |= free_vars(e)
        kept.append(Let(st.pat, e, st.loc))
    return Body(tuple(reversed(kept)), body.result)


def _dead_loop_params(st: Let, live: set) -> Let:
    """The loop without the carried values whose results are unused after it
    and that no kept value (or the while condition) reads in the body."""
    e: Loop = st.exp
    n = len(e.params)
    keep = {j for j in range(n) if st.pat[j] in live}
    if isinstance(e.form, WhileForm) and e.form.cond in e.params:
        keep.add(list(e.params).index(e.form.cond))
    while True:
        sub = dce(Body(e.body.stmts, tuple(e.body.result[j] for j in sorted(keep))))
        need = free_vars(sub) | {a for a in sub.result if isinstance(a, Var)}
        more = {j for j in range(n) if e.params[j] in need} - keep
        if not more:
            break
        keep |= more
    if len(keep) == n or len(st.pat) != n:
        return st
    ks = sorted(keep)
    body = Body(e.body.stmts, tuple(e.body.result[j] for j in ks))
    loop = Loop(tuple(e.params[j] for j in ks), tuple(e.init[j] for j in ks), e.form, body,
                e.sums & {e.params[j] for j in ks})
    return Let(tuple(st.pat[j] for j in ks), loop, st.loc)


def _dead_map_parts(st: Let, live: set) -> Let:
    """The map without the stacked results that are unused after it, and without
    the accumulators whose final values are unused and that nothing kept reads in
    the body (a reverse map's adjoint of an argument nobody asked for)."""
    e: Map = st.exp
    k, na = e.n_out, len(e.accs)
    keep_out = [j for j in range(k) if st.pat[j] in live]
    keep_acc = {m for m in range(na) if st.pat[k + m] in live}
    res = e.lam.body.result
    while True:
        sub = dce(Body(e.lam.body.stmts, tuple(res[j] for j in keep_out) + tuple(res[k + m] for m in sorted(keep_acc))))
        need = free_vars(sub) | {a for a in sub.result if isinstance(a, Var)}
        more = {m for m in range(na) if e.acc_params[m] in need} - keep_acc
        if not more:
            break
        keep_acc |= more
    if len(keep_out) == k and len(keep_acc) == na:
        return st
    ms = sorted(keep_acc)
    body = Body(e.lam.body.stmts, tuple(res[j] for j in keep_out) + tuple(res[k + m] for m in ms))
    lam = Lambda((e.index,) + tuple(e.elems) + tuple(e.acc_params[m] for m in ms), body)
    new = Map(e.width, e.arrays, tuple(e.accs[m] for m in ms), lam)
    return Let(tuple(st.pat[j] for j in keep_out) + tuple(st.pat[k + m] for m in ms), new, st.loc)


def dce_func(f: Func) -> Func:
    return dataclasses.replace(f, body=dce(f.body))


# ---------------------------------------------------------------------------
# calls
# ---------------------------------------------------------------------------


def _calls_body(body: Body, out: set) -> None:
    for st in iter_lets(body):
        if isinstance(st.exp, Apply):
            out.add(st.exp.func)
        else:
            # a later combinator may name a function in a `func` field
            fn = getattr(st.exp, "func", None)
            if isinstance(fn, str):
                out.add(fn)


def used_funcs(x) -> set[str]:
    """Names of the functions called by a Body, Func, or any function of a Prog."""
    out: set[str] = set()
    if isinstance(x, Prog):
        for f in x.funcs:
            _calls_body(f.body, out)
    elif isinstance(x, Func):
        _calls_body(x.body, out)
    elif isinstance(x, Body):
        _calls_body(x, out)
    else:
        _calls_body(Body((Let((), x),), ()), out)
    return out


def call_graph(prog: Prog) -> dict[str, set[str]]:
    return {f.name: used_funcs(f) for f in prog.funcs}


def reachable_funcs(prog: Prog, roots: Iterable[str] | None = None) -> set[str]:
    graph = call_graph(prog)
    todo = list(roots if roots is not None else [prog.entry])
    seen: set[str] = set()
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        todo.extend(graph.get(n, ()))
    return seen


def prune_prog(prog: Prog) -> Prog:
    """Keep only the functions reachable from the entry (in their order)."""
    keep = reachable_funcs(prog)
    return prog.with_funcs([f for f in prog.funcs if f.name in keep])
