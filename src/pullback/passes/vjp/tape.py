"""The tape of split mode: residual stores threaded through derivative code.

Contract: a `SplitPlan` says which functions are reversed in split mode (the
recursive ones reachable from the entry and the functions that call them,
unless the strategy is `Joint`, and always those that take or pass stores), which
residual types the program's tape has, and which parameters each `f_bwd` takes
again from its caller. A `Tape` holds, for each residual type (in the plan's
order), the current store variable; `push`/`pop_into` emit a push or pop and
advance it, so the stores are used linearly. A type the plan does not know
yet raises `Retry`: the pass adds it and builds again (note [split-calls]).
"""
from __future__ import annotations

from ...ir import names
from ...ir.core import Prim
from ...ir.traverse import call_graph, reachable_funcs
from ...ir.types import StoreType


class Retry(Exception):
    """The plan grew (a new residual type): build the derivative again."""


class SplitPlan:
    def __init__(self, prog, entry: str, strategy, joint=frozenset()):
        self.strategy = strategy
        self.split: set[str] = store_passing_funcs(prog, entry)
        if strategy.split_calls:
            self.split |= callers_of_recursion(prog, entry)
        # a step machine's driver (whole-program checkpointing): joint, so its
        # loop is reversed by the checkpoint schedule, a step at a time; and the
        # functions of pb.checkpoint: recomputed, not taped (unless they pass stores)
        remat = {f.name for f in prog.funcs if f.rule("remat")} - store_passing_funcs(prog, entry)
        self.split -= set(joint) | remat
        self.types: list = []           # residual element types, in tape order
        self.needed: dict = {}          # fname -> sorted tuple of param indices f_bwd takes
        self.grew = False               # `needed` grew during this build

    def add_type(self, t) -> None:
        self.types.append(t)
        self.types.sort(key=str)

    def needs(self, fname: str) -> tuple:
        return self.needed.get(fname, ())

    def require(self, fname: str, idx) -> None:
        have = set(self.needs(fname))
        if not set(idx) <= have:
            self.needed[fname] = tuple(sorted(have | set(idx)))
            self.grew = True


def recursive_funcs(prog, entry: str) -> set[str]:
    """Functions reachable from `entry` that can call themselves (a call-graph cycle)."""
    graph = call_graph(prog)
    out = set()
    for f in reachable_funcs(prog, [entry]):
        if f in reachable_funcs(prog, graph.get(f, ())):
            out.add(f)
    return out


def callers_of_recursion(prog, entry: str) -> set[str]:
    """Functions reachable from `entry` that can reach a recursive function
    (themselves included): reversing them in split mode means no call on a path
    to a recursion is ever executed twice."""
    rec = recursive_funcs(prog, entry)
    return {f for f in reachable_funcs(prog, [entry]) if reachable_funcs(prog, [f]) & rec}


def store_passing_funcs(prog, entry: str) -> set[str]:
    """Functions reachable from `entry` that take stores or pass stores to a call
    (derivative code differentiated again). Stores are mutable, so such calls
    are never re-executed: they are always reversed in split mode."""
    from ...ir.core import Apply
    from ...ir.traverse import iter_lets

    out = set()
    for name in reachable_funcs(prog, [entry]):
        f = prog.func(name)
        if any(isinstance(p.type, StoreType) for p in f.params) or any(
                isinstance(st.exp, Apply) and any(isinstance(a.type, StoreType) for a in st.exp.args)
                for st in iter_lets(f.body)):
            out.add(name)
    return out


class Tape:
    def __init__(self, plan: SplitPlan, vars: dict):
        self.plan = plan
        self.vars = vars

    @classmethod
    def params(cls, plan, b) -> Tape:
        """Fresh variables for every residual store (function or loop parameters)."""
        return cls(plan, {t: b.fresh(names.tape(t), StoreType(t)) for t in plan.types})

    @classmethod
    def new(cls, plan, b) -> Tape:
        """Empty residual stores, made by `store_new`."""
        return cls(plan, {t: b.emit("store_new", elem=t, name=names.tape(t)) for t in plan.types})

    def copy(self) -> Tape:
        return Tape(self.plan, dict(self.vars))

    def atoms(self) -> list:
        return [self.vars[t] for t in self.plan.types]

    def fresh_like(self, b) -> list:
        return [b.fresh(self.vars[t].name, self.vars[t].type) for t in self.plan.types]

    def set(self, atoms) -> None:
        self.vars = dict(zip(self.plan.types, atoms))

    def rename(self, other: Tape) -> dict:
        """The substitution that makes code written against `self` continue from `other`."""
        return {self.vars[t]: other.vars[t] for t in self.plan.types}

    def push(self, b, v) -> None:
        t = v.type
        if t not in self.vars:
            self.plan.add_type(t)
            raise Retry
        s = self.vars[t]
        self.vars[t] = b.emit("store_push", s, v, name=s.name)

    def pop_into(self, b, v) -> None:
        """Pop the top of `v`'s store, binding `v` itself."""
        s = self.vars[v.type]
        s2 = b.fresh(s.name, s.type)
        b.let((s2, v), Prim("store_pop", (s,)))
        self.vars[v.type] = s2
