"""Forward mode: `jvp_prog(prog, fname) -> (prog', "f_jvp")`.

Contract: ``f_jvp(params..., t_p for each float param p) -> (results...,
t_r for each float result r)``. Calls inside the program use specialisations
by activity: a callee called with arguments whose tangents are symbolic zeros
gets a variant ``g_jvp(params..., t_p for each float param p with a nonzero
tangent)``, so an argument that is not differentiated is never materialised
as a zero array and multiplied through (issue 13). Each primal statement is kept and followed by
its tangent statements (Tapenade's tangent mode); ifs and loops carry tangents
alongside their primal values; a call of ``g`` becomes a call of ``g_jvp``.
Tangents are symbolic zeros (None) until something makes them nonzero, so code
that does not depend on the inputs gets no tangent code; a call's result that
depends on no argument with a tangent (`activity.CallDeps`, note
[call-activity]) keeps a zero one. Functions reached by
calls are differentiated on demand (recursion included). A function with a
user-given jvp rule (`Func.rules`, `pb.custom_jvp`) is not differentiated: its
jvp is the rule function; one with only a vjp rule (`pb.custom_vjp`) is a
located error, as in JAX (note [custom-rules]).
"""
from __future__ import annotations

from ..errors import PullbackError
from ..ir import names
from ..ir.builder import Builder
from ..ir.core import Apply, Body, Const, Func, If, Lambda, Let, Loop, Map, Prim, Prog, Var
from ..ir.names import NameSupply
from ..ir.prims import TABLE
from ._common import DerivedNames, differentiable, run_rule, zero_of
from .activity import CallDeps


def jvp_prog(prog: Prog, fname: str | None = None, fresh=None, active: tuple | None = None) -> tuple[Prog, str]:
    """`fresh(hint) -> name`, if given, names the derived functions. `active`
    (one bool per float parameter of `fname`; None: all) gives the derived
    function tangent parameters for the active ones only: the others are zero."""
    t = _JVP(prog, fresh)
    if active is not None and all(active):
        active = None
    name = t.func(fname or prog.entry, active)
    from .simplify import simplify_func

    out = prog.with_funcs(list(prog.funcs) + [simplify_func(f) for f in t.new_funcs])
    _maybe_check(out)
    return out, name


def _maybe_check(prog):
    from ..ir import typecheck

    typecheck.maybe_check(prog, "jvp")


def _user_name(f) -> str:
    """The user's name of a staged function (`f_3` -> `f`)."""
    import re

    return re.sub(r"_\d+$", "", f.name)


class _JVP:
    def __init__(self, prog: Prog, fresh=None):
        self.prog = prog
        self.names = DerivedNames(prog, names.jvp_func, fresh)
        self.new_funcs: list[Func] = []
        self.deps = CallDeps(prog)   # which results of each callee depend on which parameters (note [call-activity])

    def func(self, name: str, active: tuple | None = None) -> str:
        """The jvp of `name`; `active` (one bool per float parameter, None: all)
        picks the parameters that take a tangent, the others' being zero."""
        f = self.prog.func(name)
        if f.rules and not f.rule("remat"):  # pb.checkpoint: the body is differentiated as usual
            rule = f.rule("jvp")
            if rule is None:
                raise PullbackError(
                    f"'{_user_name(f)}' has a custom_vjp rule and no jvp rule, so forward mode (pb.jvp, jacfwd, "
                    "hessian) cannot differentiate it", loc=None,
                    hint="define it with pb.custom_jvp (its rule serves both modes), or use reverse mode "
                         "(pb.grad, pb.vjp, jacobian(mode='rev'))")
            return rule
        new, build = self.names.get(name, active)
        if not build:
            return new
        from ..ir.traverse import all_names

        b = Builder(NameSupply(all_names(f)))
        tmap: dict[Var, object] = {}
        tparams = []
        flags = iter(active) if active is not None else None
        for p in f.params:
            if differentiable(p.type) and (flags is None or next(flags)):
                tp = b.fresh(names.tangent(p.name), p.type)
                tparams.append(tp)
                tmap[p] = tp
        res, tans = self.body(b, f.body, tmap)
        out_tans = [t if t is not None else zero_of(b, r, names.tangent(getattr(r, "name", "r")))
                    for r, t in zip(res, tans) if differentiable(r.type)]
        ret = tuple(f.ret_types) + tuple(r.type for r in res if differentiable(r.type))
        self.new_funcs.append(Func(new, f.params + tuple(tparams), b.body(list(res) + out_tans), ret, f.loc))
        return new

    # -- bodies ---------------------------------------------------------------
    def body(self, b: Builder, body: Body, tmap) -> tuple[list, list]:
        for st in body.stmts:
            self.stmt(b, st, tmap)
        return list(body.result), [self.tan(a, tmap) for a in body.result]

    @staticmethod
    def tan(a, tmap):
        return None if isinstance(a, Const) else tmap.get(a)

    def stmt(self, b: Builder, st: Let, tmap) -> None:
        e = st.exp
        b.loc = st.loc
        if isinstance(e, Prim):
            b.stmts.append(st)
            tans = [self.tan(a, tmap) for a in e.args]
            row = TABLE.get(e.op)
            if all(t is None for t in tans) or row.zero_deriv or not any(differentiable(v.type) for v in st.pat):
                return
            try:
                rule = row.rule("jvp")
            except PullbackError as err:
                raise err.with_loc(st.loc) from None
            outs = run_rule(b, rule, [names.tangent(v.name) for v in st.pat],
                            e.args, tans, st.pat, **e.p)
            for v, t in zip(st.pat, outs):
                if t is not None and differentiable(v.type):
                    tmap[v] = t
        elif isinstance(e, Apply):
            self.apply(b, st, tmap)
        elif isinstance(e, If):
            self.if_(b, st, tmap)
        elif isinstance(e, Loop):
            self.loop(b, st, tmap)
        elif isinstance(e, Map):
            self.map(b, st, tmap)
        else:
            raise TypeError(type(e).__name__)

    def apply(self, b, st, tmap):
        e = st.exp
        callee = self.prog.func(e.func)
        tans = [self.tan(a, tmap) for a in e.args]
        # a result that depends on no argument with a tangent has a zero one (note [call-activity])
        summary = self.deps(e.func)
        live = [summary is None or any(tans[i] is not None for i in d) for d in (summary or [()] * len(st.pat))]
        if all(t is None for t in tans) or not any(lv and differentiable(v.type) for lv, v in zip(live, st.pat)):
            b.stmts.append(st)
            return
        fl = [t for p, t in zip(callee.params, tans) if differentiable(p.type)]
        active = tuple(t is not None for t in fl)
        if all(active) or (callee.rules and not callee.rule("remat")):
            active = None   # the plain jvp (a user's rule has the full contract)
        try:
            jname = self.func(e.func, active)
        except PullbackError as err:
            raise err.with_loc(st.loc) from None
        targs = [t if t is not None else zero_of(b, a, names.tangent(getattr(a, "name", "c")))
                 for a, p, t in zip(e.args, callee.params, tans)
                 if differentiable(p.type) and (active is None or t is not None)]
        touts = [b.fresh(names.tangent(v.name), v.type) for v in st.pat if differentiable(v.type)]
        b.let(tuple(st.pat) + tuple(touts), Apply(jname, tuple(e.args) + tuple(targs)), st.loc)
        it = iter(touts)
        for v, lv in zip(st.pat, live):
            if differentiable(v.type):
                t = next(it)
                if lv:
                    tmap[v] = t

    def if_(self, b, st, tmap):
        e = st.exp
        branches = []
        for br in (e.then, e.else_):
            sb = b.child()
            inner = dict(tmap)
            res, tans = self.body(sb, br, inner)
            branches.append((sb, res, tans))
        active = [any(br[2][k] is not None for br in branches) and differentiable(v.type)
                  for k, v in enumerate(st.pat)]
        bodies = []
        for sb, res, tans in branches:
            extra = [tans[k] if tans[k] is not None else zero_of(sb, res[k]) for k in range(len(res)) if active[k]]
            bodies.append(sb.body(list(res) + extra))
        touts = [b.fresh(names.tangent(v.name), v.type) for k, v in enumerate(st.pat) if active[k]]
        b.let(tuple(st.pat) + tuple(touts), If(e.cond, bodies[0], bodies[1]), st.loc)
        it = iter(touts)
        for k, v in enumerate(st.pat):
            if active[k]:
                tmap[v] = next(it)

    def loop(self, b, st, tmap):
        e = st.exp
        init_t = [self.tan(a, tmap) for a in e.init]
        active = [t is not None and differentiable(p.type) for p, t in zip(e.params, init_t)]
        while True:  # fixpoint: which params carry a nonzero tangent
            sb = b.child()
            inner = dict(tmap)
            tparams = {}
            for p, act in zip(e.params, active):
                if act:
                    tparams[p] = sb.fresh(names.tangent(p.name), p.type)
                    inner[p] = tparams[p]
            res, tans = self.body(sb, e.body, inner)
            grown = [a or (t is not None and differentiable(p.type)) for a, t, p in zip(active, tans, e.params)]
            if grown == active:
                break
            active = grown
        extra = [tans[k] if tans[k] is not None else zero_of(sb, res[k]) for k in range(len(res)) if active[k]]
        body = sb.body(list(res) + extra)
        inits = [init_t[k] if init_t[k] is not None else zero_of(b, e.init[k]) for k in range(len(e.init)) if active[k]]
        new_params = tuple(e.params) + tuple(tparams[p] for p, a in zip(e.params, active) if a)
        touts = [b.fresh(names.tangent(v.name), v.type) for k, v in enumerate(st.pat) if active[k]]
        b.let(tuple(st.pat) + tuple(touts), Loop(new_params, tuple(e.init) + tuple(inits), e.form, body), st.loc)
        it = iter(touts)
        for k, v in enumerate(st.pat):
            if active[k]:
                tmap[v] = next(it)

    def map(self, b, st, tmap):
        """The tangent of a map is a map of the lambda's tangent: tangents of the
        mapped arrays are mapped too, free variables' tangents are read as free
        variables, and accumulators' tangents are accumulators (note [combinators])."""
        e = st.exp
        k = e.n_out
        arr_t = [self.tan(a, tmap) if differentiable(p.type) else None for a, p in zip(e.arrays, e.elems)]
        acc_t = [self.tan(a, tmap) for a in e.accs]
        active = [t is not None and differentiable(p.type) for p, t in zip(e.acc_params, acc_t)]
        while True:  # fixpoint: which accumulators carry a nonzero tangent
            sb = b.child()
            inner = dict(tmap)
            etp, atp = [], []
            for p, t in zip(e.elems, arr_t):
                if t is not None:
                    etp.append(sb.fresh(names.tangent(p.name), p.type))
                    inner[p] = etp[-1]
            for p, act in zip(e.acc_params, active):
                if act:
                    atp.append(sb.fresh(names.tangent(p.name), p.type))
                    inner[p] = atp[-1]
            res, tans = self.body(sb, e.lam.body, inner)
            grown = [a or (t is not None and differentiable(p.type))
                     for a, t, p in zip(active, tans[k:], e.acc_params)]
            if grown == active:
                break
            active = grown
        out_act = [tans[j] is not None and differentiable(st.pat[j].type) for j in range(k)]
        out_tans = [tans[j] for j in range(k) if out_act[j]]
        acc_tans = [tans[k + m] if tans[k + m] is not None else zero_of(sb, res[k + m])
                    for m in range(len(e.accs)) if active[m]]
        body = sb.body(list(res[:k]) + out_tans + list(res[k:]) + acc_tans)
        acc_init = [acc_t[m] if acc_t[m] is not None else zero_of(b, e.accs[m])
                    for m in range(len(e.accs)) if active[m]]
        lam = Lambda((e.index,) + tuple(e.elems) + tuple(etp) + tuple(e.acc_params) + tuple(atp), body)
        arrays = tuple(e.arrays) + tuple(t for t in arr_t if t is not None)
        t_outs = [b.fresh(names.tangent(st.pat[j].name), st.pat[j].type) for j in range(k) if out_act[j]]
        t_accs = [b.fresh(names.tangent(st.pat[k + m].name), st.pat[k + m].type)
                  for m in range(len(e.accs)) if active[m]]
        pat = tuple(st.pat[:k]) + tuple(t_outs) + tuple(st.pat[k:]) + tuple(t_accs)
        b.let(pat, Map(e.width, arrays, tuple(e.accs) + tuple(acc_init), lam), st.loc)
        it = iter(t_outs)
        for j in range(k):
            if out_act[j]:
                tmap[st.pat[j]] = next(it)
        it = iter(t_accs)
        for m in range(len(e.accs)):
            if active[m]:
                tmap[st.pat[k + m]] = next(it)
