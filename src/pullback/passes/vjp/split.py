"""Split mode: linear-time reverse mode through calls of recursive functions.

Contract (note [split-calls] in docs/design.md): for a function `f` of the
plan's split set, `build(ctx, f, fwd, bwd)` returns two functions

- ``f_fwd(params..., tapes...) -> (results..., tapes...)``: `f`'s forward
  sweep; at the end of each scope it pushes the scope's *residuals* (the
  values bound in the scope that its return sweep reads) onto the tape;
- ``f_bwd(cts..., needed params..., accs..., tapes...) -> (tapes..., adjoints...)``:
  pops the residuals and runs the return sweep. `needed params` are the
  parameters the return sweep reads, passed again by the caller instead of
  being stored; `accs` are the incoming adjoints of `f`'s float array
  parameters, which the return sweep accumulates into and returns (a table
  passed to every call of a tree recursion gets O(1) adjoint work per read,
  not a dense array per call).

Scopes (branches, loop bodies) that contain a call of a split function are
split the same way and are never re-executed, so the pushes and pops mirror
each other exactly and one store per residual type serves the whole program.
Scopes without such calls keep the joint rules (`if_`, `loop`, `call`): their
own stores become residuals of the enclosing split scope.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ...errors import MissingRuleError
from ...ir import names
from ...ir.builder import Builder
from ...ir.core import Apply, Body, ForForm, Func, If, Let, Loop, Map, Prim, Var, WhileForm
from ...ir.names import NameSupply
from ...ir.traverse import all_names, free_vars, iter_lets, substitute
from ...ir.types import I64, StoreType, TensorType
from .._common import differentiable, zero_of
from ..activity import mark_body
from .adjoints import Adjoints
from .tape import Tape


def is_acc(p) -> bool:
    """Parameters whose adjoint `f_bwd` accumulates in place: float arrays."""
    return isinstance(p.type, TensorType) and p.type.ndim > 0 and p.type.is_float


def split_call(ctx, st) -> bool:
    """Is `st` a call reversed in split mode (an active call of a split function)?"""
    e = st.exp
    return (isinstance(e, Apply) and e.func in ctx.plan.split
            and any(isinstance(a, Var) and a in ctx.varied for a in e.args)
            and any(differentiable(v.type) for v in st.pat))


def has_split(ctx, e) -> bool:
    """Does the `If`/`Loop` `e` contain a call of a split function (active or not),
    or read a store bound outside it? Either must never run twice: a store is
    mutated by its pushes and pops, so re-executing the scope in its return sweep
    (the joint rules) would pop it again (a step of a step machine, note
    [loop-checkpointing])."""
    key = id(e)
    memo = ctx.split_memo
    if key not in memo:
        lets = iter_lets(Body((Let((), e),), ()))
        memo[key] = (any(isinstance(s.exp, Apply) and s.exp.func in ctx.plan.split for s in lets)
                     or any(isinstance(v.type, StoreType) for v in free_vars(e)))
    return memo[key]


# ---------------------------------------------------------------------------
# functions
# ---------------------------------------------------------------------------


def build(ctx, f: Func, fwd_name: str, bwd_name: str) -> tuple[Func, Func]:
    plan = ctx.plan
    ctx.supply = NameSupply(all_names(f))
    ctx.fparams = set(f.params)
    ctx.varied = {p for p in f.params if differentiable(p.type)}
    mark_body(f.body, ctx.varied, ctx.deps)
    F = Builder(ctx.supply)
    tin = Tape.params(plan, F)
    tape = tin.copy()
    # the zero adjoint of a float store parameter has the store's length on entry:
    # made here, before the body pushes or pops, and kept as a residual if used
    zstore = {p: F.emit("store_zeros_like", p, name=names.adjoint(p.name))
              for p in f.params if isinstance(p.type, StoreType) and differentiable(p.type)}
    info = fwd_scope(ctx, F, f.body, tape)
    R = Builder(ctx.supply)
    start = Tape.params(plan, R)
    rt = start.copy()
    adj = Adjoints(R, ctx.varied)
    ct_params = []
    for r in f.body.result:
        if differentiable(r.type):
            ct = R.fresh(names.result_adjoint(r.name if isinstance(r, Var) else ""), r.type)
            ct_params.append(ct)
            if isinstance(r, Var) and r in ctx.varied:
                adj.add(r, ct)
    accs = []
    for p in f.params:
        if is_acc(p):
            acc = R.fresh(names.adjoint(p.name), p.type)
            accs.append(acc)
            adj.m[p] = acc
    rev_scope(ctx, R, f.body, adj, info, rt)
    grads = [adj.get(p) if adj.get(p) is not None else zstore.get(p) or adj.get_or_zero(p)
             for p in f.params if differentiable(p.type)]
    rbody = Body(tuple(R.stmts), tuple(rt.atoms() + grads))
    residuals, remat = _residuals(ctx, F.stmts, free_vars(rbody))
    rbody = Body(tuple(remat) + rbody.stmts, rbody.result)
    fv = free_vars(rbody)
    read = [i for i, p in enumerate(f.params) if p in fv]
    for i in read:
        if isinstance(f.params[i].type, StoreType):
            raise MissingRuleError(f"split-mode reverse of '{f.name}' would read the store parameter "
                                   f"'{f.params[i].name}' twice", loc=f.loc,
                                   hint="for this second derivative use forward-over-reverse "
                                        "(pb.hessian, or pb.jvp of pb.grad)")
    plan.require(f.name, read)
    for v in residuals:
        tape.push(F, v)
    fwd = Func(fwd_name, f.params + tuple(tin.atoms()),
               F.body(list(f.body.result) + tape.atoms()),
               tuple(f.ret_types) + tuple(a.type for a in tin.atoms()), f.loc)
    B = Builder(ctx.supply)
    bin_ = Tape.params(plan, B)
    bt = bin_.copy()
    for v in reversed(residuals):
        bt.pop_into(B, v)
    rbody = substitute(rbody, start.rename(bt))
    needed = [f.params[i] for i in plan.needs(f.name)]
    bparams = tuple(ct_params) + tuple(needed) + tuple(accs) + tuple(bin_.atoms())
    bret = tuple(a.type for a in bin_.atoms()) + tuple(p.type for p in f.params if differentiable(p.type))
    dparams = [p for p in f.params if differentiable(p.type)]
    acc_params = [p for p in f.params if is_acc(p)]
    first_acc = len(ct_params) + len(needed)
    donated = tuple((first_acc + k, len(bin_.atoms()) + dparams.index(p)) for k, p in enumerate(acc_params))
    bwd = Func(bwd_name, bparams, Body(tuple(B.stmts) + rbody.stmts, rbody.result), bret, f.loc, donated)
    return fwd, bwd


def wrapper(ctx, f: Func, name: str, fwd_name: str, bwd_name: str) -> Func:
    """``f_vjp`` (the joint contract) for a split `f`: new tapes, `f_fwd`, then `f_bwd`."""
    plan = ctx.plan
    b = Builder(NameSupply(all_names(f)))
    cts = [b.fresh(names.result_adjoint(r.name if isinstance(r, Var) else ""), r.type)
           for r in f.body.result if differentiable(r.type)]
    t = Tape.new(plan, b)
    outs = b.apply(fwd_name, list(f.params) + t.atoms(), list(f.ret_types) + [a.type for a in t.atoms()],
                   names=[r.name if isinstance(r, Var) else "r" for r in f.body.result] + [a.name for a in t.atoms()])
    nres = len(f.ret_types)
    t.set(outs[nres:])
    accs = [b.zeros(p.type, name=names.adjoint(p.name)) for p in f.params if is_acc(p)]
    dparams = [p for p in f.params if differentiable(p.type)]
    needed = [f.params[i] for i in plan.needs(f.name)]
    back = b.apply(bwd_name, cts + needed + accs + t.atoms(),
                   [a.type for a in t.atoms()] + [p.type for p in dparams],
                   names=[a.name for a in t.atoms()] + [names.adjoint(p.name) for p in dparams])
    grads = list(back[len(t.atoms()):])
    ret = tuple(f.ret_types) + tuple(p.type for p in dparams)
    return Func(name, f.params + tuple(cts), b.body(list(outs[:nres]) + grads), ret, f.loc)


# scalar primitives a return sweep recomputes instead of popping (note [split-calls])
_REMAT = frozenset({"add", "sub", "mul", "neg", "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "not", "xor",
                    "cast", "maximum", "minimum", "abs", "sign", "where", "index"})


def _residuals(ctx, stmts, fv, extra=()) -> tuple[list, list]:
    """(pushed, recomputed): the values a scope's return sweep reads (`fv`) that the
    scope's forward sweep binds (its statements `stmts`, and `extra` binders such as
    loop parameters), split into those it stores and the scalar statements it
    recomputes from its inputs (child ids `left[i]`, counters `d - 1`, tests `d == 0`):
    cheap scalar primitives whose array operands are parameters of the function
    (passed to `f_bwd` again, not stored)."""
    defs = {v: st for st in stmts for v in st.pat}
    order = list(dict.fromkeys(list(extra) + [v for st in stmts for v in st.pat]))
    bound = set(order)
    need = {v for v in fv if v in bound}
    remat: set = set()
    todo = list(need)
    while todo:
        v = todo.pop()
        st = defs.get(v)
        if v in remat or st is None or not _cheap(ctx, st):
            continue
        remat.add(v)
        need.discard(v)
        for a in st.exp.args:
            if isinstance(a, Var) and a in bound and a not in remat and a not in need:
                need.add(a)
                todo.append(a)
    again = [Let(st.pat, st.exp, dataclasses.replace(st.loc, role="recompute") if st.loc else None)
             for st in stmts if st.pat and st.pat[0] in remat]
    return [v for v in order if v in need], again


def _cheap(ctx, st) -> bool:
    e = st.exp
    return (isinstance(e, Prim) and e.op in _REMAT and len(st.pat) == 1
            and isinstance(st.pat[0].type, TensorType) and st.pat[0].type.ndim == 0
            and all(not isinstance(a, Var) or not a.type.shape or a in ctx.fparams for a in e.args))


# ---------------------------------------------------------------------------
# scopes
# ---------------------------------------------------------------------------


def fwd_scope(ctx, F, body: Body, tape: Tape) -> dict:
    """Emit `body`'s forward sweep into `F`, threading `tape`; per-statement info for `rev_scope`."""
    from . import loop

    info = {}
    for st in body.stmts:
        e = st.exp
        if isinstance(e, Apply) and split_call(ctx, st):
            fwdn, _ = ctx.split_names(e.func)
            outs = tape.fresh_like(F)
            F.let(tuple(st.pat) + tuple(outs), Apply(fwdn, tuple(e.args) + tuple(tape.atoms())), st.loc)
            tape.set(outs)
        elif isinstance(e, If) and has_split(ctx, e):
            info[id(st)] = _if_fwd(ctx, F, st, tape)
        elif isinstance(e, Loop) and has_split(ctx, e):
            info[id(st)] = _loop_fwd(ctx, F, st, tape)
        elif isinstance(e, Loop):
            info[id(st)] = loop.fwd(ctx, F, st)
        else:
            F.stmts.append(st)
    return info


def rev_scope(ctx, R, body: Body, adj, info: dict, tape: Tape) -> None:
    """Emit `body`'s return sweep into `R` (reverse order), threading `tape`."""
    from . import call, if_, loop, map_, prim

    for st in reversed(body.stmts):
        R.loc = dataclasses.replace(st.loc, role="adjoint") if st.loc is not None else None
        e = st.exp
        if isinstance(e, Prim):
            prim.rev(ctx, R, st, adj)
        elif isinstance(e, Apply):
            if split_call(ctx, st):
                _call_rev(ctx, R, st, adj, tape)
            else:
                call.rev(ctx, R, st, adj)
        elif isinstance(e, If):
            if has_split(ctx, e):
                _if_rev(ctx, R, st, adj, info[id(st)], tape)
            else:
                if_.rev(ctx, R, st, adj)
        elif isinstance(e, Loop):
            if has_split(ctx, e):
                _loop_rev(ctx, R, st, adj, info[id(st)], tape)
            else:
                loop.rev(ctx, R, st, adj, info[id(st)])
        elif isinstance(e, Map):
            # self-contained: its return sweep re-executes the lambda (calls of split
            # functions inside it are reversed through their wrappers, `call.rev`)
            map_.rev(ctx, R, st, adj)
        else:
            raise TypeError(type(e).__name__)


def _call_rev(ctx, R, st, adj, tape: Tape) -> None:
    """``tapes, x_adj... = g_bwd(y_adj..., needed args..., accs..., tapes)``: always
    emitted (with zero cotangents if need be), since it pops `g`'s residuals."""
    e = st.exp
    callee = ctx.prog.func(e.func)
    _, bwdn = ctx.split_names(e.func)
    cts = [adj.get_or_zero(v) for v in st.pat if differentiable(v.type)]
    accs, src, used = [], [], set()
    for a, p in zip(e.args, callee.params):
        if not is_acc(p):
            continue
        if isinstance(a, Var) and a in ctx.varied and a not in used and adj.get(a) is not None:
            accs.append(adj.get(a))
            src.append(a)
            used.add(a)
        else:
            accs.append(R.zeros(p.type, name=names.adjoint(p.name)))
            src.append(None)
    dparams = [(a, p) for a, p in zip(e.args, callee.params) if differentiable(p.type)]
    grads = [R.fresh(names.adjoint(a.name) if isinstance(a, Var) else "c_adj", p.type) for a, p in dparams]
    tout = tape.fresh_like(R)
    needed = [e.args[i] for i in ctx.plan.needs(e.func)]
    R.let(tuple(tout) + tuple(grads), Apply(bwdn, tuple(cts) + tuple(needed) + tuple(accs) + tuple(tape.atoms())))
    tape.set(tout)
    acc_src = iter(src)
    for (a, p), g in zip(dparams, grads):
        s = next(acc_src) if is_acc(p) else None
        if s is not None:
            adj.m[a] = g   # accumulated into the adjoint we passed
        elif isinstance(a, Var) and a in ctx.varied:
            adj.add(a, g)


@dataclass
class _Branch:
    b: Builder          # the branch's forward builder
    info: dict
    tape: Tape          # the branch's tape at the end of its forward sweep
    body: Body          # the source branch


@dataclass
class _IfInfo:
    F: Builder
    let: Let
    branches: list = field(default_factory=list)


def _if_fwd(ctx, F, st, tape: Tape) -> _IfInfo:
    e = st.exp
    ii = _IfInfo(F, None)
    for br in (e.then, e.else_):
        sb = F.child()
        t = tape.copy()
        ii.branches.append(_Branch(sb, fwd_scope(ctx, sb, br, t), t, br))
    outs = tape.fresh_like(F)
    ii.let = Let(tuple(st.pat) + tuple(outs), _if_exp(e.cond, ii.branches), st.loc)
    F.stmts.append(ii.let)
    tape.set(outs)
    return ii


def _if_exp(cond, branches) -> If:
    bodies = [Body(tuple(br.b.stmts), tuple(br.body.result) + tuple(br.tape.atoms())) for br in branches]
    return If(cond, bodies[0], bodies[1])


def _replace(F, old: Let, new: Let) -> None:
    i = next(k for k, s in enumerate(F.stmts) if s is old)
    F.stmts[i] = new


def _if_rev(ctx, R, st, adj, ii: _IfInfo, tape: Tape) -> None:
    """Forward: each branch pushes its residuals at its end. Return sweep: an `if`
    whose branches pop them and run the branch's return sweep (no re-execution)."""
    e = st.exp
    cts = [adj.get(v) for v in st.pat]
    fvs = sorted((v for v in free_vars(e.then) | free_vars(e.else_)
                  if v in ctx.varied and differentiable(v.type)), key=lambda v: v.name)
    seeded = {v: adj.get(v) for v in fvs if adj.get(v) is not None}
    built = []
    for br in ii.branches:
        rb = R.child()
        start = Tape.params(ctx.plan, rb)
        rt = start.copy()
        inner = Adjoints(rb, ctx.varied)
        inner.m.update(seeded)
        for r, c in zip(br.body.result, cts):
            if c is not None and (not isinstance(r, Var) or r in ctx.varied):
                inner.add(r, c)
        rev_scope(ctx, rb, br.body, inner, br.info, rt)
        built.append((rb, start, rt, [inner.get(v) for v in fvs], inner))
    keep = [k for k in range(len(fvs)) if any(g[k] is not None and g[k] is not seeded.get(fvs[k])
                                               for *_, g, _ in built)]
    bodies = []
    for br, (rb, start, rt, g, inner) in zip(ii.branches, built):
        res = [g[k] if g[k] is not None else zero_of(rb, fvs[k], names.adjoint(fvs[k].name)) for k in keep]
        body = Body(tuple(rb.stmts), tuple(res) + tuple(rt.atoms()))
        residuals, remat = _residuals(ctx, br.b.stmts, free_vars(body))
        body = Body(tuple(remat) + body.stmts, body.result)
        for v in residuals:
            br.tape.push(br.b, v)
        pb_ = R.child()
        bt = tape.copy()
        for v in reversed(residuals):
            bt.pop_into(pb_, v)
        body = substitute(body, start.rename(bt))
        bodies.append(Body(tuple(pb_.stmts) + body.stmts, body.result))
    new = Let(ii.let.pat, _if_exp(e.cond, ii.branches), ii.let.loc)
    _replace(ii.F, ii.let, new)
    ii.let = new
    outs = [R.fresh(names.adjoint(fvs[k].name), fvs[k].type) for k in keep]
    tout = tape.fresh_like(R)
    R.let(tuple(outs) + tuple(tout), If(e.cond, bodies[0], bodies[1]))
    tape.set(tout)
    for k, o in zip(keep, outs):
        if fvs[k] in seeded:
            adj.m[fvs[k]] = o   # the branch carried the old adjoint through
        else:
            adj.add(fvs[k], o)


@dataclass
class _LoopInfo:
    F: Builder
    let: Let
    lb: Builder         # forward loop body builder
    tape: Tape          # the body's tape at the end of its forward sweep
    tparams: list       # the forward loop's tape parameters
    info: dict
    count: object       # trip count atom (a while loop's counted trips)
    trips: tuple = ()   # (param, next) of a while loop's counter


def _loop_fwd(ctx, F, st, tape: Tape) -> _LoopInfo:
    e = st.exp
    lb = F.child()
    tparams = tape.fresh_like(lb)
    lt = Tape(ctx.plan, dict(zip(ctx.plan.types, tparams)))
    info = fwd_scope(ctx, lb, e.body, lt)
    li = _LoopInfo(F, None, lb, lt, tparams, info, e.form.bound if isinstance(e.form, ForForm) else None)
    if isinstance(e.form, WhileForm):
        trips = lb.fresh("trips", I64)
        li.trips = (trips, lb.emit("add", trips, 1, name="trips"))
        li.count = F.fresh("trips", I64)
    outs = tape.fresh_like(F)
    li.let = Let(tuple(st.pat) + tuple(outs) + ((li.count,) if li.trips else ()),
                 _loop_exp(e, li, tape.atoms()), st.loc)
    F.stmts.append(li.let)
    tape.set(outs)
    return li


def _loop_exp(e, li: _LoopInfo, tape_init) -> Loop:
    params = tuple(e.params) + tuple(li.tparams) + ((li.trips[0],) if li.trips else ())
    init = tuple(e.init) + tuple(tape_init) + ((_i64(0),) if li.trips else ())
    res = tuple(e.body.result) + tuple(li.tape.atoms()) + ((li.trips[1],) if li.trips else ())
    return Loop(params, init, e.form, Body(tuple(li.lb.stmts), res))


def _i64(v):
    from ...ir.core import Const

    return Const(v, I64)


def _loop_rev(ctx, R, st, adj, li: _LoopInfo, tape: Tape) -> None:
    """Forward: each iteration pushes its residuals at its end. Return sweep: a
    `for` loop over the iterations in reverse that pops them and runs the body's
    return sweep; parameter and free-variable adjoints are loop-carried."""
    from .loop import reverse_frame

    e = st.exp
    npar = len(e.params)
    index = e.form.index if isinstance(e.form, ForForm) else None
    fr = reverse_frame(ctx, R, st, adj)
    act, fvs, rb, k, pa, pa_init, fa, fa_init = fr.act, fr.fvs, fr.rb, fr.k, fr.pa, fr.pa_init, fr.fa, fr.fa_init
    tprm = tape.fresh_like(rb)
    start = Tape.params(ctx.plan, rb)
    rt = start.copy()
    inner = Adjoints(rb, ctx.varied)
    for v in fvs:
        inner.m[v] = fa[v]
    for i in act:
        r = e.body.result[i]
        if isinstance(r, Var) and r in ctx.varied:
            inner.add(r, pa[i])
    rev_scope(ctx, rb, e.body, inner, li.info, rt)
    new_pa = [inner.get_or_zero(e.params[i], rb) for i in act]
    new_fa = [inner.get(v) for v in fvs]
    body = Body(tuple(rb.stmts), tuple(new_pa) + tuple(new_fa) + tuple(rt.atoms()))
    residuals, remat = _residuals(ctx, li.lb.stmts, free_vars(body), e.params)
    body = Body(tuple(remat) + body.stmts, body.result)
    for v in residuals:
        li.tape.push(li.lb, v)
    new = Let(li.let.pat, _loop_exp(e, li, li.let.exp.init[npar:npar + len(ctx.plan.types)]), li.let.loc)
    _replace(li.F, li.let, new)
    li.let = new
    pre = R.child()
    if index is not None:
        last = pre.emit("sub", li.count, 1, name="last")
        pre.let((index,), Prim("sub", (last, k)))
    bt = Tape(ctx.plan, dict(zip(ctx.plan.types, tprm)))
    for v in reversed(residuals):
        bt.pop_into(pre, v)
    body = substitute(body, start.rename(bt))
    body = Body(tuple(pre.stmts) + body.stmts, body.result)
    params = [pa[i] for i in act] + [fa[v] for v in fvs] + list(tprm)
    init = [pa_init[i] for i in act] + [fa_init[v] for v in fvs] + tape.atoms()
    res = R.for_loop(params, init, k, li.count, body, names=[p.name for p in params])
    ntypes = len(ctx.plan.types)
    if ntypes:
        tape.set(res[len(res) - ntypes:])
    for j, v in enumerate(fvs):
        adj.m[v] = res[len(act) + j]
    for j, i in enumerate(act):
        if isinstance(e.init[i], Var) and e.init[i] in ctx.varied:
            adj.add(e.init[i], res[j])
