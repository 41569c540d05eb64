"""Zero gates for fused loops: skip the inner iterations of a fused loop nest
whose every contribution is an exact zero (note [zero-gate]).

Contract:
- `plan(group) -> Gate | None`. A gate is a fused statement `v =
  broadcast_to(a)`, or else an array operand `v` of a fused statement read by
  broadcasting (`w` of shape (n, m, 1) in a loop nest over (n, m, 3)), whose
  value depends only on the first `depth` loop indices (`depth` < the group's
  rank), such that every result of the group is exactly zero whenever `v` is
  zero: each accumulated `sum` adds such a value, and each materialised result
  is such a value (the emitter then allocates it with zeros, so a skipped
  element holds the zero it would have computed) or an in-place `acc + z` with
  `z` such a value (a skipped element keeps `acc`). `Gate.src` is the array
  whose element the emitter tests: `a` for a broadcast, `v` for an operand.
- "Exactly zero when v is zero" (`_zeros`) is proved statement by statement:
  `v` itself, a zero constant, negation, a float cast or a broadcast of one,
  sums and differences of two, a `where` of two, a product with a finite
  non-zero constant, and the strong product of a derivative rule
  (`where(isnan(a*d) & ((a == 0) | (d == 0)), 0, a*d)`, `ir.prims._util.smul`)
  with one such factor, and a mask `smask(y, a, d)` of such a `y`. A plain product is not one (`0 * inf` is NaN).
- A group with a run-time check in its loop (integer `//`, `%`, `**`) gets no
  gate: skipping must not skip an error.
- Cotangents are such gates: the adjoint of `min`/`max`, of a `where` or of
  an indexed read is zero in most places, and every adjoint contribution is a
  strong product with the cotangent, so the reverse sweep skips those places
  (k-means: the adjoint of the point-to-centroid distances is non-zero for one
  centroid per point).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.core import Const, Var
from ..passes.strong_mul import strong_guard


@dataclass(frozen=True)
class Gate:
    var: Var       # the fused broadcast_to result, or the operand, tested against zero
    depth: int     # the number of outer loops it depends on
    src: Var       # the array read (at the first `depth` indices) for its value


def _is_zero(a) -> bool:
    return isinstance(a, Const) and not a.type.shape and a.value == 0


def _finite_nonzero(a) -> bool:
    if not isinstance(a, Const) or a.type.shape:
        return False
    try:
        v = complex(a.value)
    except (TypeError, ValueError):
        return False
    return v != 0 and bool(np.isfinite(v))


def _gate_depth(a, shape: tuple) -> int | None:
    """The number of outer loop indices array `a` is read with, broadcast to `shape`."""
    xs = tuple(a.type.shape)
    off = len(shape) - len(xs)
    used = [off + j for j, d in enumerate(xs) if not (d == 1 and shape[off + j] != 1)]
    return max(used) + 1 if used else 0


def _zeros(g, gate: Var) -> set:
    """The fused results that are exactly zero whenever `gate` is zero."""
    defs = {st.pat[0]: st.exp for st in g.fused}
    z = {gate}

    def zero(a):
        return a in z or _is_zero(a)

    for st in g.fused:
        e, v = st.exp, st.pat[0]
        if v is gate or not v.type.is_float:
            continue
        op, args = e.op, e.args
        ok = False
        if op in ("neg", "broadcast_to", "sum") or (op == "cast" and args[0].type.is_float):
            ok = zero(args[0])
        elif op in ("add", "sub"):
            ok = all(zero(a) for a in args)
        elif op == "mul":
            ok = any(zero(a) and _finite_nonzero(b) for a, b in (args, args[::-1]))
        elif op == "smul":  # the strong product: zero when a factor is, whatever the other
            ok = any(zero(a) for a in args)
        elif op == "smask":  # y or 0
            ok = zero(args[0])
        elif op == "where":
            c, x, y = args
            if zero(x) and zero(y):
                ok = True
            elif _is_zero(x) and (ad := strong_guard(c, y, defs)) is not None:
                ok = any(zero(f) for f in ad)
        if ok:
            z.add(v)
    return z


def plan(g, inplace_acc) -> Gate | None:
    """The shallowest gate of fusion group `g`; `inplace_acc(st)` is the array a
    kept result is added into in place, or None."""
    if len(g.shape) < 2:
        return None
    for st in g.fused:
        if st.exp.op in ("floordiv", "mod", "pow") and not st.pat[0].type.is_float:
            return None
    cands = sorted(((_gate_depth(st.exp.args[0], g.shape), st.pat[0], st.exp.args[0]) for st in g.fused
                    if st.exp.op == "broadcast_to" and st.pat[0].type.is_float
                    and isinstance(st.exp.args[0], Var) and st.exp.args[0].type.shape),
                   key=lambda t: t[0])
    defs = {st.pat[0]: st.exp for st in g.fused}
    # then the operands read by broadcasting (after the broadcasts, so that a group
    # gated before keeps its gate): ht's tangent skinning, `smul(posed_tan, w)` with
    # the weights w read once per vertex and bone, zero for most bones
    operands = dict.fromkeys(a for st in g.fused for a in st.exp.args
                             if isinstance(a, Var) and a not in defs and a.type.shape and a.type.is_float)
    cands += sorted(((_gate_depth(a, g.shape), a, a) for a in operands), key=lambda t: t[0])
    for depth, var, src in cands:
        if depth >= len(g.shape):
            continue
        z = _zeros(g, var)
        ok = True
        for st in g.fused:
            v = st.pat[0]
            if st.exp.op == "sum":
                ok = st.exp.args[0] in z
            elif v in g.keep and v not in z:
                acc = inplace_acc(st)
                e = defs[v]
                ok = acc is not None and e.op == "add" and any(
                    a is acc and b in z for a, b in (e.args, e.args[::-1]))
            if not ok:
                break
        if ok:
            return Gate(var, depth, src)
    return None
