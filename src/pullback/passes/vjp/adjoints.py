"""Adjoint environments with symbolic zeros.

Contract: an `Adjoints` maps primal variables to adjoint atoms. A variable
that is absent has a symbolic zero adjoint, which costs nothing; contributions
are summed as they arrive (`add`), and a zero is materialised only where a
value is required (`get_or_zero`).
"""
from __future__ import annotations

from ...errors import MissingRuleError
from ...ir import names
from ...ir.core import Var
from ...ir.types import StoreType
from .._common import differentiable, zero_of


class Adjoints:
    def __init__(self, b, varied):
        self.b = b
        self.varied = varied
        self.m: dict[Var, object] = {}

    def get(self, v):
        return self.m.get(v) if isinstance(v, Var) else None

    def get_or_zero(self, v, b=None):
        a = self.get(v)
        return a if a is not None else zero_of(b or self.b, v, names.adjoint(v.name))

    def add(self, v, ct) -> None:
        if ct is None or not isinstance(v, Var) or not differentiable(v.type):
            return
        old = self.m.get(v)
        if old is None:
            self.m[v] = ct
            return
        if isinstance(v.type, StoreType):
            raise MissingRuleError(f"store '{v.name}' is used more than once; stores must be used linearly")
        self.m[v] = self.b.emit("add", old, ct, name=names.adjoint(v.name))
