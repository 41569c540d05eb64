"""Helpers shared by the derivative passes."""
from __future__ import annotations

from ..ir.core import Let, Prim, Var
from ..ir.types import StoreType


def differentiable(t) -> bool:
    """Values that carry tangents/adjoints: float tensors and stores of floats."""
    return t.is_float


def zero_of(b, primal, name="zeros"):
    """Materialise a symbolic zero with the type of `primal` (an atom)."""
    t = primal.type
    if isinstance(t, StoreType):
        return b.emit("store_zeros_like", primal, name=name)
    return b.zeros(t, name=name)


def run_rule(b, rule, out_names, *args, **params):
    """Call a derivative rule and give the atoms it returns readable names.

    `out_names[k]` names the k-th returned atom when the rule created it; a
    returned Var bound by this rule is renamed in the statements the rule
    emitted (rules emit only flat `Prim` statements).
    """
    start = len(b.stmts)
    res = rule(b, *args, **params)
    new = b.stmts[start:]
    bound = {v for st in new for v in st.pat}
    ren: dict[Var, Var] = {}
    for r, nm in zip(res, out_names):
        if isinstance(r, Var) and r in bound and r not in ren and nm:
            ren[r] = Var(b.supply.fresh(nm), r.type)
    if ren:
        b.stmts[start:] = [_subst_let(st, ren) for st in new]
        res = [ren.get(r, r) if isinstance(r, Var) else r for r in res]
    return list(res)


def _subst_let(st: Let, m) -> Let:
    e = st.exp
    assert isinstance(e, Prim)
    args = tuple(m.get(a, a) if isinstance(a, Var) else a for a in e.args)
    pat = tuple(m.get(v, v) for v in st.pat)
    return Let(pat, Prim(e.op, args, e.params), st.loc)


class DerivedNames:
    """Names of the functions a derivative pass creates, one per source function.

    `fresh(hint) -> name`, when given (the frontend's supply), also knows the
    functions still being staged; otherwise names avoid the program's own.
    """

    def __init__(self, prog, suffix_fn, fresh=None):
        self.suffix_fn = suffix_fn
        self.fresh = fresh
        self.taken = {f.name for f in prog.funcs}
        self.done: dict[str, str] = {}

    def name(self, name: str) -> str:
        """The derived name of `name`, made on first request."""
        new, _ = self.get(name)
        return new

    def get(self, name: str, variant=None):
        """(derived name, True if it was just made and must be built now). A
        `variant` (hashable; None: the plain one) names another derived function
        of the same source function (forward mode's per-activity specialisations)."""
        key = name if variant is None else (name, variant)
        if key in self.done:
            return self.done[key], False
        new = self.suffix_fn(name)
        if self.fresh is not None:
            new = self.fresh(new)
        while new in self.taken:
            new += "_"
        self.taken.add(new)
        self.done[key] = new
        return new, True
