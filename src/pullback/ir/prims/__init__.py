"""The primitive table: one `Row` per primitive.

Contract: a row holds everything pullback knows about a primitive:

- ``type(arg_types, **params) -> tuple[Type, ...]``: the type/shape rule; raises
  `ShapeError` on bad operands.
- ``impl(*values, **params)``: the NumPy evaluation (a tuple when ``multi``).
- ``jvp(b, args, tans, outs, **params) -> list``: tangent of each output, emitted
  through builder ``b``; a tangent is an atom or None (symbolic zero).
- ``vjp(b, args, outs, cts, need, **params) -> list``: cotangent of each
  argument (None for a symbolic zero); ``need[i]`` says whether argument i wants one.
- ``cost(arg_types, out_types, **params) -> int``: arithmetic operations.
- ``zero_deriv``: the derivative is zero everywhere it exists (comparisons,
  ``floor``, ``sign``, ...); such rows have no jvp/vjp.

Families (unary elementwise, binary broadcasting, ...) are made by factories in
the sibling modules. A missing rule raises `MissingRuleError` naming the row.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ...errors import MissingRuleError, ShapeError


@dataclass
class Row:
    name: str
    type: Callable
    impl: Callable
    jvp: Callable | None = None
    vjp: Callable | None = None
    cost: Callable | None = None
    zero_deriv: bool = False
    multi: bool = False
    doc: str = ""

    def rule(self, which: str) -> Callable:
        fn = getattr(self, which)
        if fn is None:
            raise MissingRuleError(
                f"primitive '{self.name}' has no {which} rule",
                hint=f"avoid '{self.name}' in code you differentiate, or add a {which} rule to its row in pullback/ir/prims",
            )
        return fn


class Table:
    def __init__(self):
        self.rows: dict[str, Row] = {}

    def add(self, row: Row) -> Row:
        assert row.name not in self.rows, row.name
        self.rows[row.name] = row
        return row

    def get(self, name: str) -> Row:
        try:
            return self.rows[name]
        except KeyError:
            raise MissingRuleError(f"unknown primitive '{name}'") from None

    def __contains__(self, name):
        return name in self.rows

    def __iter__(self):
        return iter(self.rows.values())


TABLE = Table()


def _hashable(v: Any):
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, tuple):
        return tuple(_hashable(x) for x in v)
    return v


def params_key(params: dict) -> tuple:
    return tuple(sorted((k, _hashable(v)) for k, v in params.items()))


def check(cond: bool, msg: str, hint: str | None = None) -> None:
    if not cond:
        raise ShapeError(msg, hint=hint)


from . import elementwise, reductions, shape, indexing, linalg, decomp, stores, special, callback, schedule, combine  # noqa: E402,F401  (registers rows)
