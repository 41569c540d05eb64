"""Loops in reverse mode: save per iteration, reverse, re-execute the body.

Contract (note [loop-reversal] in docs/design.md):

- `fwd(ctx, b, st) -> LoopTape` emits the primal loop, extended so that each
  iteration pushes its loop-carried values onto stores. A loop-carried array
  that the body changes only by in-place updates (a chain of `index_update`
  from the parameter to the result) is not saved whole: each update pushes the
  elements it overwrites and its indices (an undo log), so the stores grow with
  the number of elements written, not with the array size times the trip count.
  A `while` loop also counts its iterations. A loop-carried *store* (derivative
  code being differentiated again) is restored by undoing its push/pop chain
  (note [store-adjoints]).
- `rev(ctx, b, st, adj, tape)` emits a `for` loop over the iterations in
  reverse: it pops the saved values (or undoes the logged writes) to restore
  the state at the start of the iteration, re-executes a renamed copy of the
  body's forward sweep, and runs the body's return sweep. Adjoints of the loop
  parameters and of the free variables the body reads are carried. Saved
  values the return sweep never reads are then dropped from both loops (TBR).

`fwd_store`/`rev_store` are the store-all reversal; `fwd`/`rev` hand a loop
to `checkpoint.py` instead when the strategy checkpoints loops (note
[loop-checkpointing]), whose strip-mining base case uses the store-all pair.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import MissingRuleError
from ...ir import names
from ...ir.core import Body, Const, ForForm, Let, Loop, Prim, Var, WhileForm
from ...ir.prims.indexing import region_shape
from ...ir.traverse import dce, free_vars, rename_body
from ...ir.types import I64, StoreType, TensorType
from .._common import differentiable
from ..activity import mark_body, useful_in_loop
from . import independent, loop_forward
from .adjoints import Adjoints
from .body import fwd_body, recomputed, rev_body
from . import saved
from .saved import expensive, reexecuted


@dataclass
class UndoEntry:
    spec: tuple
    old: Var                      # store of overwritten regions (final value after the loop)
    idx: list                     # per index operand: a store Var (final), a Recipe, or the atom itself


@dataclass
class LoopTape:
    count: object                 # trip count atom
    saved: dict = field(default_factory=dict)     # param -> final store var
    undo: dict = field(default_factory=dict)      # param -> [UndoEntry] in execution order
    stores: dict = field(default_factory=dict)    # store param -> [(op, undo store of popped values or None)]
    save_param: dict = field(default_factory=dict)  # param -> its store's parameter in the forward loop
    values: dict = field(default_factory=dict)    # body statement index -> final store of its result
    site: tuple = ()                               # (builder, Let) of the forward loop, for `_drop_saves`
    value_params: list = field(default_factory=list)  # the forward loop's store params of `values`
    entry: dict = field(default_factory=dict)     # param -> its value before the loop, which every
                                                  # re-executed iteration reads (independent.py)
    nested: dict = field(default_factory=dict)    # body index of a nested loop -> [(its statement
                                                  # index, final store of its rows)] (saved.py)
    loaded: dict = field(default_factory=dict)    # body statement index -> rows an enclosing loop
                                                  # saved, row = iteration (saved.py)
    final: dict = field(default_factory=dict)     # param -> the loop's result for it, which every
                                                  # re-executed iteration reads (`independent.final_state`)
    forward: bool = False         # the iterations commute (`independent.commutes`): with nothing popped
                                  # per iteration, the return sweep runs them in increasing order


@dataclass
class Write:
    """A region an in-place chain overwrites: `index(array, *idx, spec=spec)` read
    before `stmt` runs is what `stmt` may change (note [nested-undo])."""
    stmt: Let
    array: object                 # the atom `stmt` updates
    spec: tuple
    idx: tuple


def _update_chains(body, params) -> dict:
    """param -> the `Write`s of the in-place chain from the param to the body's
    result, in order; a chain link is an `index_update` or an inner loop that
    changes the array only through such a chain (its writes projected, note
    [nested-undo])."""
    chains = {}
    for p, r in zip(params, body.result):
        if not isinstance(p.type, TensorType) or p.type.ndim == 0 or not isinstance(r, Var):
            continue
        ws = _chain_writes(body, p, r)
        if ws:
            chains[p] = ws
    return chains


def _chain_writes(body, p, r):
    """The writes along the chain from `p` to `r` in `body`, or None if there is none."""
    defs = {v: st for st in body.stmts for v in st.pat}
    out = []
    cur = r
    while cur != p:
        st = defs.get(cur)
        if st is None:
            return None
        e = st.exp
        if isinstance(e, Prim) and e.op == "index_update":
            out.append([Write(st, e.args[0], e.p["spec"], tuple(e.args[2:]))])
            cur = e.args[0]
        elif isinstance(e, Loop) and cur in st.pat[:len(e.params)]:
            jq = st.pat.index(cur)
            inner = _chain_writes(e.body, e.params[jq], e.body.result[jq])
            if not inner:
                return None
            out.append(_project(st, e.init[jq], inner))
            cur = e.init[jq]
        else:
            return None
    return [w for ws in reversed(out) for w in ws]


@dataclass
class Recipe:
    """How to recompute `var` from the loop index and values bound outside the
    loop: the body's statements that define it (an index need not be saved)."""
    var: Var
    stmts: tuple

    def emit(self, b, mapping: dict):
        env = dict(mapping)
        for st in self.stmts:
            outs = b.emit_multi(st.exp.op, *[env.get(a, a) for a in st.exp.args],
                                name=st.pat[0].name, **st.exp.p)
            env.update(zip(st.pat, outs))
        return env[self.var]


def _recipe(body, var, known) -> Recipe | None:
    """A `Recipe` for `var` if the body computes it by primitives (no stores) from
    `known` values and constants only."""
    defs = {v: st for st in body.stmts for v in st.pat}
    need, order = [var], []
    seen = set()
    while need:
        v = need.pop()
        if v in seen or v in known:
            continue
        seen.add(v)
        st = defs.get(v)
        if st is None or not isinstance(st.exp, Prim) or st.exp.op.startswith("store_"):
            return None
        order.append(st)
        need.extend(a for a in st.exp.args if isinstance(a, Var))
    pos = {id(st): k for k, st in enumerate(body.stmts)}
    return Recipe(var, tuple(sorted({id(st): st for st in order}.values(), key=lambda st: pos[id(st)])))


def _project(st, array, inner) -> list:
    """The writes of loop `st`'s iterations as regions of its initial `array`:
    an index that changes inside the loop becomes the whole dimension."""
    outside = free_vars(st.exp)
    out = []
    for w in inner:
        spec, idx, it = [], [], iter(w.idx)
        for s, d in zip(w.spec, array.type.shape):
            if s[0] not in ("d", "ds"):
                spec.append(s)
                continue
            a = next(it)
            if isinstance(a, Const) or a in outside:
                spec.append(s)
                idx.append(a)
            else:
                spec.append(("s", 0, d, 1))
        if all((x.spec, x.idx) != (tuple(spec), tuple(idx)) for x in out):
            out.append(Write(st, array, tuple(spec), tuple(idx)))
    return out


def _store_chains(st, body, params) -> dict:
    """store param -> its `store_push`/`store_pop` statements, in order (note [store-adjoints])."""
    defs = {v: s for s in body.stmts for v in s.pat}
    chains = {}
    for p, r in zip(params, body.result):
        if not isinstance(p.type, StoreType):
            continue
        chain, cur = [], r
        while cur != p:
            d = defs.get(cur)
            if d is None or not isinstance(d.exp, Prim) or d.exp.op not in ("store_push", "store_pop") \
                    or d.pat[0] != cur:
                raise MissingRuleError(
                    "reverse mode through this loop of derivative code is not supported "
                    "(its store is not threaded through the body)", loc=st.loc,
                    hint="for second derivatives use pb.hessian or pb.jvp of pb.grad (forward-over-reverse)")
            chain.append(d)
            cur = d.exp.args[0]
        chains[p] = list(reversed(chain))
    return chains


def fwd(ctx, b, st):
    """The forward sweep of loop `st`: a `LoopTape`, or a `checkpoint.CheckpointTape`
    when the strategy checkpoints loops (note [loop-checkpointing])."""
    from . import checkpoint

    if checkpoint.eligible(ctx, st):
        return checkpoint.fwd(ctx, b, st)
    return fwd_store(ctx, b, st)


def fwd_store(ctx, b, st) -> LoopTape:
    """The store-all forward sweep (every iteration saves its state)."""
    e = st.exp
    schains = _store_chains(st, e.body, e.params)
    chains = _update_chains(e.body, e.params)
    chains.update(schains)
    sb = b.child()
    new_params, new_init = [], []
    tape = LoopTape(count=e.form.bound if isinstance(e.form, ForForm) else None,
                    forward=independent.commutes(ctx, b, st))

    # each store gets one push per iteration: a static trip count is its size
    cap = {"cap": max(int(e.form.bound.value), 1)} \
        if isinstance(e.form, ForForm) and isinstance(e.form.bound, Const) else {}

    def store(hint, elem):
        init = b.emit("store_new", elem=elem, name=hint, **cap)
        prm = sb.fresh(hint, StoreType(elem))
        return init, prm

    pushes = []  # (param var, store param) pushed at the start of the body
    for p in e.params:
        if p in chains:
            continue
        init, prm = store(names.saved(p.name), p.type)
        new_params.append(prm)
        new_init.append(init)
        pushes.append((p, prm))
    cur = {}
    for prm_store in new_params:
        cur[prm_store] = prm_store
    for p, prm in pushes:
        cur[prm] = sb.emit("store_push", cur[prm], p, name=prm.name)
    undo_prms = {}
    store_undo = {}
    for p, ch in schains.items():
        entries = []
        for u in ch:
            if u.exp.op == "store_pop":
                uinit, uprm = store(names.undo(p.name), p.type.elem)
                new_params.append(uprm)
                new_init.append(uinit)
                entries.append((u, uprm))
            else:
                entries.append((u, None))
        store_undo[p] = entries
    index = e.form.index if isinstance(e.form, ForForm) else None
    outside = free_vars(e)
    final = [p for p in chains if p not in schains and independent.final_state(ctx, b, st, p)]
    for p, ch in chains.items():
        if p in schains or p in final:
            continue
        entries = []
        for w in ch:
            region = w.array.type.with_shape(region_shape(w.array.type.shape, w.spec))
            oinit, oprm = store(names.undo(p.name), region)
            new_params.append(oprm)
            new_init.append(oinit)
            idx = []
            for a in w.idx:
                if isinstance(a, Const) or a == index or a in outside:
                    idx.append(a)  # constants, the loop index and outer values are known in the return sweep
                elif (recipe := _recipe(e.body, a, outside | {index})) is not None:
                    idx.append(recipe)  # recomputed from them
                else:
                    iinit, iprm = store(names.undo(a.name), a.type)
                    new_params.append(iprm)
                    new_init.append(iinit)
                    idx.append(iprm)
            entries.append((w, oprm, idx))
        undo_prms[p] = entries
    by_stmt = {}
    for entries in undo_prms.values():
        for w, oprm, idx in entries:
            by_stmt.setdefault(id(w.stmt), []).append((w, oprm, idx))
    pop_undo = {id(u): uprm for entries in store_undo.values() for u, uprm in entries if uprm is not None}
    value_prms = {}
    preload = getattr(ctx, "preload", {})
    for k in expensive(e.body, ctx.varied):
        v = e.body.stmts[k].pat[0]
        if v in preload:   # an enclosing loop saved its rows: the return sweep reads them too
            tape.loaded[k] = preload[v][0]
            continue
        vinit, vprm = store(names.saved(v.name), v.type)
        new_params.append(vprm)
        new_init.append(vinit)
        value_prms[id(e.body.stmts[k])] = (k, vprm)
    nested = {id(e.body.stmts[i]): (i, ks) for i, ks in saved.plan(ctx, e.body).items()}
    rows = []   # (body index, statement index, the rows' final value) (note [nested-saves])
    for s in e.body.stmts:
        for w, oprm, idx in by_stmt.get(id(s), ()):
            sb.loc = s.loc
            old = sb.emit("index", w.array, *w.idx, spec=w.spec, name="old")
            cur[oprm] = sb.emit("store_push", cur.get(oprm, oprm), old, name=oprm.name)
            for a, ip in zip(w.idx, idx):
                if isinstance(ip, Var) and isinstance(ip.type, StoreType):
                    cur[ip] = sb.emit("store_push", cur.get(ip, ip), a, name=ip.name)
        if id(s) in nested:
            i, ks = nested[id(s)]
            s2, finals = saved.extend(sb, s, ks)
            sb.stmts.append(s2)
            rows += [(i, k, v) for k, v in zip(ks, finals)]
        elif len(s.pat) == 1 and s.pat[0] in preload:   # an enclosing loop saved it
            sb.stmts.append(saved.load(s, preload[s.pat[0]]))
        else:
            sb.stmts.append(s)
        if id(s) in pop_undo:
            uprm = pop_undo[id(s)]
            cur[uprm] = sb.emit("store_push", cur.get(uprm, uprm), s.pat[1], name=uprm.name)
    # saved values are pushed at the end of the body, not after their statements: the
    # statements between stay one fused elementwise loop (note [saved-values])
    for s in e.body.stmts:
        if id(s) in value_prms:
            vprm = value_prms[id(s)][1]
            cur[vprm] = sb.emit("store_push", cur.get(vprm, vprm), s.pat[0], name=vprm.name)
    row_prms = []
    for i, k, v in rows:
        rinit, rprm = store(names.saved(v.name), v.type)
        new_params.append(rprm)
        new_init.append(rinit)
        cur[rprm] = sb.emit("store_push", rprm, v, name=rprm.name)
        row_prms.append((i, k, rprm))
    count_prm = None
    if isinstance(e.form, WhileForm):
        count_prm = sb.fresh("trips", I64)
        new_params.append(count_prm)
        new_init.append(Const(0, I64))
        cur[count_prm] = sb.emit("add", count_prm, Const(1, I64), name="trips")
    new_res = [cur.get(p, p) for p in new_params]
    body = sb.body(list(e.body.result) + new_res)
    finals = [b.fresh(p.name, p.type) for p in new_params]
    b.let(tuple(st.pat) + tuple(finals), Loop(tuple(e.params) + tuple(new_params),
                                              tuple(e.init) + tuple(new_init), e.form, body), st.loc)
    tape.site = (b, b.stmts[-1])
    final_of = dict(zip(new_params, finals))
    for p, prm in pushes:
        tape.saved[p] = final_of[prm]
        tape.save_param[p] = prm
    tape.final = {p: st.pat[e.params.index(p)] for p in final}
    for p, entries in undo_prms.items():
        tape.undo[p] = [UndoEntry(w.spec, final_of[oprm],
                                  [final_of.get(i, i) if isinstance(i, Var) else i for i in idx])
                        for w, oprm, idx in entries]
    for p, entries in store_undo.items():
        tape.stores[p] = [(u.exp.op, final_of[uprm] if uprm is not None else None) for u, uprm in entries]
    for k, vprm in value_prms.values():
        tape.values[k] = final_of[vprm]
        tape.value_params.append(vprm)
    for i, k, rprm in row_prms:
        tape.nested.setdefault(i, []).append((k, final_of[rprm]))
    if count_prm is not None:
        tape.count = final_of[count_prm]
    return tape


@dataclass
class ReverseFrame:
    """The adjoint parameters of a reverse loop (shared by `rev` and split mode's loops):
    `act` indices of the varied loop parameters, `fvs` the varied free variables the
    body reads; `pa`/`fa` their reverse-loop parameters and `*_init` initial values;
    `rb` the reverse body's builder and `k` its index."""
    act: list
    fvs: list
    rb: object
    k: Var
    pa: dict
    pa_init: dict
    fa: dict
    fa_init: dict


def reverse_frame(ctx, b, st, adj) -> ReverseFrame:
    e = st.exp
    outs = st.pat[:len(e.params)]
    cts = [adj.get(v) for v in outs]
    # only what may get a non-zero adjoint (the useful half of activity, note [call-activity])
    useful, free = useful_in_loop(e, [k for k, c in enumerate(cts) if c is not None], ctx.varied, ctx.deps)
    act = sorted(useful)
    fvs = sorted(free, key=lambda v: v.name)
    rb = b.child()
    k = rb.fresh("k", I64)
    ctx.nonneg.add(k)
    return ReverseFrame(act, fvs, rb, k,
                        {i: rb.fresh(names.adjoint(e.params[i].name), e.params[i].type) for i in act},
                        {i: cts[i] if cts[i] is not None else adj.get_or_zero(outs[i]) for i in act},
                        {v: rb.fresh(names.adjoint(v.name), v.type) for v in fvs},
                        {v: adj.get_or_zero(v) for v in fvs})


def reverse_iteration(ctx, rb, body, tapes, fr: ReverseFrame) -> Adjoints:
    """The return sweep of one iteration's re-executed `body` into `rb`, seeded with
    the carried adjoints of `fr`; the adjoint environment it leaves."""
    inner = Adjoints(rb, ctx.varied)
    for v in fr.fvs:
        inner.m[v] = fr.fa[v]
    for i in fr.act:
        r = body.result[i]
        if isinstance(r, Var) and r in ctx.varied:
            inner.add(r, fr.pa[i])
    rev_body(ctx, rb, body, inner, tapes)
    return inner


def rev(ctx, b, st, adj, tape) -> None:
    from . import checkpoint

    if isinstance(tape, checkpoint.CheckpointTape):
        return checkpoint.rev(ctx, b, st, adj, tape)
    rev_store(ctx, b, st, adj, tape)


def _runs_forward(tape: LoopTape) -> bool:
    """Whether the return sweep may visit the iterations in increasing order: they
    commute and nothing is popped per iteration (pops are last in, first out)."""
    return tape.forward and not (tape.saved or tape.undo or tape.stores or tape.values or tape.nested
                                 or tape.loaded)


def rev_store(ctx, b, st, adj, tape: LoopTape) -> None:
    """The store-all return sweep, for the tape of `fwd_store`."""
    e = st.exp
    npar = len(e.params)
    outs = st.pat[:npar]
    if all(adj.get(v) is None for v in outs):
        return
    fr = reverse_frame(ctx, b, st, adj)
    act, fvs, rb, k, pa, pa_init, fa, fa_init = fr.act, fr.fvs, fr.rb, fr.k, fr.pa, fr.pa_init, fr.fa, fr.fa_init
    stores = {}          # store var (final, outer) -> reverse-loop param
    index = e.form.index if isinstance(e.form, ForForm) else None
    for s in list(tape.saved.values()) + [x for ents in tape.undo.values() for en in ents
                                          for x in [en.old] + [i for i in en.idx if _is_store(i)]]:
        stores[s] = rb.fresh(s.name, s.type)
    for ents in tape.stores.values():
        for _, u in ents:
            if u is not None:
                stores[u] = rb.fresh(u.name, u.type)
    for s in tape.values.values():
        stores[s] = rb.fresh(s.name, s.type)
    for s in (s for ents in tape.nested.values() for _, s in ents):
        stores[s] = rb.fresh(s.name, s.type)
    cur_arr = {p: rb.fresh(p.name, p.type) for p in list(tape.undo) + list(tape.stores)}
    cur_arr_init = {p: outs[e.params.index(p)] for p in cur_arr}
    # body of the reverse loop
    cur = dict(stores)   # outer store var -> current value inside the body
    restored = {}
    n = tape.count
    if isinstance(e.form, ForForm) and _runs_forward(tape):
        restored[e.form.index] = k   # note [independent-loops], "forward return sweeps"
    elif isinstance(e.form, ForForm):
        nm1 = rb.emit("sub", n, Const(1, I64), name="last")
        restored[e.form.index] = rb.emit("sub", nm1, k, name=e.form.index.name)
        ctx.nonneg.add(restored[e.form.index])   # in [0, n)
    for p, s in tape.saved.items():
        cur[s], v = rb.emit_multi("store_pop", cur[s], name=p.name)
        restored[p] = v
    restored.update(tape.entry)   # independent iterations: each sees the values before the loop
    restored.update(tape.final)   # triangular ones: each reads only what the loop leaves
    for p, entries in tape.undo.items():
        a = cur_arr[p]
        for en in reversed(entries):
            idx = []
            for i in en.idx:
                if i == index and index is not None:
                    idx.append(restored[index])
                elif isinstance(i, Recipe):
                    idx.append(i.emit(rb, {index: restored.get(index)}))
                elif _is_store(i):
                    cur[i], iv = rb.emit_multi("store_pop", cur[i], name="i")
                    idx.append(iv)
                else:
                    idx.append(i)
            cur[en.old], old = rb.emit_multi("store_pop", cur[en.old], name="old")
            a = rb.emit("index_update", a, old, *idx, spec=en.spec, mode="set", name=p.name)
        restored[p] = a
    popped = {}
    for p, ents in tape.stores.items():
        restored[p] = _undo_store(rb, cur_arr[p], ents, cur, popped.setdefault(p, {}))
    for p in e.params:
        if p in ctx.varied:
            ctx.varied.add(restored[p])
    body = recomputed(rename_body(e.body, ctx.supply, restored))
    mark_body(body, ctx.varied, ctx.deps)
    loaded = saved.preload(ctx, rb, body, tape.nested, cur)   # note [nested-saves]
    tapes = fwd_body(ctx, rb, reexecuted(rb, body, tape.values, cur, tape.loaded, restored.get(index)), lazy=True)
    for v in loaded:
        del ctx.preload[v]
    inner = reverse_iteration(ctx, rb, body, tapes, fr)
    # the re-executed body changed the (mutable) stores again: bring them back to the start state
    store_back = {p: _undo_store(rb, body.result[e.params.index(p)], ents, cur, popped[p])
                  for p, ents in tape.stores.items()}
    new_pa = [inner.get_or_zero(restored[e.params[i]], rb) for i in act]
    new_fa = [inner.get(v) for v in fvs]
    params = [pa[i] for i in act] + [fa[v] for v in fvs] + list(stores.values()) + list(cur_arr.values())
    init = [pa_init[i] for i in act] + [fa_init[v] for v in fvs] + list(stores.keys()) + \
           [cur_arr_init[p] for p in cur_arr]
    # the array at the start of the iteration, for the next one; if an inner loop's return
    # sweep restored it, that restored value (the re-executed forward updated it in place)
    carried = {}
    for p in tape.undo:
        same = ctx.equal.get(restored[p])
        carried[p] = same[1] if same is not None and same[0] is rb else restored[p]
    res = new_pa + new_fa + [cur[s] for s in stores] + [carried[p] for p in tape.undo] + \
        [store_back[p] for p in tape.stores]
    rbody = rb.body(res)
    if isinstance(e.form, ForForm) and tape.site and not (tape.undo or tape.stores or tape.values or tape.final
                                                          or tape.nested or tape.loaded) and \
            loop_forward.order_free(rbody, [pa[i] for i in act], new_pa, [fa[v] for v in fvs], new_fa):
        return loop_forward.rev(ctx, b, st, adj, tape)   # note [forward-return-sweep]
    # to-be-recorded analysis (Tapenade): a value the return sweep never reads is not saved
    drop = _unread_saves(rbody, tape, restored)
    if drop:
        gone = {stores[tape.saved[p]] for p in drop}
        popped_vals = {restored[p] for p in drop}
        keep = [j for j, q in enumerate(params) if q not in gone]
        params, init, res = [params[j] for j in keep], [init[j] for j in keep], [res[j] for j in keep]
        stmts = tuple(s for s in rbody.stmts if not (isinstance(s.exp, Prim) and s.exp.op == "store_pop"
                                                      and s.pat[1] in popped_vals))
        rbody = Body(stmts, tuple(res))
        _drop_saves(tape, drop)
    names_out = [p.name for p in params]
    # the free variables' adjoints only sum contributions: their order is ours (note [adjoint-reassoc])
    sums = {fa[v] for v in fvs} & set(params)
    outs_rev = b.for_loop(params, init, k, n, rbody, names=names_out, sums=sums)
    for p in tape.undo:  # the return sweep ends with the array as it was before the loop
        x0 = e.init[e.params.index(p)]
        if isinstance(x0, Var):
            ctx.equal[x0] = (b, outs_rev[res.index(carried[p])])
    # the free-variable adjoints were carried through the loop: replace, then add the init contributions
    for j, v in enumerate(fvs):
        adj.m[v] = outs_rev[len(act) + j]
    for j, i in enumerate(act):
        if isinstance(e.init[i], Var) and e.init[i] in ctx.varied:
            adj.add(e.init[i], outs_rev[j])


def _is_store(x) -> bool:
    return isinstance(x, Var) and isinstance(x.type, StoreType)


def _undo_store(rb, s, ents, cur, popped):
    """Undo one iteration's pushes and pops on store `s` (in reverse order).

    The values the iteration popped come from its undo store the first time
    (and are remembered in `popped`), so the second undo, after re-execution,
    reuses them.
    """
    for j in range(len(ents) - 1, -1, -1):
        op, u = ents[j]
        if op == "store_push":
            s, _ = rb.emit_multi("store_pop", s, name=s.name)
        else:
            if j not in popped:
                cur[u], popped[j] = rb.emit_multi("store_pop", cur[u], name="popped")
            s = rb.emit("store_push", s, popped[j], name=s.name)
    return s


def _unread_saves(rbody, tape, restored) -> list:
    """Saved parameters whose restored value nothing in the (dead-code-free) return sweep reads."""
    live = dce(rbody)
    read = {a for a in live.result if isinstance(a, Var)}
    for st in live.stmts:
        read |= free_vars(st.exp)
    return [p for p in tape.saved if restored[p] not in read]


def _drop_saves(tape, drop, values: bool = False) -> None:
    """Remove the pushes of `drop` (and with `values`, of the saved values) from the
    already emitted forward loop."""
    b, let = tape.site
    i = next(k for k, s in enumerate(b.stmts) if s is let)
    loop = let.exp
    prms = {tape.save_param[p] for p in drop} | (set(tape.value_params) if values else set())
    keep = [j for j, q in enumerate(loop.params) if q not in prms]
    stmts = tuple(s for s in loop.body.stmts
                  if not (isinstance(s.exp, Prim) and s.exp.op == "store_push" and s.exp.args[0] in prms))
    body = Body(stmts, tuple(loop.body.result[j] for j in keep))
    new = Loop(tuple(loop.params[j] for j in keep), tuple(loop.init[j] for j in keep), loop.form, body,
               loop.sums & {loop.params[j] for j in keep})
    b.stmts[i] = Let(tuple(let.pat[j] for j in keep), new, let.loc)
    tape.site = (b, b.stmts[i])
    for p in drop:
        del tape.saved[p]
    if values:
        tape.values.clear()
        tape.value_params.clear()
