"""Fold guarded products into the `smul` primitive: `strong_mul(prog) -> prog`
(note [strong-mul]).

Contract: a statement `w = where(c, 0, r)` with `r = mul(a, d)` and
`c = isnan(r) & ((a == 0) | (d == 0))` (either order of each operand: the
form `ir.prims._util.smul` emits for every product in a derivative rule)
becomes `w = smul(a, d)`, the same value by definition of `smul`; the guard's
statements are then dropped by `ir.traverse.dce` where nothing else reads
them. Only float64 results are folded. Any other value masked by such a
guard, `w = where(c, 0, y)` (the tangent or cotangent of a strong product,
from `where`'s and `smul`'s derivative rules), becomes `w = smask(y, a, d)`
when `a` and `d` are float64 and the mask is no wider than `y` (note
[strong-mul], "Masks"). The numba backend runs it just before
printing: the guard is six statements per product, most of the derivative
code numba has to type and lower, and one scalar expression in a fused loop.
"""
from __future__ import annotations

import numpy as np

from ..ir.core import Const, Prim, Prog, Var
from .peephole import rewrite_prims


def strong_guard(c, r, defs) -> tuple | None:
    """(a, d) if `c` is `isnan(r) & ((a == 0) | (d == 0))` with `r = a * d`;
    `defs` maps a variable to its defining `Prim`."""
    def get(a):  # constants (arrays are not hashable) have no definition
        return defs.get(a) if isinstance(a, Var) else None

    rd, cd = get(r), get(c)
    if rd is None or cd is None or rd.op != "mul" or cd.op != "and":
        return None
    a, d = rd.args
    p, q = cd.args
    pd = get(p)
    if pd is None or pd.op != "isnan" or pd.args[0] != r:
        p, q = q, p
    pd, qd = get(p), get(q)
    if pd is None or pd.op != "isnan" or pd.args[0] != r or qd is None or qd.op != "or":
        return None
    eqs = []
    for e in qd.args:
        ed = get(e)
        if ed is None or ed.op != "eq" or not _is_zero(ed.args[1]):
            return None
        eqs.append(ed.args[0])
    return (a, d) if set(eqs) == {a, d} else None


def _is_zero(a) -> bool:
    return isinstance(a, Const) and not a.type.shape and a.value == 0


def strong_mul(prog: Prog) -> Prog:
    return rewrite_prims(prog, _fold)


def _fold(e: Prim, defs: dict):
    """`smul(a, d)` for a guarded product `where(c, 0, r)`, `smask(y, a, d)` for
    another value `where(c, 0, y)` masked by the guard of a product, or None."""
    if not (e.op == "where" and _is_zero(e.args[1]) and isinstance(e.args[2], Var)
            and e.args[2].type.dtype == "f64"):
        return None
    c, y = e.args[0], e.args[2]
    ad = strong_guard(c, _product_of(c, defs), defs)
    if ad is None:
        return None
    yd = defs.get(y)
    if yd is not None and yd.op == "mul" and tuple(yd.args) == ad:
        return Prim("smul", ad)
    a, d = ad
    shapes = [tuple(v.type.shape) for v in (y, a, d)]
    if not (a.type.dtype == d.type.dtype == "f64") or np.broadcast_shapes(*shapes) != shapes[0]:
        return None   # a mask wider than y stays a `where` (it broadcasts y)
    return Prim("smask", (y, a, d))


def _product_of(c, defs):
    """The product `r` whose NaN the guard `c` (an `and` of `isnan(r)` and an `or`) tests, or None."""
    cd = defs.get(c) if isinstance(c, Var) else None
    if cd is None or cd.op != "and":
        return None
    for p in cd.args:
        pd = defs.get(p) if isinstance(p, Var) else None
        if pd is not None and pd.op == "isnan":
            return pd.args[0]
    return None
