"""Clean-up of generated code: common-subexpression elimination and dead code.

Contract: `simplify_func(f) -> Func` returns an equivalent function. Scalar
primitives on constants are folded. CSE
reuses an earlier identical primitive application (same op, operands and
params) that is in scope; store primitives are effects and are never merged,
nor are fresh arrays (`full`), which are usually updated in place.
Then `ir.traverse.dce` drops statements nobody reads. The derivative passes
run it on the functions they create: re-executed forward sweeps otherwise
recompute values the surrounding code already has.
"""
from __future__ import annotations

import dataclasses

from ..ir.core import Body, Const, Func, Let, Prim, Var
from ..ir.prims import TABLE
from ..ir.traverse import dce, map_exp
from ..ir.types import TensorType

_EFFECTS = frozenset({"store_new", "store_push", "store_pop", "store_zeros_like", "store_copy"})


def cse_body(body: Body, avail: dict, m: dict, zeros: set | None = None) -> Body:
    avail = dict(avail)
    zeros = set() if zeros is None else zeros

    def atom(a):
        return m.get(a, a) if isinstance(a, Var) else a

    def scope(binders, b):
        return binders, cse_body(b, avail, m, zeros)

    stmts = []
    for st in body.stmts:
        e = map_exp(st.exp, atom, scope)
        z = _zero_rule(e, st.pat, zeros)
        if isinstance(z, Prim):
            e = z
        elif z is not None:
            m[st.pat[0]] = z
            continue
        folded = _fold(e, st.pat)
        if folded is not None:
            m[st.pat[0]] = folded
            continue
        if isinstance(e, Prim) and e.op == "full" and _is_zero(e.args[0], zeros):
            zeros.add(st.pat[0])
        if isinstance(e, Prim) and e.op not in _EFFECTS and len(st.pat) == 1 and not _fresh_array(e, st.pat[0]):
            key = (e.op, e.args, e.params)
            try:
                hit = avail.get(key)
            except TypeError:  # unhashable params
                hit, key = None, None
            if hit is not None and hit.type == st.pat[0].type:
                m[st.pat[0]] = hit
                continue
            if key is not None:
                avail[key] = st.pat[0]
        stmts.append(Let(st.pat, e, st.loc))
    return Body(tuple(stmts), tuple(atom(a) for a in body.result))


def _fresh_array(e, v) -> bool:
    """`full` of an array is never merged: each copy is usually updated in place
    (an accumulator), so sharing one makes all uses but the last copy it, and
    the readable output named one accumulator after another (`x_adj` printed
    as `y`)."""
    return e.op == "full" and bool(getattr(v.type, "shape", ()))


def _is_zero(a, zeros) -> bool:
    return (isinstance(a, Var) and a in zeros) or (isinstance(a, Const) and not a.type.shape and a.value == 0)


_SHAPE_OF_ZERO = frozenset({"index", "broadcast_to", "reshape", "transpose", "sum", "neg"})


def _zero_rule(e, pat, zeros):
    """Arithmetic on arrays known to be `full` zeros (note [const-args]): an atom
    the statement equals, a simpler Prim, or None. Only exact rules: `x + 0`,
    `x - 0`, `0 - x` and shape changes of zeros (never `x * 0`, which is NaN for
    an infinite x)."""
    if not (isinstance(e, Prim) and len(pat) == 1 and isinstance(pat[0].type, TensorType)):
        return None
    t = pat[0].type
    zero = lambda: Prim("full", (Const(0, TensorType(t.dtype)),), (("shape", tuple(t.shape)),))
    args = e.args
    if e.op in _SHAPE_OF_ZERO and args and isinstance(args[0], Var) and args[0] in zeros:
        return zero()
    if e.op in ("add", "sub") and len(args) == 2:
        x, y = args
        if isinstance(y, Var) and y in zeros:
            return _as_type(x, t)
        if isinstance(x, Var) and x in zeros:
            if e.op == "add":
                return _as_type(y, t)
            if y.type.dtype == t.dtype:
                return Prim("neg", (y,), ()) if tuple(y.type.shape) == tuple(t.shape) else None
    return None


def _as_type(x, t):
    """`x` itself if it has type `t`, its broadcast if only the shape differs, else None."""
    if x.type == t:
        return x
    if x.type.dtype == t.dtype:
        return Prim("broadcast_to", (x,), (("shape", tuple(t.shape)),))
    return None


def _identity(e, pat):
    """`x + 0`, `x - 0`, `x * 1`, `x / 1` -> `x` when the type does not change."""
    if not (isinstance(e, Prim) and e.op in ("add", "sub", "mul", "div") and len(pat) == 1):
        return None
    x, y = e.args
    unit = 1 if e.op in ("mul", "div") else 0
    for a, c in ((x, y), (y, x)) if e.op in ("add", "mul") else ((x, y),):
        if isinstance(c, Const) and c.type.shape == () and c.value == unit and a.type == pat[0].type:
            return a
    return None


def _fold(e, pat):
    """Constant folding of scalar primitives on constants (e.g. `n - 1` for a static n)."""
    ident = _identity(e, pat)
    if ident is not None:
        return ident
    if not (isinstance(e, Prim) and e.op not in _EFFECTS and len(pat) == 1 and pat[0].type.shape == ()
            and e.args and all(isinstance(a, Const) and a.type.shape == () for a in e.args)):
        return None
    row = TABLE.get(e.op)
    if row.multi:
        return None
    try:
        return Const(row.impl(*[a.value for a in e.args], **e.p), pat[0].type)
    except Exception:
        return None


def simplify_func(f: Func) -> Func:
    return dataclasses.replace(f, body=dce(cse_body(f.body, {}, {})))
