"""Forward static scalar reads through slices and concatenations:
`forward_index(prog) -> prog` (note [forward-index]).

Contract: a statement `v = index(x, c...)` that reads one element at constant
in-range coordinates, where `x` is (after following such definitions) a static
slice `index(y, ...)` (slices and constant integer indices) or a
`concatenate(..., axis)`, becomes a read of the same element of the array it
came from. The intermediate arrays are then dead when nothing else reads them,
and `ir.traverse.dce` drops them: no allocation per minor. Only definitions in
scope are followed (a body sees its own and its enclosing bodies'
statements); the IR is pure, so the rewrite keeps every value. A read that
would be out of range is left alone (it keeps its run-time error).

The numba backend runs it after `inline_small`: det by minors inlines its
2 x 2 case, whose reads of a concatenated minor then read the matrix itself.
"""
from __future__ import annotations

from ..ir.core import Const, Prim, Prog, Var
from ..ir.types import I64
from .peephole import rewrite_prims


def forward_index(prog: Prog) -> Prog:
    return rewrite_prims(prog, _rewrite)


def _const_int(a):
    return a.value if isinstance(a, Const) and not a.type.shape and a.type.dtype == "i64" else None


def _origin(x, coords: tuple, defs: dict):
    """(array, coords) of the element `x[coords]` after following static slices
    and concatenations, or None when nothing is to be followed."""
    moved = False
    while isinstance(x, Var) and x in defs:
        e = defs[x]
        if e.op == "index":
            spec, idx = e.p["spec"], e.args[1:]
            y = e.args[0]
            if len(spec) > len(y.type.shape):
                return None
            new, k, it = [], 0, iter(idx)
            for d, s in enumerate(spec):
                if s[0] == "d":
                    c = _const_int(next(it))
                    n = y.type.shape[d]
                    if c is None or not -n <= c < n:
                        return None
                    new.append(c % n)
                elif s[0] == "s":
                    _, start, _stop, step = s
                    new.append(start + coords[k] * step)
                    k += 1
                else:
                    return None
            new.extend(coords[k:])
            x, coords = y, tuple(new)
        elif e.op == "concatenate":
            axis = e.p["axis"]
            c = coords[axis]
            for part in e.args:
                n = part.type.shape[axis]
                if c < n:
                    break
                c -= n
            else:
                return None
            x, coords = part, coords[:axis] + (c,) + coords[axis + 1:]
        else:
            break
        moved = True
    return (x, coords) if moved else None


def _rewrite(e: Prim, defs: dict):
    """The read at the source of a constant scalar read of a slice or concatenation, or None."""
    if e.op != "index" or not isinstance(e.args[0], Var) or e.args[0] not in defs:
        return None
    x, spec, idx = e.args[0], e.p["spec"], e.args[1:]
    if len(spec) != len(x.type.shape) or any(s[0] != "d" for s in spec):
        return None
    coords = []
    for n, a in zip(x.type.shape, idx):
        c = _const_int(a)
        if c is None or not -n <= c < n:
            return None
        coords.append(c % n)
    found = _origin(x, tuple(coords), defs)
    if found is None:
        return None
    y, cs = found
    if not isinstance(y, Var) or len(cs) != len(y.type.shape):
        return None
    params = tuple((k, tuple(("d",) for _ in cs) if k == "spec" else v) for k, v in e.params)
    return Prim("index", (y,) + tuple(Const(int(c), I64) for c in cs), params)
