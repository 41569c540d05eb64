"""Sums of matrix products summed before the product: `sum_matmul(prog) -> prog`
(note [sum-matmul] in docs/design.md).

Contract: in every body, a statement ``s = sum(t, axes)`` (float) where ``t``
is ``matmul(A, B)`` of two 2-D operands, possibly under negations
(``t = neg(...neg(matmul(A, B)))``), each link of that chain defined in the
same body and read by nothing but the next link, becomes

- ``axes = (0,)``: ``s = matmul(sum(A, axes=(0,)), B)`` (the column sums of
  ``A @ B`` are the column sums of ``A`` times ``B``);
- ``axes = (1,)``: ``s = matmul(A, sum(B, axes=(1,)))``;
- ``axes = (0, 1)``: ``s = matmul(sum(A, axes=(0,)), sum(B, axes=(1,)))``;

negated again once per `neg` peeled off (``-`` commutes exactly with sums and
products). The new sum of an operand made in the same body is placed right
after the operand's statement, so that the numba backend fuses it into the
loop computing the operand (note [numba-fusion]). For ``A`` (n, k) and ``B`` (k, m) the product cost ``2nkm`` and its
sum ``nm``; now ``nk`` (or ``km``) additions and a vector-matrix product
``2km`` (``2nk``) do it, never more. The reverse sweep of ``(x - mu) @ W``
with ``mu`` a broadcast row differentiated and ``x`` not (gmm's components)
builds exactly this: the adjoint of the row is ``-sum(G @ W^T, axis=0)``.
Values differ from before by rounding only (the additions are reassociated),
and by overflow of the intermediate sums of ``A``'s columns or ``B``'s rows
where no product overflowed. The unread chain is then dropped (`dce`).
Statements are otherwise unchanged; the pass is pure. The numba backend runs
it (`numba_backend.lower`); the interpreter and pysource keep the reference
form.
"""
from __future__ import annotations

import dataclasses

from ..ir.builder import Builder
from ..ir.core import Body, Let, Prim, Prog, Var
from ..ir.names import NameSupply
from ..ir.traverse import all_names, dce, map_exp, use_counts
from ..ir.types import TensorType


def sum_matmul(prog: Prog) -> Prog:
    out, changed = [], False
    for f in prog.funcs:
        ctx = _Ctx(use_counts(f.body), NameSupply(all_names(f)))
        body = ctx.body(f.body)
        if body is not f.body:
            changed = True
            f = dataclasses.replace(f, body=dce(body))
        out.append(f)
    return prog.with_funcs(out) if changed else prog


class _Ctx:
    def __init__(self, uses, names: NameSupply):
        self.uses = uses
        self.names = names

    def body(self, body: Body) -> Body:
        defs: dict = {}   # var -> its defining Prim, statements of this body only
        at: dict = {}     # var -> the index in `stmts` of the statement binding it (this body)
        stmts: list = []
        after: dict = {}  # index in `stmts` -> statements to place right after it
        changed = False
        for st in body.stmts:
            e = st.exp
            if not isinstance(e, Prim):
                inner = [False]

                def scope(bs, b):
                    nb = self.body(b)
                    inner[0] |= nb is not b
                    return bs, nb

                e2 = map_exp(e, lambda a: a, scope)
                if inner[0]:
                    changed, st = True, Let(st.pat, e2, st.loc)
            else:
                new = self._rewrite(st, defs) if e.op == "sum" else None
                if new is not None:
                    changed = True
                    sums, rest = new
                    for s, operand in sums:   # next to the operand: fused with its loop
                        if isinstance(operand, Var) and operand in at:
                            after.setdefault(at[operand], []).append(s)
                        else:
                            stmts.append(s)
                    for s in rest:
                        at[s.pat[0]] = len(stmts)
                        stmts.append(s)
                    continue
                if len(st.pat) == 1:
                    defs[st.pat[0]] = e
            for v in st.pat:
                at[v] = len(stmts)
            stmts.append(st)
        if not changed:
            return body
        out = []
        for i, st in enumerate(stmts):
            out.append(st)
            out.extend(after.get(i, ()))
        return Body(tuple(out), body.result)

    def _only_use(self, v, defs, op):
        """The `op` Prim defining `v` in this body, when nothing else reads `v`."""
        e = defs.get(v) if isinstance(v, Var) else None
        if e is None or e.op != op or self.uses.get(v, 0) != 1:
            return None
        return e

    def _rewrite(self, st: Let, defs):
        out = st.pat[0]
        (t,) = st.exp.args
        if not (isinstance(out.type, TensorType) and out.type.is_float):
            return None
        negs = 0
        while (n := self._only_use(t, defs, "neg")) is not None:
            t, negs = n.args[0], negs + 1
        mm = self._only_use(t, defs, "matmul")
        if mm is None:
            return None
        a, b = mm.args
        if a.type.ndim != 2 or b.type.ndim != 2 or t.type.ndim != 2 or t.type.dtype != out.type.dtype:
            return None
        axes = tuple(sorted(int(x) for x in st.exp.p["axes"]))
        if axes not in ((0,), (1,), (0, 1)):
            return None
        bd = Builder(self.names, st.loc)
        sums = []
        if 0 in axes:
            a0, a = a, bd.sum(a, axes=(0,))
            sums.append((bd.stmts[-1], a0))
        if 1 in axes:
            b0, b = b, bd.sum(b, axes=(1,))
            sums.append((bd.stmts[-1], b0))
        r = bd.matmul(a, b)
        for _ in range(negs):
            r = bd.neg(r)
        if r.type != out.type:
            return None
        rest = bd.stmts[len(sums):]
        rest[-1] = Let((out,), rest[-1].exp, rest[-1].loc)
        return sums, rest
