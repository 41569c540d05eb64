"""The regions that a fused loop's stores write (note [numba-fusion], "stores"):
index text, and the facts the fusion planner asks about them.

Contract:
- `region_index`, `store_target`, `broadcast_index`: the index text of an
  element an `index_update` (or a concatenation) writes, or of a broadcast
  operand, at a loop position.
- `concat_pieces`, `copy_pieces`: the pieces of a concatenation a group's
  loop writes itself, and the loop nests copying the others.
- `views(before, x)`, `views_read(before, st, reads)`: the views of an array
  made by earlier statements, and whether a group reads one (then the loop may
  not write that array).
- `disjoint(a, b)`, `same_region(a, b)`: conservative answers (False when not
  shown) to whether two updates of arrays of one shape write no common
  element, or the same element at each region position.
Pure functions of the IR; nothing here emits a statement but `copy_pieces`.
"""
from __future__ import annotations

from ..ir.core import Const, Let, Prim, Var
from ..ir.prims.indexing import regions_disjoint


def region_index(fe, st: Let, js: list[str]) -> str:
    """Index text of the element of `index_update` st's array that region
    position `js` (one loop index per region axis) updates."""
    e: Prim = st.exp
    x, spec = e.args[0], e.p["spec"]
    target, it, jt = [], iter(e.args[2:]), iter(js)
    for d, sp in zip(x.type.shape, tuple(spec) + (("s", None, None, None),) * (len(x.type.shape) - len(spec))):
        if sp[0] == "d":
            i = next(it)
            target.append(f"int({fe.a(i)})" if i.type.dtype == "bool" else fe.a(i))
        elif sp[0] == "ds":  # a dynamic slice x[i:i+k] (its start checked by emit_checks)
            target.append(f"{fe.a(next(it))} + {next(jt)}")
        else:
            r = range(*slice(sp[1], sp[2], sp[3]).indices(int(d)))
            j = next(jt)
            term = j if r.step == 1 else f"{r.step} * {j}"
            target.append(term if r.start == 0 else f"{r.start} + {term}")
    return ", ".join(target)


def views_read(before, st: Let, reads: set) -> set:
    """{x} if the group reads a view of `index_update` st's array x made in this
    body (writing x from the loop would change what the group reads), else {}."""
    x = st.exp.args[0] if isinstance(st.exp, Prim) and st.exp.args else None
    return {x} if views(before, x) & reads else set()


def views(before, x) -> set:
    """The views of array x made by the statements `before` (x excluded)."""
    from .pysource.ownership import _aliasing_args

    out = {x}
    for b in before:
        if isinstance(b.exp, Prim) and any(a in out for a in _aliasing_args(b.exp)):
            out.update(b.pat)
    return out - {x}


def same_region(a: Let, b: Let) -> bool:
    """Do `index_update`s a and b write the same element at each region position?"""
    ea, eb = a.exp, b.exp
    return (tuple(ea.args[0].type.shape) == tuple(eb.args[0].type.shape) and ea.p["spec"] == eb.p["spec"]
            and len(ea.args) == len(eb.args) and all(_same_atom(p, q) for p, q in zip(ea.args[2:], eb.args[2:])))


def _same_atom(p, q) -> bool:
    if isinstance(p, Const) and isinstance(q, Const):
        return p.type == q.type and not p.type.shape and p.value == q.value
    return isinstance(p, Var) and p == q


def disjoint(a: Let, b: Let) -> bool:
    """Do `index_update`s a and b (of arrays of one shape) write disjoint regions?
    (`ir.prims.indexing.regions_disjoint`.)"""
    shape = tuple(a.exp.args[0].type.shape)
    if tuple(b.exp.args[0].type.shape) != shape:
        return False
    return regions_disjoint(shape, a.exp.p["spec"], a.exp.args[2:], b.exp.p["spec"], b.exp.args[2:])


def concat_pieces(g, st: Let, used_after: set) -> dict:
    """The pieces of `concatenate` st that group g's loop writes into the
    result itself: elementwise results of g with the group's shape, used once
    there and nowhere after -> their offset along the axis."""
    e: Prim = st.exp
    axis = int(e.p["axis"])
    mine = {f.pat[0] for f in g.fused if f.exp.op != "sum" and tuple(f.pat[0].type.shape) == tuple(g.shape)}
    out, off = {}, 0
    for a in e.args:
        if a in mine and e.args.count(a) == 1 and a not in used_after and a.type.dtype == st.pat[0].type.dtype:
            out[a] = off
        off += int(a.type.shape[axis])
    return out


def store_target(fe, st: Let, name: str, js: list[str], off=None) -> str:
    """Text of the element an update or concatenation `st` writes at region
    position `js`, with its operator: ``x[i, 1 + j] +=``. `off`: a concatenation's
    offset of the piece along its axis."""
    e: Prim = st.exp
    if e.op == "concatenate":
        axis = int(e.p["axis"])
        ix = [j if (d != axis or not off) else str(off) if j == "0" else f"{off} + {j}" for d, j in enumerate(js)]
        return f"{name}[{', '.join(ix)}] ="
    return f"{name}[{region_index(fe, st, js)}] {'=' if e.p['mode'] == 'set' else '+='}"


def broadcast_index(x, shape: tuple, idx: list[str]) -> str:
    """Index text of array `x` (broadcast to `shape`) at loop position `idx`."""
    xs = tuple(x.type.shape)
    off = len(shape) - len(xs)
    return ", ".join("0" if (d == 1 and shape[off + j] != 1) else idx[off + j] for j, d in enumerate(xs))


def copy_pieces(fe, st: Let, done: set, depth: int) -> None:
    """Loop nests copying the pieces of concatenation st not in `done` into its
    result (numba's slice assignment is slow to compile). Along an axis after
    the first, every piece has the result's leading extents, so one loop nest
    over those axes copies all the pieces: one pass over the result, not one
    per piece (a stack of many columns wrote every cache line of the result
    once per column; note [compile-time], "Concatenations")."""
    e: Prim = st.exp
    axis, name, off = int(e.p["axis"]), fe.py[st.pat[0]], 0
    pieces = []   # (operand text, its offset along the axis)
    for a in e.args:
        if a not in done and all(int(n) for n in a.type.shape):
            src = fe.a(a)
            if isinstance(a, Const):
                src = fe.fresh("c")
                fe.line(depth, f"{src} = {fe.a(a)}")
            pieces.append((a, src, off))
        off += int(a.type.shape[axis])
    if not pieces:
        return
    lead = [fe.fresh(f"j{d}") for d in range(axis)]
    for d, j in enumerate(lead):
        fe.line(depth + d, f"for {j} in range({int(pieces[0][0].type.shape[d])}):")
    for a, src, off in pieces:
        js, inner = list(lead), depth + axis
        for d in range(axis, len(a.type.shape)):   # an axis of extent 1 is index 0, not a loop
            js.append("0" if int(a.type.shape[d]) == 1 else fe.fresh(f"j{d}"))
            if js[-1] != "0":
                fe.line(inner, f"for {js[-1]} in range({int(a.type.shape[d])}):")
                inner += 1
        fe.line(inner, f"{store_target(fe, st, name, js, off)} {src}[{', '.join(js)}]  # pb:concatenate")
