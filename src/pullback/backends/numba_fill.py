"""Fills nobody sees, for the numba dialect: `unobserved_fills(prog) -> set[Var]`
(note [unobserved-fills]).

Contract: the result v of a `full` statement is in the set when v is read by
nothing but one `for` loop, as the initial value of a carried array X, and the
loop overwrites all of X before anything can read it: the trip count is
constant and equals X's number of rows; the body uses X only as the array of
one top-level `index_update(X, w, r)` with mode `set` of a whole row, where
`r = +-k + c` (k the loop index, c a constant) names a different in-range row
in every iteration (so the loop sets every row exactly once); and the updated
array is used only as the value yielded for X. The dialect allocates such an
array with `np.empty`: every element is written before any is read, so
no value changes. Everything else keeps its fill.

`partial_fills(prog) -> dict[Var, tuple[range, ...]]` (note [into-zeros]): the
result v of a `full` statement maps to a box, one interval (a step-1 range)
per axis, when v is read by nothing but one `index_update(v, w, i..., set)`
whose region is that box, known statically (static slices of step +-1,
constant in-range indices), and the box is the whole array, or at least half
of it and `PARTIAL_MIN` elements. The update writes every element of the box, so
only the rest of v is ever read: `emit_partial` allocates v with `np.empty`
and fills the elements outside the box, in at most two loop nests per axis.
"""
from __future__ import annotations

import numpy as np

from ..ir.core import ForForm, Loop, Prim, Var
from ..ir.prims.indexing import static_ranges
from ..ir.traverse import exp_scopes, iter_lets, use_counts
from ..ir.types import TensorType
from ..passes.dead_clears import _affine, _distinct_slices
from ..passes.sink_rows import _full_row


def unobserved_fills(prog) -> set:
    out: set = set()
    for f in prog.funcs:
        uses = use_counts(f.body)
        fills = {st.pat[0] for st in iter_lets(f.body)
                 if isinstance(st.exp, Prim) and st.exp.op == "full" and len(st.pat) == 1
                 and isinstance(st.pat[0].type, TensorType) and st.pat[0].type.shape}
        if not fills:
            continue
        for st in iter_lets(f.body):
            e = st.exp
            if isinstance(e, Loop) and isinstance(e.form, ForForm):
                out.update(x0 for c, x0, y in zip(e.params, e.init, e.body.result)
                           if x0 in fills and uses[x0] == 1 and _sets_every_row(e, c, y))
    return out


def _sets_every_row(lp: Loop, c: Var, y) -> bool:
    body, n = lp.body, lp.form.bound
    inner = use_counts(body)
    if inner[c] != 1 or not isinstance(y, Var) or inner[y] != 1 or not c.type.shape:
        return False
    st = next((s for s in body.stmts if y in s.pat), None)
    if st is None or not (isinstance(st.exp, Prim) and st.exp.op == "index_update" and len(st.exp.args) == 3):
        return False
    e = st.exp
    shape = tuple(c.type.shape)
    return (e.args[0] is c and e.p["mode"] == "set" and _full_row(e.p["spec"], shape)
            and not any(y in s.pat for _, b in exp_scopes(e) for s in b.stmts)
            and getattr(n, "value", None) == shape[0]
            and _distinct_slices(lp, _affine(body, lp.form.index), e.args[2], e.p["spec"], shape))


# a box left unfilled saves a fill of its elements, and costs loop nests for the rest where a
# whole fill is one memset: worth it from this many elements, and half the array, up
PARTIAL_MIN = 256


def partial_fills(prog) -> dict:
    out: dict = {}
    for f in prog.funcs:
        uses = use_counts(f.body)
        fills = {st.pat[0] for st in iter_lets(f.body)
                 if isinstance(st.exp, Prim) and st.exp.op == "full" and len(st.pat) == 1
                 and isinstance(st.pat[0].type, TensorType) and st.pat[0].type.shape}
        for st in iter_lets(f.body) if fills else ():
            e = st.exp
            if not (isinstance(e, Prim) and e.op == "index_update" and e.p["mode"] == "set"):
                continue
            z = e.args[0]
            if z not in fills or uses[z] != 1:
                continue
            shape = tuple(int(n) for n in z.type.shape)
            box = _box(static_ranges(e.p["spec"], e.args[2:], shape))
            if box is None:
                continue
            inside, total = int(np.prod([len(r) for r in box])), int(np.prod(shape))
            if inside == total or (2 * inside >= total and inside >= PARTIAL_MIN):
                out[z] = box
    return out


def _box(ranges):
    """Each axis's range as a step-1 range, or None when one is not static or has gaps."""
    out = []
    for r in ranges:
        if r is None or (len(r) > 1 and abs(r.step) != 1):
            return None
        out.append(range(min(r), max(r) + 1) if len(r) else range(0))
    return tuple(out)


def emit_partial(fe, st, box, dtype_text: str, value: str, depth: int) -> None:
    """`v = np.empty(shape)`, then `value` written outside `box`: for each axis a, the
    elements inside the box along the axes before a and before or after it along a."""
    shape = tuple(int(n) for n in st.pat[0].type.shape)
    name = fe.bind(st.pat[0])
    fe.line(depth, f"{name} = np.empty({shape!r}, dtype={dtype_text})")
    if any(len(r) == 0 for r in box):
        box = (range(0),) + tuple(range(n) for n in shape[1:])   # nothing inside: fill it all
    for a, n in enumerate(shape):
        r = box[a]
        for lo, hi in ((0, r.start if len(r) else n), (r.stop if len(r) else n, n)):
            if lo >= hi:
                continue
            extents = [(b.start, b.stop) for b in box[:a]] + [(lo, hi)] + [(0, m) for m in shape[a + 1:]]
            js, inner = [], depth
            for b0, b1 in extents:
                if b1 - b0 == 1:
                    js.append(str(b0))
                    continue
                js.append(fe.fresh(f"j{len(js)}"))
                fe.line(inner, f"for {js[-1]} in range({b0}, {b1}):")
                inner += 1
            fe.line(inner, f"{name}[{', '.join(js)}] = {value}")
        if not len(r):
            break
