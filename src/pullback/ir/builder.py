"""Builder: emits `Let` statements, inferring result types from the prim table.

Contract: a `Builder` accumulates statements for one body. Sub-bodies (branches,
loop bodies) are built with `b.sub()`, which shares the name supply. Derivative
rules in the primitive table emit code only through a builder.
"""
from __future__ import annotations

from .core import Apply, Atom, Body, Const, ForForm, If, Let, Loop, Prim, SrcLoc, Var, WhileForm
from .names import NameSupply
from .types import TensorType, Type


class Builder:
    def __init__(self, supply: NameSupply | None = None, loc: SrcLoc | None = None):
        self.supply = supply or NameSupply()
        self.stmts: list[Let] = []
        self.loc = loc
        self.parent: Builder | None = None

    def child(self) -> "Builder":
        """A builder for a nested body (branch, loop body) sharing the name supply;
        `parent` is this builder (analyses read the enclosing definitions)."""
        c = Builder(self.supply, self.loc)
        c.parent = self
        return c

    def sub(self, *args, **kw):
        """The `sub` primitive; with no arguments, `child()` (kept for convenience)."""
        if not args:
            return self.child()
        return self.emit("sub", *args, **kw)

    def fresh(self, hint: str, type: Type) -> Var:
        return Var(self.supply.fresh(hint), type)

    def let(self, pat, exp, loc=None) -> None:
        self.stmts.append(Let(tuple(pat), exp, loc or self.loc))

    def body(self, result) -> Body:
        return Body(tuple(self.stmts), tuple(result))

    # -- primitives -------------------------------------------------------
    def emit_multi(self, op: str, *args: Atom, name: str = "t", **params) -> tuple[Var, ...]:
        from .prims import TABLE, params_key

        row = TABLE.get(op)
        args = tuple(self.atom(a) for a in args)
        ptup = params_key(params)
        out_types = row.type([a.type for a in args], **params)
        outs = tuple(self.fresh(name, t) for t in out_types)
        self.let(outs, Prim(op, args, ptup))
        return outs

    def emit(self, op: str, *args: Atom, name: str = "t", **params) -> Var:
        (out,) = self.emit_multi(op, *args, name=name, **params)
        return out

    def __getattr__(self, op):
        # b.add(x, y), b.sin(x), b.sum(x, axes=(0,)), ...
        if op.startswith("_"):
            raise AttributeError(op)
        from .prims import TABLE

        if op.rstrip("_") in TABLE.rows:
            return lambda *a, **k: self.emit(op.rstrip("_"), *a, **k)
        raise AttributeError(op)

    # -- atoms ------------------------------------------------------------
    def atom(self, x) -> Atom:
        if isinstance(x, (Var, Const)):
            return x
        if isinstance(x, bool):
            return Const(x, TensorType("bool"))
        if isinstance(x, int):
            return Const(x, TensorType("i64"))
        if isinstance(x, float):
            return Const(x, TensorType("f64"))
        raise TypeError(f"not an atom: {x!r}")

    def const(self, value, dtype: str = "f64") -> Const:
        return Const(value, TensorType(dtype))

    def zeros(self, type: TensorType, name: str = "zeros") -> Var:
        return self.emit("full", Const(0, TensorType(type.dtype)), shape=type.shape, name=name)

    def zeros_like(self, t: Type, name: str = "zeros"):
        from .types import StoreType

        if isinstance(t, StoreType):
            return self.emit("store_new", elem=t.elem, name=name)
        return self.zeros(t, name)

    # -- control flow -----------------------------------------------------
    def if_(self, cond: Atom, then: Body, else_: Body, names=None) -> tuple[Var, ...]:
        names = names or ["t"] * len(then.result)
        outs = tuple(self.fresh(n, a.type) for n, a in zip(names, then.result))
        self.let(outs, If(self.atom(cond), then, else_))
        return outs

    def for_loop(self, params, init, index: Var, bound: Atom, body: Body, names=None,
                 sums=frozenset()) -> tuple[Var, ...]:
        names = names or [p.name for p in params]
        outs = tuple(self.fresh(n, p.type) for n, p in zip(names, params))
        self.let(outs, Loop(tuple(params), tuple(self.atom(a) for a in init), ForForm(index, self.atom(bound)), body,
                            frozenset(sums)))
        return outs

    def while_loop(self, params, init, cond: Var, body: Body, names=None) -> tuple[Var, ...]:
        names = names or [p.name for p in params]
        outs = tuple(self.fresh(n, p.type) for n, p in zip(names, params))
        self.let(outs, Loop(tuple(params), tuple(self.atom(a) for a in init), WhileForm(cond), body))
        return outs

    def apply(self, func: str, args, ret_types, names=None) -> tuple[Var, ...]:
        names = names or ["r"] * len(ret_types)
        outs = tuple(self.fresh(n, t) for n, t in zip(names, ret_types))
        self.let(outs, Apply(func, tuple(self.atom(a) for a in args)))
        return outs
