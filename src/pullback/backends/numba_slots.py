"""Concatenations written straight into a later concatenation (note [concat-slots]).

Contract:
- `plan(body, uses)`: the concatenations of `body` whose result goes, whole and
  nowhere else, into a contiguous slot of a later concatenation of the same
  body (directly or through one reshape): id of the inner statement ->
  `Slot`. `uses`: the function's `ir.traverse.use_counts`. A pure function of
  the IR.
- `alloc(fe, dialect, st, depth)`: binds concatenation `st`'s result and prints
  its allocation. A planned inner concatenation is instead a view of its
  outer one's slot, allocating the outer one there if this is its first
  placed piece, and records the piece in `dialect.placed`; an outer one
  already allocated that way is not allocated again.
- `placed(dialect, st)`: the pieces of concatenation `st` already written in
  place (its copies skip them).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.core import Let, Prim, Var
from . import pysource as ps


@dataclass(frozen=True)
class Slot:
    outer: Let    # the concatenation the result goes into
    piece: Var    # its operand: the inner result, or the one reshape of it
    start: int    # the slot, in elements of the outer result in C order
    stop: int


def _concat(st) -> bool:
    return isinstance(st.exp, Prim) and st.exp.op == "concatenate" and len(st.pat) == 1


def plan(body, uses) -> dict:
    defs = {st.pat[0]: st for st in body.stmts if isinstance(st.exp, Prim) and len(st.pat) == 1}
    out = {}
    for st in body.stmts:
        if not _concat(st):
            continue
        e, t = st.exp, st.pat[0].type
        axis = int(e.p["axis"])
        shape = [int(d) for d in t.shape]
        if int(np.prod(shape[:axis])) != 1:   # a piece's slot is contiguous only after unit axes
            continue
        inner, off = int(np.prod(shape[axis + 1:])), 0
        for x in e.args:
            n = int(x.type.shape[axis])
            if isinstance(x, Var) and e.args.count(x) == 1 and uses[x] == 1 and x in defs:
                src = defs[x]
                if src.exp.op == "reshape" and isinstance(src.exp.args[0], Var) and uses[src.exp.args[0]] == 1:
                    src = defs.get(src.exp.args[0], src)
                if (_concat(src) and src is not st and src.pat[0].type.dtype == t.dtype
                        and uses[src.pat[0]] == 1 and all(int(d) for d in src.pat[0].type.shape)):
                    out[id(src)] = Slot(st, x, off * inner, (off + n) * inner)
            off += n
    return out


def alloc(fe, dialect, st: Let, depth: int) -> str:
    v = st.pat[0]
    if v in dialect.placed:   # allocated already, where its first placed piece was
        return fe.py[v]
    slot = dialect.slots.get(id(st))
    if slot is not None and slot.outer.pat[0] not in fe.prefer:   # a preferred name may be live here
        c = slot.outer.pat[0]
        cname = alloc(fe, dialect, slot.outer, depth)   # itself a view, if it is placed in turn
        dialect.placed.setdefault(c, set()).add(slot.piece)
        name = fe.bind(v)
        flat = cname if len(c.type.shape) == 1 else f"{cname}.reshape(-1)"
        fe.line(depth, f"{name} = {flat}[{slot.start}:{slot.stop}].reshape({ps._shape_lit(v.type.shape)})"
                "  # pb:concatenate, in place (note [concat-slots])")
        return name
    name = fe.bind(v)
    fe.line(depth, f"{name} = np.empty({ps._shape_lit(v.type.shape)}, dtype={ps._NP_DTYPE[v.type.dtype]})"
            "  # pb:concatenate")
    return name


def placed(dialect, st: Let) -> set:
    return dialect.placed.get(st.pat[0], set())
