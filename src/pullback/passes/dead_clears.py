"""Drop clears that no later iteration reads: `dead_clears(prog) -> prog`
(note [dead-clears]).

Contract: in a `for` loop with a constant trip count, and an index
`i = +-k + c` (k the loop index, c an integer constant) that names a different
slice in every iteration (all in range on one side of zero: no wrap-around),
a loop-carried array that the body reads only at slice i and then sets to
zero at slice i (`index(X, i)` ..., `X' = index_update(X, 0, i, set)`, X'
yielded for X), and whose value after the loop is not read, keeps its old
contents instead of being cleared: every iteration reads a slice no earlier
iteration cleared, so every value read is the same, and the cleared array is
never observed. The return sweep of a loop that fills an array slice by slice
(`D[:, j] = ...`) is this shape: its adjoint reads each slice's cotangent once
and clears it. The numba backend runs the pass before printing.
"""
from __future__ import annotations

import dataclasses

from ..ir.core import Body, Const, ForForm, Let, Loop, Prim, Prog, Var
from ..ir.traverse import dce, map_exp, substitute, use_counts
from ..ir.types import TensorType


def dead_clears(prog: Prog) -> Prog:
    out, changed = [], False
    for f in prog.funcs:
        uses = use_counts(f.body)
        body = _body(f.body, uses)
        if body is not f.body:
            changed = True
            f = dataclasses.replace(f, body=dce(body))
        out.append(f)
    return prog.with_funcs(out) if changed else prog


def _body(body: Body, uses) -> Body:
    stmts, changed = [], False
    for st in body.stmts:
        e = st.exp
        if isinstance(e, Loop) and isinstance(e.form, ForForm):
            e2 = _loop(st, e, uses)
        else:
            e2 = e
        e2 = map_exp(e2, lambda a: a, lambda bs, b: (bs, _body(b, uses)))
        changed = changed or e2 is not e
        stmts.append(st if e2 is e else Let(st.pat, e2, st.loc))
    return Body(tuple(stmts), body.result) if changed else body


def _affine(body: Body, k: Var) -> dict:
    """{v: (s, o)} for the variables of `body` equal to s * k + o, s = +-1."""
    out = {k: (1, 0)}
    for st in body.stmts:
        e = st.exp
        if not (isinstance(e, Prim) and len(st.pat) == 1 and e.op in ("add", "sub") and len(e.args) == 2):
            continue
        a, b = e.args
        ca = a.value if isinstance(a, Const) and not a.type.shape and a.type.dtype == "i64" else None
        cb = b.value if isinstance(b, Const) and not b.type.shape and b.type.dtype == "i64" else None
        if cb is not None and a in out:
            s, o = out[a]
            out[st.pat[0]] = (s, o + int(cb) if e.op == "add" else o - int(cb))
        elif ca is not None and b in out:
            s, o = out[b]
            out[st.pat[0]] = (s, int(ca) + o) if e.op == "add" else (-s, int(ca) - o)
    return out


def _distinct_slices(lp: Loop, aff: dict, i, spec, shape) -> bool:
    """Does index i name a different slice in every iteration (no wrap-around)?"""
    n = lp.form.bound
    if i not in aff or not (isinstance(n, Const) and not n.type.shape) or int(n.value) <= 0:
        return False
    dims = [d for d, sp in enumerate(spec) if sp[0] == "d"]
    if len(dims) != 1:
        return False
    size = int(shape[dims[0]])
    s, o = aff[i]
    ends = (o, s * (int(n.value) - 1) + o)
    lo, hi = min(ends), max(ends)
    return 0 <= lo and hi < size or -size <= lo and hi < 0


def _is_zero(a) -> bool:
    return isinstance(a, Const) and not a.type.shape and a.value == 0


def _loop(st: Let, lp: Loop, uses) -> Loop:
    body = lp.body
    aff = _affine(body, lp.form.index)
    drop: dict = {}   # cleared value -> the value before the clear
    for pos, c in enumerate(lp.params):
        if uses[st.pat[pos]] or not (isinstance(c.type, TensorType) and c.type.shape):
            continue
        clear = None
        for s in body.stmts:
            e = s.exp
            if not any(isinstance(a, Var) and a is c for a in _atoms(e)):
                continue
            if (isinstance(e, Prim) and e.op == "index" and e.args[0] is c and clear is None
                    and len(e.args) == 2):
                continue
            if (isinstance(e, Prim) and e.op == "index_update" and e.args[0] is c and clear is None
                    and e.p["mode"] == "set" and _is_zero(e.args[1]) and len(e.args) == 3
                    and _distinct_slices(lp, aff, e.args[2], e.p["spec"], c.type.shape)):
                clear = s
                continue
            clear = None
            break
        else:
            if (clear is not None and body.result[pos] is clear.pat[0] and uses[clear.pat[0]] == 1
                    and _same_slices(body, c, clear)):
                drop[clear.pat[0]] = c
    if not drop:
        return lp
    stmts = tuple(s for s in body.stmts if not (len(s.pat) == 1 and s.pat[0] in drop))
    return dataclasses.replace(lp, body=substitute(Body(stmts, body.result), drop))


def _atoms(e) -> list:
    from ..ir.traverse import exp_atoms, free_vars

    return list(exp_atoms(e)) if isinstance(e, Prim) else list(free_vars(e))


def _same_slices(body: Body, c: Var, clear: Let) -> bool:
    """Every read of c is at the cleared slice (same spec, same index)."""
    return all(e.p["spec"] == clear.exp.p["spec"] and e.args[1] is clear.exp.args[2]
               for e in (s.exp for s in body.stmts)
               if isinstance(e, Prim) and e.op == "index" and e.args and e.args[0] is c)
