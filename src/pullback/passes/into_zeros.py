"""Additions into a fresh zero array are writes: `set_into_zeros(prog) -> prog`
(note [into-zeros]).

Contract: `u = index_update(z, v, i..., mode="add")` where `z = full(c)` is
bound in the same body, `c` is +0 (a float fill exactly +0.0, not -0.0, or an
integer 0), `z` is read by nothing else, and `v`, `z` and `u` share a dtype
(f64, f32 or i64), becomes the same update with `mode="set"`. A basic index
(`spec`) selects each element at most once, so every element of the region
gets exactly one value: `0 + v` before, `v` after. Exact for integers; for
floats it can change only the sign of a zero (`+0 + -0` is +0, the write
keeps -0), the caveat of note [accumulate]'s rewrite 2 and note
[symbolic-zeros]. The numba backend runs it after `accumulate` (whose chains
into zero arrays it must not break first), so that `backends/numba_fill.py`
can leave the written region of `z` unfilled: reverse mode's adjoint of a
slice, `index_update(zeros, v, region, add)`, costs a fill of the whole
array and a read-add-write of the region, where a fill of the rest and a
write of the region do.
"""
from __future__ import annotations

from ..ir.core import Body, Let, Prim, Prog
from ..ir.prims import params_key
from ..ir.traverse import exp_scopes, map_exp, rewrite_bodies, use_counts
from .accumulate import _is_pos_zero

_DTYPES = ("f64", "f32", "i64")


def set_into_zeros(prog: Prog) -> Prog:
    return rewrite_bodies(prog, lambda f: _body(f.body, use_counts(f.body)))


def _zero_fill(e) -> bool:
    """Is `e` a `full` of +0 (note [accumulate]'s test of a zero base)?"""
    return isinstance(e, Prim) and e.op == "full" and _is_pos_zero(e.args[0])


def _body(body: Body, uses) -> Body:
    zeros: set = set()   # zero fills bound in this body
    stmts, changed = [], False
    for st in body.stmts:
        e = st.exp
        if isinstance(e, Prim) and len(st.pat) == 1 and _zero_fill(e):
            zeros.add(st.pat[0])
        elif (isinstance(e, Prim) and e.op == "index_update" and e.p["mode"] == "add"
              and e.args[0] in zeros and uses[e.args[0]] == 1
              and st.pat[0].type.dtype in _DTYPES
              and e.args[0].type.dtype == e.args[1].type.dtype == st.pat[0].type.dtype):
            p = dict(e.p)
            p["mode"] = "set"
            e = Prim(e.op, e.args, params_key(p))
        elif not isinstance(e, Prim):
            e2 = map_exp(e, lambda a: a, lambda bs, b: (bs, _body(b, uses)))
            e = e if all(x is y for (_, x), (_, y) in zip(exp_scopes(e), exp_scopes(e2))) else e2
        changed = changed or e is not st.exp
        stmts.append(st if e is st.exp else Let(st.pat, e, st.loc))
    return Body(tuple(stmts), body.result) if changed else body
