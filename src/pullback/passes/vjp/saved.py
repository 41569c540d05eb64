"""Values a loop's forward sweep saves instead of its return sweep recomputing them.

Contract, saved values (note [saved-values] in docs/design.md): `expensive(body,
varied)` are the body's top-level transcendental statements (and long `matmul`s)
whose results vary; the store-all forward loop (`loop.fwd_store`) pushes their
results, and `reexecuted` is the body to re-execute, with pops in their place.

Nested saves (note [nested-saves]): a loop's return sweep re-executes its body forward, nested loops
included (note [loop-reversal]), and a nested loop saves its own transcendental
results only within that re-execution (note [saved-values]). For a nested `for`
loop of static trip count L (at most `MAX_TRIPS`), the store-all pair
(`loop.fwd_store`/`rev_store`) of the *enclosing* loop also saves them:

- `plan(ctx, body) -> {i: [k, ...]}`: for the top-level loop statement `i` of
  `body`, the top-level statements `k` of its body whose results are saved
  (`expensive`), each of a static shape with L x size <= `MAX_ELEMS`;
- `extend(sb, st, ks) -> (Let, finals)`: the nested loop carrying, per k, an
  array of L rows that iteration j writes row j of (`index_update`); the
  enclosing forward loop pushes the finals, one store per k;
- `preload(ctx, rb, body, nested, cur)` in the enclosing return sweep pops
  those arrays and records `ctx.preload[var] = (array, loop index)` for the
  renamed statements; the nested loop's `fwd_store` then binds such a `var` by
  `index(array, j)` instead of evaluating the statement, and its return
  sweep reads the same row (`LoopTape.loaded`) instead of saving it again.

So each transcendental result is evaluated once, in the primal forward sweep,
as the hand-written tape does, and memory grows by L values per saved
statement and outer iteration. Under loop checkpointing strategies nothing is
planned (their segments re-execute on purpose).
"""
from __future__ import annotations

from ...ir.core import Body, Const, ForForm, Let, Loop, Prim
from ...ir.prims import params_key
from ...ir.types import TensorType

# elementwise primitives worth a store instead of a re-execution (note [saved-values])
EXPENSIVE = frozenset({"exp", "expm1", "log", "log1p", "logistic", "tanh", "sin", "cos", "tan",
                        "sqrt", "pow", "atan2"})


def expensive(body, varied) -> list:
    """Indices of the body's top-level transcendental statements whose (float) result
    varies: the forward loop saves their results, the return sweep pops them instead
    of computing them again. Results the return sweep does not read are dropped by DCE."""
    out = []
    for k, st in enumerate(body.stmts):
        e = st.exp
        if (isinstance(e, Prim) and (e.op in EXPENSIVE or _long_contraction(e)) and len(st.pat) == 1
                and st.pat[0] in varied and isinstance(st.pat[0].type, TensorType) and st.pat[0].type.is_float):
            out.append(k)
    return out


def _long_contraction(e: Prim) -> bool:
    """A matmul that sums over at least `_SAVE_CONTRACTION` terms per result element:
    recomputing it costs that many multiply-adds per element, saving it one store and
    one load (note [saved-values])."""
    if e.op != "matmul":
        return False
    a = e.args[0].type
    return isinstance(a, TensorType) and len(a.shape) >= 1 and isinstance(a.shape[-1], int) \
        and a.shape[-1] >= _SAVE_CONTRACTION


_SAVE_CONTRACTION = 8


def reexecuted(rb, body, values: dict, cur: dict, loaded=None, index=None) -> Body:
    """The forward sweep to re-execute: `body` without its saved statements, after
    pops that bind the same variables. The pops come first, so the statements
    between saved ones stay one fused elementwise loop; each store is popped once
    (the order among stores is free). A statement of `loaded` ({k: rows}, note
    [nested-saves]) reads row `index` (the iteration's) of what an enclosing loop
    saved. The return sweep still runs on `body`, so the adjoint rule of the saved
    statement runs as before."""
    if not values and not loaded:
        return body
    pops, stmts = [], []
    for k, st in enumerate(body.stmts):
        if k in values:
            s = values[k]
            new = rb.fresh(s.name, s.type)
            pops.append(Let((new, st.pat[0]), Prim("store_pop", (cur[s],)), st.loc))
            cur[s] = new
        elif loaded and k in loaded:
            pops.append(load(st, (loaded[k], index)))
        else:
            stmts.append(st)
    return Body(tuple(pops + stmts), body.result)


MAX_TRIPS = 16        # a short nested loop (lstm's layers)
MAX_ELEMS = 1024      # elements of one saved array (L rows)


def plan(ctx, body) -> dict:
    if getattr(ctx.strategy, "loops", False):
        return {}
    out = {}
    for i, st in enumerate(body.stmts):
        e = st.exp
        if not (isinstance(e, Loop) and isinstance(e.form, ForForm) and isinstance(e.form.bound, Const)):
            continue
        n = int(e.form.bound.value)
        if not 1 <= n <= MAX_TRIPS:
            continue
        ks = [k for k in expensive(e.body, ctx.varied) if _small(e.body.stmts[k].pat[0].type, n)]
        if ks:
            out[i] = ks
    return out


def _small(t, n) -> bool:
    if not isinstance(t, TensorType) or not all(isinstance(d, int) for d in t.shape):
        return False
    size = 1
    for d in t.shape:
        size *= d
    return n * size <= MAX_ELEMS


_NOT_RUN = frozenset({"index_update", "take_add", "store_push", "store_pop", "store_new"})


def extend(sb, st, ks) -> tuple[Let, list]:
    """`st` (a nested loop) emitted into `sb` with one more carried array per saved
    statement; returns the new statement (not yet appended) and the arrays' finals."""
    e = st.exp
    n = int(e.form.bound.value)
    j = e.form.index
    ib = sb.child()
    prms, inits, news = [], [], []
    for k in ks:
        v = e.body.stmts[k].pat[0]
        t = TensorType(v.type.dtype, (n,) + tuple(v.type.shape))
        inits.append(sb.zeros(t, name="rows"))
        p = ib.fresh("rows", t)
        prms.append(p)
        news.append(ib.emit("index_update", p, v, j, spec=(("d",),), mode="set", name="rows"))
    # the row writes go right after the elementwise run that computes the values (before
    # the next update or non-primitive), where numba's fusion writes them from its loop
    stmts = e.body.stmts
    at = max(ks) + 1
    while at < len(stmts) and isinstance(stmts[at].exp, Prim) and stmts[at].exp.op not in _NOT_RUN:
        at += 1
    body = Body(stmts[:at] + tuple(ib.stmts) + stmts[at:], e.body.result + tuple(news))
    finals = [sb.fresh("rows", p.type) for p in prms]
    loop = Loop(e.params + tuple(prms), e.init + tuple(inits), e.form, body)
    return Let(st.pat + tuple(finals), loop, st.loc), finals


def preload(ctx, rb, body, nested: dict, cur: dict) -> list:
    """Pop the saved arrays of `nested` ({i: [(k, store)]}) into `rb` and record
    which renamed statements of `body`'s nested loops read them; returns those
    statements' variables (the caller forgets them after the re-execution)."""
    loaded = []
    for i, ents in nested.items():
        inner = body.stmts[i].exp
        for k, s in ents:
            cur[s], rows = rb.emit_multi("store_pop", cur[s], name="rows")
            v = inner.body.stmts[k].pat[0]
            ctx.preload[v] = (rows, inner.form.index)
            loaded.append(v)
    return loaded


def load(st, pre) -> Let:
    """The statement binding `st`'s result from its saved row instead."""
    rows, j = pre
    return Let(st.pat, Prim("index", (rows, j), params_key({"spec": (("d",),)})), st.loc)
