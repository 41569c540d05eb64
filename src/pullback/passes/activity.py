"""Activity analysis (Tapenade): which variables vary with the inputs.

Contract: `mark_body(body, varied, deps=None)` adds to the set `varied` every
variable bound in `body` (nested bodies included) whose value depends on a
variable already in `varied`. Only differentiable values (float tensors, float
stores) are marked. It is idempotent, so passes may call it on re-executed
copies. A statement none of whose inputs vary gets no derivative code.

A call's results vary with any varied argument, unless `deps` (a `CallDeps`
of the program) says which parameters each result of the callee depends on:
then a result varies only with the varied arguments it depends on
(interprocedural activity, note [call-activity]).

`useful_in_loop(e, seeded, varied, deps)` is the other half of Tapenade's
activity, for a loop's return sweep: which loop parameters and free variables
may get a non-zero adjoint, given the indices `seeded` of the loop's results
that have one. A parameter that only reaches comparisons, or whose value
nothing differentiable reads after the loop, gets none.
"""
from __future__ import annotations

from ..ir.core import Apply, If, Loop, Map, Prim, Var
from ..ir.traverse import free_vars
from ._common import differentiable

MAX_SUMMARY_PARAMS = 32   # a callee with more differentiable parameters gets no summary (every result varies)


class CallDeps:
    """`deps(fname)`: for each result of the function `fname` of `prog`, the
    indices of the parameters it depends on (a tuple of frozensets), or None
    when unknown (a call inside a recursive cycle being summarised, or too
    many parameters, or user-given derivative rules): every result then
    depends on every argument. Memoised;
    one per program (note [call-activity])."""

    def __init__(self, prog):
        self.prog = prog
        self.memo: dict = {}
        self.open: set = set()

    def __call__(self, fname: str):
        if fname in self.memo:
            return self.memo[fname]
        if fname in self.open:
            return None
        f = self.prog.func(fname)
        ps = [i for i, p in enumerate(f.params) if differentiable(p.type)]
        if len(ps) > MAX_SUMMARY_PARAMS or f.rules:   # (a user's rule need not follow the body's data flow)
            self.memo[fname] = None
            return None
        self.open.add(fname)
        try:
            deps = [set() for _ in f.body.result]
            for i in ps:
                varied = {f.params[i]}
                mark_body(f.body, varied, self)
                for j, r in enumerate(f.body.result):
                    if isinstance(r, Var) and r in varied:
                        deps[j].add(i)
        finally:
            self.open.discard(fname)
        out = tuple(frozenset(d) for d in deps)
        self.memo[fname] = out
        return out


def _any_varied(atoms, varied) -> bool:
    return any(isinstance(a, Var) and a in varied for a in atoms)


def mark_body(body, varied: set, deps: CallDeps | None = None) -> None:
    for st in body.stmts:
        mark_stmt(st, varied, deps)


def mark_stmt(st, varied: set, deps: CallDeps | None = None) -> None:
    e = st.exp
    summary = deps(e.func) if deps is not None and isinstance(e, Apply) else None
    if summary is not None:
        for v, d in zip(st.pat, summary):
            if differentiable(v.type) and _any_varied([e.args[i] for i in d], varied):
                varied.add(v)
    elif isinstance(e, (Prim, Apply)):
        if _any_varied(e.args, varied):
            varied.update(v for v in st.pat if differentiable(v.type))
    elif isinstance(e, If):
        mark_body(e.then, varied, deps)
        mark_body(e.else_, varied, deps)
        for v, a, c in zip(st.pat, e.then.result, e.else_.result):
            if differentiable(v.type) and _any_varied((a, c), varied):
                varied.add(v)
    elif isinstance(e, Loop):
        for p, a in zip(e.params, e.init):
            if differentiable(p.type) and _any_varied((a,), varied):
                varied.add(p)
        while True:
            mark_body(e.body, varied, deps)
            grew = False
            for p, r in zip(e.params, e.body.result):
                if differentiable(p.type) and p not in varied and _any_varied((r,), varied):
                    varied.add(p)
                    grew = True
            if not grew:
                break
        for v, p in zip(st.pat, e.params):
            if p in varied:
                varied.add(v)
    elif isinstance(e, Map):
        for p, a in zip(e.elems + e.acc_params, tuple(e.arrays) + tuple(e.accs)):
            if differentiable(p.type) and _any_varied((a,), varied):
                varied.add(p)
        k = e.n_out
        while True:
            mark_body(e.lam.body, varied, deps)
            grew = False
            for p, r in zip(e.acc_params, e.lam.body.result[k:]):
                if differentiable(p.type) and p not in varied and _any_varied((r,), varied):
                    varied.add(p)
                    grew = True
            if not grew:
                break
        for v, r in zip(st.pat, e.lam.body.result):
            if differentiable(v.type) and _any_varied((r,), varied):
                varied.add(v)
    else:
        raise TypeError(type(e).__name__)


def useful_in_loop(e: Loop, seeded, varied: set, deps: CallDeps | None = None) -> tuple[set, set]:
    """(indices of the varied loop parameters, varied free variables of the body)
    whose adjoint may be non-zero in the return sweep of loop `e` when the results
    of indices `seeded` have adjoints (module docstring). A fixpoint over the
    iterations: a parameter is useful when a useful statement of the body reads it,
    or the body returns it as the next value of a useful parameter."""
    def ok(v):
        return isinstance(v, Var) and v in varied and differentiable(v.type)

    idx = {k for k in seeded if ok(e.params[k])}
    while True:
        use = {e.body.result[k] for k in idx if isinstance(e.body.result[k], Var)}
        _useful_body(e.body, use, varied, deps)
        new = idx | {k for k, p in enumerate(e.params) if p in use and ok(p)}
        if new == idx:
            break
        idx = new
    bound = set(e.params) | ({e.form.index} if hasattr(e.form, "index") else set())
    return idx, {v for v in free_vars(e.body) - bound if v in use and ok(v)}


def _useful_body(body, use: set, varied: set, deps) -> None:
    """Add to `use` the variables of `body` (and free in it) whose adjoint a use of
    the variables already in `use` may make non-zero, walking backwards."""
    for st in reversed(body.stmts):
        outs = [k for k, v in enumerate(st.pat) if v in use and differentiable(v.type)]
        if not outs:
            continue
        e = st.exp
        if isinstance(e, Prim):
            use.update(a for a in e.args if isinstance(a, Var) and a in varied)
        elif isinstance(e, Apply):
            summary = deps(e.func) if deps is not None else None
            if summary is None:
                use.update(a for a in e.args if isinstance(a, Var) and a in varied)
            else:
                use.update(e.args[i] for k in outs for i in summary[k]
                           if isinstance(e.args[i], Var) and e.args[i] in varied)
        elif isinstance(e, If):
            for br in (e.then, e.else_):
                use.update(br.result[k] for k in outs if isinstance(br.result[k], Var))
                _useful_body(br, use, varied, deps)
        else:   # a nested loop or map: everything it reads (conservative)
            atoms = [a for a in (list(getattr(e, "init", ())) + list(getattr(e, "arrays", ()))
                                 + list(getattr(e, "accs", ()))) if isinstance(a, Var)]
            use.update(v for v in atoms + list(free_vars(e)) if v in varied)
