"""Loops reversed by recomputation from snapshots (note [loop-checkpointing]).

Contract: under a strategy whose `loops` is true (`Binomial`, `Bisection`,
`StripMine`, `Online`, `Budget`), `loop.fwd`/`loop.rev` hand an eligible loop
(`eligible`) to this module instead of saving every iteration:

- `fwd(ctx, b, st) -> CheckpointTape` emits the primal loop unchanged; a
  `while` loop also counts its iterations (the slides' counting pass: the
  forward sweep *is* the counting pass); a step machine's loop runs on copies
  of its stores.
- `rev(ctx, b, st, adj, tape)` emits one call of the loop's *segment
  function*, built on first use:

      seg(lo, hi, s, state..., free..., ct_state..., ct_free...) -> (ct_state..., ct_free...)

  Given the loop-carried state at the start of iteration `lo` and the
  adjoints of the state after iteration `hi - 1`, it returns the adjoints of
  the state at `lo` and the accumulated adjoints of the varied free
  variables. `_split_body` (bisection, binomial, budget): while the range
  holds more than one iteration (for a budget: more than fits), advance a copy
  of the state `m` iterations (`t // 2`, or `revolve_split(t, s)`), reverse
  the upper part by a recursive call with one snapshot fewer, and continue
  with the lower part (a loop, not a call: the recursion depth is the number
  of snapshots, or log2 t). `_strip_body` (strip-mining): push each chunk's
  starting state in one advance, reverse the chunks one level down. A single
  iteration is re-executed and reversed (`_step`); a range that fits a budget,
  or strip-mining's last level, by the store-all rule (`_store_range`).

The snapshot of a segment (the state parameters the body reads, at `lo`) is
held in stores while the segment runs, so `memory_report` counts it. Loops
that carry or read stores (derivative code differentiated again), other than
a step machine's, keep the store-all reversal, and so do loops that update
arrays in place inside a checkpointed step.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import PullbackError
from ...ir.core import Apply, Body, Const, ForForm, Func, Let, Loop, Var
from ...ir.names import NameSupply
from ...ir.traverse import free_vars, rename_body
from ...ir.types import BOOL, F64, I64, StoreType, TensorType
from .._common import differentiable
from ..activity import mark_body
from .adjoints import Adjoints
from .body import fwd_body, recomputed, rev_body


@dataclass
class CheckpointTape:
    count: object       # trip count atom


def eligible(ctx, st) -> bool:
    if not getattr(ctx.strategy, "loops", False):
        return False
    e = st.exp
    bound = set(e.params) | ({e.form.index} if isinstance(e.form, ForForm) else set())
    if any(isinstance(v.type, StoreType) for v in free_vars(e.body) - bound):
        return False
    if any(isinstance(p.type, StoreType) for p in e.params) and not _machine_loop(e):
        return False
    if ctx.ckpt_step and _updates_in_place(e):
        # inside a checkpointed loop's step, a loop that updates an array in place keeps
        # the store-all rule: its undo log is bounded by the step's work, where each of its
        # own snapshots would copy the whole array (Gaussian elimination: O(n^3 log n)
        # time, not O(n^5), and the same O(n^2 log n) memory)
        return False
    return schedule(ctx, st) is not None


def _updates_in_place(e: Loop) -> bool:
    from .loop import _update_chains

    return bool(_update_chains(e.body, e.params))


def _machine_loop(e: Loop) -> bool:
    """A step-machine loop (`cps_step_prog`): its body is one call of the step
    function. Its stores (the call stack) are snapshotted by copying them, and a
    step is reversed through the step function's split-mode vjp."""
    return len(e.body.stmts) == 1 and isinstance(e.body.stmts[0].exp, Apply)


def _copies(b, state):
    """The state with each store copied (a snapshot the run from it must not change)."""
    return [b.emit("store_copy", v, name=v.name) if isinstance(v.type, StoreType) else v for v in state]


def state_bytes(e: Loop) -> int:
    return sum(p.type.nbytes for p in e.params)


def schedule(ctx, st):
    """The schedule of loop `st`: ("bisection", 0), ("binomial", snapshots),
    ("strip", levels), or None (store every iteration: the budget allows it)."""
    from ...checkpointing import Binomial, Bisection, StripMine

    s = ctx.strategy
    if isinstance(s, Bisection):
        return ("bisection", 0)
    if isinstance(s, Binomial):
        return ("binomial", s.snapshots)
    if isinstance(s, StripMine):
        return ("strip", s.levels) if s.levels > 1 else None
    n = _budget_snapshots(ctx, st)
    return None if n is None else ("budget", n)


def _budget_snapshots(ctx, st) -> int | None:
    from ...checkpointing import Budget

    s = ctx.strategy
    if isinstance(s, Budget):
        e = st.exp
        w = state_bytes(e)
        if isinstance(e.form, ForForm) and isinstance(e.form.bound, Const) and int(e.form.bound.value) * w <= s.bytes:
            return None
        if 2 * w > s.bytes:
            raise PullbackError(f"checkpoint=pb.Budget(bytes={s.bytes}) cannot hold two snapshots of this loop's "
                                f"state ({w} bytes each)", loc=st.loc,
                                hint=f"raise the budget to at least {2 * w} bytes, or use pb.Bisection()")
        # half the budget for snapshots (at most 64: the recursion is that deep), half
        # for the store-all reversal of a range that fits
        return max(1, min(s.bytes // 2 // w, _MAX_SNAPSHOTS))
    return None


_MAX_SNAPSHOTS = 64


def fwd(ctx, b, st) -> CheckpointTape:
    e = st.exp
    if any(isinstance(p.type, StoreType) for p in e.params):
        # a machine loop mutates its stores: it runs on copies, the initial state
        # stays the first snapshot
        e = Loop(e.params, tuple(_copies(b, e.init)), e.form, e.body)
        st = Let(st.pat, e, st.loc)
    if isinstance(e.form, ForForm):
        b.stmts.append(st)
        return CheckpointTape(e.form.bound)
    sb = b.child()
    trips = sb.fresh("trips", I64)
    sb.stmts.extend(e.body.stmts)
    nxt = sb.emit("add", trips, Const(1, I64), name="trips")
    body = sb.body(list(e.body.result) + [nxt])
    final = b.fresh("trips", I64)
    b.let(tuple(st.pat) + (final,), Loop(tuple(e.params) + (trips,), tuple(e.init) + (Const(0, I64),),
                                         e.form, body), st.loc)
    return CheckpointTape(final)


@dataclass
class _Seg:
    """What the segment function of one loop needs: the loop, its active state
    indices, free variables (all, and the varied ones) and the schedule."""
    st: object
    act: list
    free: list
    fvs: list
    kind: str               # "bisection", "binomial", "budget" or "strip"
    w: int = 0              # budget: bytes a store-all reversal keeps per iteration (the state's)
    cap: int = 0            # budget: the bytes a range reversed by store-all may take


def rev(ctx, b, st, adj, tape: CheckpointTape) -> None:
    e = st.exp
    outs = st.pat[:len(e.params)]
    if all(adj.get(v) is None for v in outs):
        return
    act = [k for k, p in enumerate(e.params) if differentiable(p.type) and p in ctx.varied]
    bound = set(e.params) | ({e.form.index} if isinstance(e.form, ForForm) else set())
    free = sorted(free_vars(e.body) - bound, key=lambda v: v.name)
    fvs = [v for v in free if v in ctx.varied and differentiable(v.type)]
    kind, s0 = schedule(ctx, st)
    seg = _Seg(st, act, free, fvs, kind)
    if kind == "budget":
        seg.w, seg.cap = max(state_bytes(e), 1), ctx.strategy.bytes // 2
    fname = _build(ctx, seg)
    ca = [adj.get(outs[i]) if adj.get(outs[i]) is not None else adj.get_or_zero(outs[i]) for i in act]
    cf = [adj.get_or_zero(v) for v in fvs]
    rets = [e.params[i].type for i in act] + [v.type for v in fvs]
    args = [Const(0, I64), tape.count, Const(s0, I64)] + list(e.init) + list(free) + ca + cf
    res = b.apply(fname, args, rets, names=[f"{e.params[i].name}_adj" for i in act] +
                  [f"{v.name}_adj" for v in fvs])
    for j, v in enumerate(fvs):
        adj.m[v] = res[len(act) + j]
    for j, i in enumerate(act):
        if isinstance(e.init[i], Var) and e.init[i] in ctx.varied:
            adj.add(e.init[i], res[j])


@dataclass
class _Sig:
    """The parameters of a segment function being built (module docstring)."""
    name: str
    lo: Var
    hi: Var
    s: Var          # snapshots left (binomial), levels left (strip-mining), unused (bisection)
    P: list         # the state at `lo`
    F: list         # the body's free variables
    Fm: dict        # free variable of the loop -> its parameter here
    CA: list        # adjoints of the active state after iteration hi - 1
    CF: list        # adjoints of the varied free variables so far

    @property
    def rets(self):
        return [x.type for x in self.CA + self.CF]


def _build(ctx, seg: _Seg) -> str:
    """Build the segment function of `seg`; its name. `body(ctx, fb, seg, sig)`
    emits the body into builder `fb` and returns its results."""
    from ...ir.builder import Builder

    ctx.seg_count += 1
    name = ctx.seg_names.name(f"loop{ctx.seg_count}")
    e = seg.st.exp
    saved = (ctx.varied, ctx.supply, ctx.fparams)
    try:
        ctx.supply = NameSupply({v.name for v in e.params} | {v.name for v in seg.free})
        fb = Builder(ctx.supply)
        lo, hi = fb.fresh("lo", I64), fb.fresh("hi", I64)
        s = fb.fresh("levels" if seg.kind == "strip" else "snaps", I64)
        F = [fb.fresh(v.name, v.type) for v in seg.free]
        sig = _Sig(name, lo, hi, s, [fb.fresh(p.name, p.type) for p in e.params], F, dict(zip(seg.free, F)),
                   [fb.fresh(f"{e.params[i].name}_adj", e.params[i].type) for i in seg.act],
                   [fb.fresh(f"{v.name}_adj", v.type) for v in seg.fvs])
        res = (_strip_body if seg.kind == "strip" else _split_body)(ctx, fb, seg, sig)
        params = tuple([lo, hi, s] + sig.P + F + sig.CA + sig.CF)
        donated = tuple((params.index(x), j) for j, x in enumerate(sig.CA + sig.CF)
                        if isinstance(x.type, TensorType) and x.type.ndim > 0)
        ctx.new_funcs.append(Func(name, params, fb.body(list(res)), tuple(sig.rets), seg.st.loc, donated=donated))
    finally:
        ctx.varied, ctx.supply, ctx.fparams = saved
    return name


def _split_body(ctx, fb, seg: _Seg, sig: _Sig):
    """Bisection and the binomial schedule: advance, reverse the upper part by a
    recursive call, continue with the lower part; one iteration is `_step`."""
    e = seg.st.exp
    name, lo, hi, s, P, F, Fm, CA, CF, rets = (sig.name, sig.lo, sig.hi, sig.s, sig.P, sig.F, sig.Fm,
                                                sig.CA, sig.CF, sig.rets)
    # the snapshot: the state at `lo`, held in stores while the segment runs; only
    # the parameters the body reads (a `while` loop's condition is recomputed)
    live = _live(e)
    stores = []
    for k in live:
        s0 = fb.emit("store_new", elem=P[k].type, name="snapshot")
        stores.append(fb.emit("store_push", s0, P[k], name="snapshot"))
    budget = seg.kind == "budget" and not _machine_loop(e)  # (a machine's steps cannot be stored)
    t0 = fb.emit("sub", hi, lo, name="t")
    cond0 = fb.emit("gt", t0, Const(1, I64), name="more")
    if budget:  # a range whose store-all reversal fits in the budget is not split
        cond0 = fb.emit("and", cond0, fb.emit("gt", fb.emit("mul", t0, Const(seg.w, I64), name="bytes"),
                                              Const(seg.cap, I64), name="big"), name="more")
    wb = fb.child()
    w_hi = wb.fresh("hi", I64)
    w_st = [wb.fresh("snapshot", x.type) for x in stores]
    w_ca = [wb.fresh(x.name, x.type) for x in CA]
    w_cf = [wb.fresh(x.name, x.type) for x in CF]
    w_cond = wb.fresh("more", BOOL)
    popped, w_st2 = [], []
    for x in w_st:
        x2, v = wb.emit_multi("store_pop", x, name="state")
        popped.append(v)
        w_st2.append(x2)
    full = _fill(wb, e, live, popped)
    t = wb.emit("sub", w_hi, lo, name="t")
    if seg.kind in ("binomial", "budget"):
        m = wb.emit("revolve_split", t, s, name="m")
        s_right = wb.emit("sub", s, Const(1, I64), name="snaps")
    else:
        m = wb.emit("floordiv", t, Const(2, I64), name="m")
        s_right = s
    mid = wb.emit("add", lo, m, name="mid")
    smid = _advance(ctx, wb, e, _copies(wb, full), lo, m, Fm)
    w_st3 = [wb.emit("store_push", x, v, name="snapshot") for x, v in zip(w_st2, popped)]
    rr = wb.apply(name, [mid, w_hi, s_right] + list(smid) + F + w_ca + w_cf, rets,
                  names=[x.name for x in CA + CF])
    tm = wb.emit("sub", mid, lo, name="t")
    nxt = wb.emit("gt", tm, Const(1, I64), name="more")
    if budget:
        nxt = wb.emit("and", nxt, wb.emit("gt", wb.emit("mul", tm, Const(seg.w, I64), name="bytes"),
                                          Const(seg.cap, I64), name="big"), name="more")
    wbody = wb.body([mid] + w_st3 + list(rr) + [nxt])
    lout = fb.while_loop([w_hi] + w_st + w_ca + w_cf + [w_cond], [hi] + stores + CA + CF + [cond0],
                         w_cond, wbody)
    hi_out = lout[0]
    st_out = lout[1:1 + len(stores)]
    cts = lout[1 + len(stores):1 + len(stores) + len(CA) + len(CF)]
    state = []
    for x in st_out:
        _, v = fb.emit_multi("store_pop", x, name="state")
        state.append(v)
    state = _fill(fb, e, live, state)
    t_end = fb.emit("sub", hi_out, lo, name="t")
    if budget:  # what is left fits: the store-all reversal of the range
        return _inline(fb, _store_range(ctx, fb.child(), seg, state, lo, t_end, Fm, list(cts)))
    one = fb.emit("eq", t_end, Const(1, I64), name="one")
    then = _step(ctx, fb.child(), seg, state, lo, Fm, cts)
    else_ = Body((), tuple(cts))
    res = fb.if_(one, then, else_, names=[x.name for x in CA + CF])
    return res


def _inline(b, body: Body):
    """Append `body`'s statements to `b`; its results."""
    b.stmts.extend(body.stmts)
    return list(body.result)


def _live(e: Loop) -> list:
    """Indices of the loop parameters the body reads: the rest (a `while` loop's
    condition) need no snapshot, the body recomputes them."""
    fv = free_vars(e.body)
    return [k for k, p in enumerate(e.params) if p in fv or _machine_loop(e)]


def _fill(b, e: Loop, live, vals) -> list:
    """The full state from the live parameters' values (the others: zeros, never read)."""
    out = [None] * len(e.params)
    for k, v in zip(live, vals):
        out[k] = v
    for k, p in enumerate(e.params):
        if out[k] is None:
            out[k] = Const(False, p.type) if p.type.dtype == "bool" and not p.type.shape else b.zeros_like(p.type)
    return out


def _strip_body(ctx, fb, seg: _Seg, sig: _Sig):
    """Strip-mining with `levels` levels left: at the last level, the store-all
    reversal of the range; above it, one advance over the range pushing the state
    at the start of each of about t**(1/levels) chunks, then the chunks reversed
    last to first by recursive calls one level down."""
    e = seg.st.exp
    lo, hi, lv, P, F, Fm, CA, CF = sig.lo, sig.hi, sig.s, sig.P, sig.F, sig.Fm, sig.CA, sig.CF
    t = fb.emit("sub", hi, lo, name="t")
    if _machine_loop(e):
        # a machine loop cannot be reversed by the store-all rule (its stores are
        # mutated): the last level's chunks are single steps, reversed by `_step`
        last = fb.emit("le", t, Const(1, I64), name="last_level")
        sb = fb.child()
        one = sb.emit("eq", t, Const(1, I64), name="one")
        res = sb.if_(one, _step(ctx, sb.child(), seg, P, lo, Fm, CA + CF), Body((), tuple(CA + CF)),
                     names=[x.name for x in CA + CF])
        base = sb.body(list(res))
    else:
        last = fb.emit("le", lv, Const(1, I64), name="last_level")
        base = _store_range(ctx, fb.child(), seg, P, lo, t, Fm, CA + CF)
    ob = fb.child()
    # chunks: about t ** (1 / levels) of them, of c iterations (the last may be shorter)
    tf = ob.emit("cast", t, dtype="f64", name="tf")
    lvp = ob.emit("maximum", lv, Const(1, I64), name="levels")
    inv = ob.emit("div", Const(1.0, F64), ob.emit("cast", lvp, dtype="f64", name="lf"), name="inv")
    nch0 = ob.emit("cast", ob.emit("ceil", ob.emit("pow", tf, inv, name="r"), name="r"), dtype="i64", name="n")
    nch0 = ob.emit("maximum", nch0, Const(1, I64), name="n")
    c = ob.emit("floordiv", ob.emit("sub", ob.emit("add", t, nch0, name="u"), Const(1, I64), name="u"), nch0,
                name="chunk")
    c = ob.emit("maximum", c, Const(1, I64), name="chunk")
    nch = ob.emit("floordiv", ob.emit("sub", ob.emit("add", t, c, name="u"), Const(1, I64), name="u"), c,
                  name="chunks")
    # forward: push each chunk's starting state, advance over the chunk
    stores = [ob.emit("store_new", elem=p.type, name="snapshots") for p in P]
    kb = ob.child()
    k = kb.fresh("k", I64)
    ks = [kb.fresh("snapshots", x.type) for x in stores]
    kp = [kb.fresh(p.name, p.type) for p in P]
    ks2 = [kb.emit("store_push", x, v, name="snapshots") for x, v in zip(ks, _copies(kb, kp))]
    start = kb.emit("add", lo, kb.emit("mul", k, c, name="off"), name="start")
    n = kb.emit("minimum", c, kb.emit("sub", hi, start, name="left"), name="n")
    adv = _advance(ctx, kb, e, kp, start, n, Fm)
    fwd_out = ob.for_loop(ks + kp, stores + P, k, nch, kb.body(ks2 + list(adv)))
    # reverse: chunks last to first, one level down
    rb = ob.child()
    kk = rb.fresh("k", I64)
    rs = [rb.fresh("snapshots", x.type) for x in stores]
    rc = [rb.fresh(x.name, x.type) for x in CA + CF]
    j = rb.emit("sub", rb.emit("sub", nch, Const(1, I64), name="last"), kk, name="j")
    popped, rs2 = [], []
    for x in rs:
        x2, v = rb.emit_multi("store_pop", x, name="state")
        popped.append(v)
        rs2.append(x2)
    start = rb.emit("add", lo, rb.emit("mul", j, c, name="off"), name="start")
    stop = rb.emit("minimum", rb.emit("add", start, c, name="stop"), hi, name="stop")
    down = rb.emit("sub", lv, Const(1, I64), name="levels")
    rr = rb.apply(sig.name, [start, stop, down] + popped + F + rc, sig.rets, names=[x.name for x in CA + CF])
    rev_out = ob.for_loop(rs + rc, list(fwd_out[:len(stores)]) + CA + CF, kk, nch, rb.body(rs2 + list(rr)))
    above = ob.body(list(rev_out[len(stores):]))
    return fb.if_(last, base, above, names=[x.name for x in CA + CF])


def _store_range(ctx, sb, seg: _Seg, state, lo, t, Fm, cts) -> Body:
    """Iterations lo .. lo + t - 1 from `state`, reversed by the store-all rule
    (`loop.fwd_store`/`rev_store`); the body returning the new adjoints."""
    from .loop import fwd_store, rev_store

    e = seg.st.exp
    j = sb.fresh("j", I64)
    ps = [sb.fresh(p.name, p.type) for p in e.params]
    ib = sb.child()
    i = ib.emit("add", lo, j, name=e.form.index.name) if isinstance(e.form, ForForm) else None
    body = recomputed(_renamed(ctx, e, ps, i, Fm))
    ib.stmts.extend(body.stmts)
    outs = tuple(sb.fresh(p.name, p.type) for p in e.params)
    st = Let(outs, Loop(tuple(ps), tuple(state), ForForm(j, t), ib.body(list(body.result))), seg.st.loc)
    ca, cf = cts[:len(seg.act)], cts[len(seg.act):]
    ctx.varied = {state[i] for i in seg.act} | {Fm[v] for v in seg.fvs}
    mark_body(Body((st,), ()), ctx.varied, ctx.deps)
    tape = fwd_store(ctx, sb, st)
    adj = Adjoints(sb, ctx.varied)
    for v, c in zip(seg.fvs, cf):
        adj.m[Fm[v]] = c
    for i, c in zip(seg.act, ca):
        adj.m[outs[i]] = c
    rev_store(ctx, sb, st, adj, tape)
    out = [adj.get_or_zero(state[i], sb) for i in seg.act] + [adj.get_or_zero(Fm[v], sb) for v in seg.fvs]
    return sb.body(out)


def _renamed(ctx, e: Loop, state, index_value, Fm) -> Body:
    mapping = dict(zip(e.params, state))
    mapping.update(Fm)
    if isinstance(e.form, ForForm):
        mapping[e.form.index] = index_value
    return rename_body(e.body, ctx.supply, mapping)


def _advance(ctx, b, e: Loop, state, lo, m, Fm):
    """The state `m` iterations after `state` (at iteration `lo`): a primal loop."""
    ab = b.child()
    j = ab.fresh("j", I64)
    ps = [ab.fresh(p.name, p.type) for p in e.params]
    i = ab.emit("add", lo, j, name=e.form.index.name) if isinstance(e.form, ForForm) else None
    body = recomputed(_renamed(ctx, e, ps, i, Fm))
    ab.stmts.extend(body.stmts)
    return b.for_loop(ps, state, j, m, ab.body(list(body.result)))


def _step(ctx, sb, seg: _Seg, state, lo, Fm, cts) -> Body:
    """One iteration (number `lo`, from `state`) reversed: its forward sweep
    re-executed, then its return sweep; the body returning the new adjoints."""
    e = seg.st.exp
    body = recomputed(_renamed(ctx, e, state, lo, Fm))
    ca, cf = cts[:len(seg.act)], cts[len(seg.act):]
    ctx.varied = {state[i] for i in seg.act} | {Fm[v] for v in seg.fvs}
    mark_body(body, ctx.varied, ctx.deps)
    ctx.ckpt_step += 1
    try:
        tapes = fwd_body(ctx, sb, body)
        inner = Adjoints(sb, ctx.varied)
        for v, c in zip(seg.fvs, cf):
            inner.m[Fm[v]] = c
        for i, c in zip(seg.act, ca):
            r = body.result[i]
            if isinstance(r, Var) and r in ctx.varied:
                inner.add(r, c)
        rev_body(ctx, sb, body, inner, tapes)
    finally:
        ctx.ckpt_step -= 1
    out = [inner.get_or_zero(state[i], sb) for i in seg.act] + [inner.get_or_zero(Fm[v], sb) for v in seg.fvs]
    return sb.body(out)
