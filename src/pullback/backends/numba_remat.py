"""Cheap elementwise values recomputed in a later fused loop instead of
stored: `remat(prog) -> prog` (note [remat]).

Contract: in each body, for the fused groups of `numba_fusion.plan(body)`: a
result v that group G, of at least `MIN_ELEMENTS` elements, computes
elementwise and keeps (stores into an array because something after G reads
it) is recomputed instead where

- every reader of v after G is a fused statement of a later group of the same
  body (not one of its stores or hoisted statements), and v is not among the
  body's results;
- v's *recipe*, the statements of G that v depends on through G's fused
  elementwise results, has at most `MAX_RECIPE` statements, each a cheap
  operation (`CHEAP`: no division, power, transcendental function or
  run-time-checked integer operation);
- the recipe's leaves (what it reads from outside G's loop) add at most one
  array of G's size that the later group does not read already: storing v
  costs a write and a read of an array, recomputing it a read of a leaf;
- no reader of v adds into it (an array `add` of v's type, which the emitter
  may do in place in v's array: then storing v costs no new array);
- every reader of an array leaf from G on is a primitive that neither updates
  nor stores, nor adds into it (no update, store, call, loop or branch, nor
  such an `add`, reads it): reading the leaf later keeps it alive longer,
  which must not turn an update or addition in place into a copy.

The recipe is copied, under fresh names, right before the first reader in
each later group, and those readers read the copy. Only rewrites after which
the plan fuses each copy into the reader's group, and G no longer keeps v, are
kept. Values are unchanged: the copies compute the same elements by the same
operations from the same operands (the IR is pure). reverse mode stores
`mask = (x == max(x))` and `t * exp(x - m)` in one loop and reads them in the
last (logsumexp's gradient); recomputing the mask there instead of storing it
saves a write and a read of an array as large as x.
"""
from __future__ import annotations

import numpy as np

from ..ir.core import Body, Let, Prim, Prog, Var
from ..ir.names import NameSupply
from ..ir.traverse import all_names, exp_scopes, free_vars, map_exp, rewrite_bodies
from ..ir.types import TensorType
from . import numba_fusion as fusion
from . import pysource as ps

CHEAP = frozenset({"abs", "neg", "not", "sign", "isnan", "floor", "ceil", "add", "sub", "mul", "and", "or",
                   "xor", "eq", "ne", "lt", "le", "gt", "ge", "maximum", "minimum", "smul", "smask", "cast",
                   "broadcast_to", "where"})
MAX_RECIPE = 8
# a group of fewer elements keeps its values: its arrays stay in the first caches, where a
# write and a read cost about what recomputing does (ht's 95 x 3 values measured no faster)
MIN_ELEMENTS = 4096
_UPDATES = fusion._NOT_HOISTABLE | ps._STORE_OPS


def remat(prog: Prog) -> Prog:
    return rewrite_bodies(prog, lambda f: _body(f.body, NameSupply(all_names(f))))


def _body(body: Body, names: NameSupply) -> Body:
    stmts, changed = [], False
    for st in body.stmts:
        e = st.exp
        if not isinstance(e, Prim) and exp_scopes(e):
            e2 = map_exp(e, lambda a: a, lambda bs, b: (bs, _body(b, names)))
            if any(x is not y for (_, x), (_, y) in zip(exp_scopes(e), exp_scopes(e2))):
                e, changed = e2, True
        stmts.append(st if e is st.exp else Let(st.pat, e, st.loc))
    if changed:
        body = Body(tuple(stmts), body.result)
    if sum(isinstance(st.exp, Prim) for st in body.stmts) < 4:
        return body
    tried: set = set()
    while True:
        new = _once(body, names, tried)
        if new is None:
            return body
        body = new


def _once(body: Body, names: NameSupply, tried: set):
    """`body` with one value recomputed, or None when no candidate is left."""
    groups = fusion.plan(body)
    if len(groups) < 2:
        return None
    stmts = body.stmts
    group_at = {}   # statement index -> start of the group that fuses it
    for k, g in groups.items():
        ids = {id(s) for s in g.fused}
        group_at.update((j, k) for j in range(g.start, g.end) if id(stmts[j]) in ids)
    results = {a for a in body.result if isinstance(a, Var)}
    for k, g in groups.items():
        if int(np.prod(g.shape)) < MIN_ELEMENTS:
            continue
        elementwise = {s.pat[0]: s for s in g.fused if s.exp.op != "sum"}
        for v in sorted(g.keep & elementwise.keys(), key=lambda x: x.name):
            if v.name in tried or v in results:
                continue
            tried.add(v.name)
            readers = [j for j in range(g.end, len(stmts)) if v in free_vars(stmts[j])]
            if (not readers or any(group_at.get(j, k) == k for j in readers)
                    or any(_accumulates(stmts[j], v) for j in readers)):
                continue
            recipe = _recipe(v, elementwise)
            if recipe is None:
                continue
            leaves = _leaves(recipe)
            if not _leaves_stay(leaves, stmts[g.start:]):
                continue
            targets: dict = {}
            for j in readers:
                targets.setdefault(group_at[j], []).append(j)
            size = int(np.prod(g.shape))
            if not all(_streams(leaves, groups[t], size) <= 1 for t in targets):
                continue
            new, copies = _apply(body, v, recipe, targets, names)
            if _fused(new, v, copies):
                return new
    return None


def _recipe(v: Var, elementwise: dict):
    """The statements of the group that v depends on through its elementwise
    results, in program order; None when one is not cheap or there are too many."""
    out, todo, seen = [], [v], set()
    while todo:
        x = todo.pop()
        if x in seen:
            continue
        seen.add(x)
        st = elementwise[x]
        if st.exp.op not in CHEAP or len(out) >= MAX_RECIPE:
            return None
        out.append(st)
        todo.extend(a for a in st.exp.args if isinstance(a, Var) and a in elementwise)
    order = {id(s): n for n, s in enumerate(elementwise.values())}
    return sorted(out, key=lambda s: order[id(s)])


def _leaves(recipe) -> set:
    bound = {s.pat[0] for s in recipe}
    return {a for s in recipe for a in s.exp.args if a not in bound}


def _leaves_stay(leaves: set, stmts) -> bool:
    """Is every reader of an array leaf among `stmts` a primitive that neither
    updates nor stores, nor adds into it (`_accumulates`)?"""
    arrays = {a for a in leaves if isinstance(a, Var) and isinstance(a.type, TensorType) and a.type.shape}
    for st in stmts:
        read = free_vars(st) & arrays
        if read and not (isinstance(st.exp, Prim) and st.exp.op not in _UPDATES
                         and not any(_accumulates(st, a) for a in read)):
            return False
    return True


def _accumulates(st: Let, x: Var) -> bool:
    """May the emitter add into x's array in place at `st` (an array `add` of x's type,
    `ownership.inplace_add`)? Then x's array is reused, not a fresh one written."""
    return st.exp.op == "add" and x in st.exp.args and any(p.type == x.type for p in st.pat)


def _streams(leaves: set, g2, size: int) -> int:
    """The leaves of the group's size that group g2's loop does not read already."""
    reads = {a for s in g2.fused for a in s.exp.args}
    return sum(1 for a in leaves if a not in reads and isinstance(a.type, TensorType) and a.type.shape
               and int(np.prod(a.type.shape)) >= size)


def _apply(body: Body, v: Var, recipe, targets: dict, names: NameSupply):
    """(the body with the recipe copied right before the first reader in each target
    group, whose readers read the copy; the copies' variables)"""
    before: dict = {}   # statement index -> copies to insert before it
    swap: dict = {}     # statement index -> the copy of v it reads
    for js in targets.values():
        ren = {}
        copies = []
        for s in recipe:
            (x,) = s.pat
            ren[x] = Var(names.fresh(x.name), x.type)
            copies.append(Let((ren[x],), Prim(s.exp.op, tuple(ren.get(a, a) for a in s.exp.args), s.exp.params),
                              s.loc))
        before[js[0]] = copies
        swap.update((j, ren[v]) for j in js)
    stmts = []
    for j, st in enumerate(body.stmts):
        stmts.extend(before.get(j, ()))
        if j in swap:
            w = swap[j]
            st = Let(st.pat, Prim(st.exp.op, tuple(w if a is v else a for a in st.exp.args), st.exp.params), st.loc)
        stmts.append(st)
    return Body(tuple(stmts), body.result), {c.pat[0] for cs in before.values() for c in cs}


def _fused(body: Body, v: Var, copies: set) -> bool:
    """After the rewrite: is v no longer kept, and is every copy fused and not kept?"""
    kept, fused = set(), set()
    for g in fusion.plan(body).values():
        kept |= g.keep
        fused |= {s.pat[0] for s in g.fused}
    return v not in kept and copies <= fused and not copies & kept
