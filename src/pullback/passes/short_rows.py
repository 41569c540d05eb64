"""Short rows read across: `transpose_short_rows(prog) -> prog` (note [short-rows]).

Contract: a matrix X of shape (n, k), k short (2 <= k <= `SHORT`) and n long
(n >= `LONG`), defined outside a loop and read in the loop's body only by a
chain of elementwise primitives (results of X's shape, read by nothing but
the chain) that ends in reductions over the short axis (`sum`, `min` or
`max` with axes (1,)), is read in the loop through a column-major copy:
before the loop, `XT = reshape(transpose(X))` (k, n) and `XF = transpose(XT)`,
and the loop body reads XF where it read X. The numba backend prints the
copy as a contiguous (k, n) array and XF as its `.T`, a view whose layout
numba knows to be column-major: the fused loop over a row's k elements then
reads across the n rows with unit stride, and LLVM vectorises the loop over
rows (each lane one row, its k terms added in the same order), where rows of
k contiguous elements kept it scalar. Values are unchanged: every element is
computed by the same primitives from the same operands, in the same order.
Only the numba backend runs it (the last of `numba_backend.lower`'s passes);
the interpreter and pysource print the program as staged.
"""
from __future__ import annotations

import dataclasses

from ..ir.core import Body, ForForm, Let, Loop, Prim, Prog, Var
from ..ir.names import NameSupply
from ..ir.traverse import all_names, free_vars, map_exp, rewrite_bodies, substitute
from ..ir.types import TensorType
from .layout import _ELEMENTWISE

SHORT = 16     # at most this many elements per row: a row's sum is a short dependent chain
LONG = 64      # at least this many rows: enough to vectorise across them

_REDUCE = frozenset({"sum", "min", "max"})


def transpose_short_rows(prog: Prog) -> Prog:
    return rewrite_bodies(prog, lambda f: _body(f.body, NameSupply(all_names(f))))


def _body(body: Body, names: NameSupply) -> Body:
    """`body` with its loops (at any depth) reading their short-row operands across."""
    out, changed = [], False
    for st in body.stmts:
        e = map_exp(st.exp, lambda a: a, lambda bs, b: (bs, _body(b, names)))
        if isinstance(e, Loop):
            sub = {}
            for x in sorted(_operands(e), key=lambda v: v.name):
                n, k = x.type.shape
                tt = dataclasses.replace(x.type, shape=(k, n))
                t, xt, xf = (Var(names.fresh(x.name + s), ty) for s, ty in (("_tr", tt), ("_t", tt), ("_f", x.type)))
                out += [Let((t,), Prim("transpose", (x,), (("perm", (1, 0)),)), st.loc),
                        Let((xt,), Prim("reshape", (t,), (("shape", (k, n)),)), st.loc),
                        Let((xf,), Prim("transpose", (xt,), (("perm", (1, 0)),)), st.loc)]
                sub[x] = xf
            if sub:
                e = dataclasses.replace(e, body=substitute(e.body, sub))
        if e is not st.exp:
            changed = True
            st = Let(st.pat, e, st.loc)
        out.append(st)
    return Body(tuple(out), body.result) if changed else body


def _short(t) -> bool:
    return (isinstance(t, TensorType) and len(t.shape) == 2 and all(isinstance(d, int) for d in t.shape)
            and 2 <= t.shape[1] <= SHORT and t.shape[0] >= LONG)


def _operands(lp: Loop) -> list:
    """The matrices defined outside `lp` that its body reads only as rows reduced across."""
    body = lp.body
    bound = set(lp.params) | ({lp.form.index} if isinstance(lp.form, ForForm) else set())
    cands = {v for st in body.stmts if isinstance(st.exp, Prim) for v in st.exp.args
             if isinstance(v, Var) and v not in bound and _short(v.type)}
    defined = {v for st in body.stmts for v in st.pat}
    return [x for x in cands if x not in defined and _read_across(body, x)]


def _read_across(body: Body, x: Var) -> bool:
    """Is `x` read in `body` only by elementwise primitives of its shape, whose results are
    read the same way, the chain ending in reductions over axis 1 (at least one)?"""
    shape = tuple(x.type.shape)
    chain, reduced = {x}, False
    for st in body.stmts:
        e = st.exp
        if not isinstance(e, Prim):
            if free_vars(e) & chain:
                return False
            continue
        if not any(isinstance(a, Var) and a in chain for a in e.args):
            continue
        if e.op in _ELEMENTWISE and len(st.pat) == 1 and tuple(getattr(st.pat[0].type, "shape", ())) == shape:
            chain.add(st.pat[0])
        elif e.op in _REDUCE and len(e.args) == 1 and tuple(e.p["axes"]) in ((1,), (-1,)):
            reduced = True
        else:
            return False
    return reduced and not any(isinstance(a, Var) and a in chain for a in body.result)
