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
"""
from __future__ import annotations

from ..ir.core import ForForm, Loop, Prim, Var
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
