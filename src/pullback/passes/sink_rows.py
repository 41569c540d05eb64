"""Compute a loop's rows of an elementwise array in the loop: `sink_rows(prog) -> prog`
(note [sink-rows]).

Contract: in a `for` loop with a constant trip count, take an array X that the
body reads exactly once, as a whole row `index(X, r)` at the top level of the
body, where `r = +-k + c` (k the loop index, c a constant) names a different
row in range in every iteration (no wrap-around); X is either a loop-carried
array that the body passes on unchanged (it yields X itself) and whose value
after the loop is unused, or a value of the enclosing body that nothing else
reads. When X's value x0 (its initial value) is computed in the enclosing body
by an elementwise primitive (or a broadcast) that nothing else reads, the read
becomes x0's row computed in the body. The row is computed
from the rows of x0's operands: operands computed elementwise in the
enclosing body by cheap primitives (`_CHEAP`: no transcendental function) are
recomputed the same way (unless such an operand is computed anyway, because
a value outside the row's statements needs it, and its row costs fewer bytes
to store and read than its operands' rows: then it is read, `_read_instead`),
broadcast operands give their row (or themselves), and anything else is read
at row r. x0 and the recomputed values are then not
materialised for the loop (dce drops what nothing else reads). Each element of
the row is computed by the same primitive from the same operands, so values
are unchanged, and every iteration computes one distinct row: the work is at
most what computing the arrays once took. The numba backend runs it after the
layout pass (which makes kmeans' adjoint a row-read matrix); the interpreter
and pysource print the program as staged.
"""
from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np

from ..ir.core import Body, Const, ForForm, Let, Loop, Prim, Prog, Var
from ..ir.names import NameSupply
from ..ir.traverse import all_names, dce, free_vars, map_exp, use_counts
from ..ir.types import TensorType, np_dtype
from .dead_clears import _affine, _distinct_slices
from .layout import _ELEMENTWISE

# recomputed when an operand of the sunk value is one (no transcendental: a
# value also used elsewhere is then computed twice, at most)
_CHEAP = frozenset({"add", "sub", "mul", "div", "neg", "abs", "sign", "maximum", "minimum", "eq", "ne", "lt",
                    "le", "gt", "ge", "and", "or", "not", "isnan", "where", "cast", "floor", "ceil", "smul"})

_I0 = Const(0, TensorType("i64", ()))


def sink_rows(prog: Prog) -> Prog:
    out, changed = [], False
    for f in prog.funcs:
        live = dce(f.body)   # uses by dead statements would count as needs (`_read_instead`)
        s = _Sink(NameSupply(all_names(f)), use_counts(live))
        body = s.body(live)
        if s.changed:
            changed = True
            f = dataclasses.replace(f, body=dce(body))
        out.append(f)
    return prog.with_funcs(out) if changed else prog


def _item(a) -> int:
    return np.dtype(np_dtype(a.type.dtype)).itemsize


def _row_spec(shape) -> tuple:
    return (("d",),) + tuple(("s", 0, int(d), 1) for d in shape[1:])


def _full_row(spec, shape) -> bool:
    """`X[r]`: one dynamic index on the first axis, whole slices on the others."""
    if not spec or spec[0] != ("d",) or len(spec) > len(shape):
        return False
    return all(sp[0] == "s" and range(*slice(sp[1], sp[2], sp[3]).indices(int(d))) == range(int(d))
               for sp, d in zip(spec[1:], shape[1:]))


class _Sink:
    def __init__(self, names: NameSupply, uses):
        self.names, self.uses, self.changed = names, uses, False

    def body(self, body: Body) -> Body:
        defs: dict = {}   # var -> its defining Prim in this body
        stmts = []
        for st in body.stmts:
            e = map_exp(st.exp, lambda a: a, lambda bs, b: (bs, self.body(b)))
            if isinstance(e, Loop) and isinstance(e.form, ForForm):
                e = self.loop(st, e, defs)
            stmts.append(st if e is st.exp else Let(st.pat, e, st.loc))
            if isinstance(e, Prim) and len(st.pat) == 1:
                defs[st.pat[0]] = st
        return Body(tuple(stmts), body.result)

    def loop(self, st: Let, lp: Loop, defs: dict) -> Loop:
        body = lp.body
        # (the array the body reads, its value x0, reads of it other than the row read)
        cands = [(c, x0, 2) for pos, (c, x0) in enumerate(zip(lp.params, lp.init))
                 if body.result[pos] is c and self.uses[st.pat[pos]] == 0 and isinstance(x0, Var)]
        cands += [(x, x, 1) for x in sorted(free_vars(body), key=lambda v: v.name) if x in defs and self.uses[x] == 1]
        aff = None
        for c, x0, n_uses in cands:
            if not (isinstance(c.type, TensorType) and len(c.type.shape) >= 1 and self.uses[x0] == 1
                    and x0 in defs and self._sinkable(defs[x0], c.type.shape, True)):
                continue
            reads = [k for k, s in enumerate(body.stmts) if isinstance(s.exp, Prim) and s.exp.op == "index"
                     and s.exp.args and s.exp.args[0] is c]
            if use_counts(body)[c] != n_uses or len(reads) != 1:   # the row read (and the yield)
                continue
            rd = body.stmts[reads[0]]
            e = rd.exp
            if aff is None:
                aff = _affine(body, lp.form.index)
            if not (len(e.args) == 2 and _full_row(e.p["spec"], c.type.shape)
                    and _distinct_slices(lp, aff, e.args[1], e.p["spec"], c.type.shape)):
                continue
            new = _Rows(self, defs, tuple(c.type.shape), e.args[1], rd.loc).row(x0, rd.pat[0])
            # right after r's definition: a fused loop of their own, not hoisted into
            # (and materialised before) a later fused loop of another shape
            at = next((k + 1 for k, s in enumerate(body.stmts) if e.args[1] in s.pat), 0)
            rest = body.stmts[:reads[0]] + body.stmts[reads[0] + 1:]
            body = Body(rest[:at] + tuple(new) + rest[at:], body.result)
            self.changed = True
        return lp if body is lp.body else dataclasses.replace(lp, body=body)

    @staticmethod
    def _sinkable(st: Let, shape, top: bool) -> bool:
        e = st.exp
        return (isinstance(e, Prim) and (e.op in (_ELEMENTWISE if top else _CHEAP) or e.op == "broadcast_to")
                and isinstance(st.pat[0].type, TensorType) and tuple(st.pat[0].type.shape) == tuple(shape))


class _Rows:
    """Statements computing row r of values of shape `shape` (memoised)."""

    def __init__(self, sink: _Sink, defs: dict, shape: tuple, r, loc):
        self.sink, self.defs, self.shape, self.r, self.loc = sink, defs, shape, r, loc
        self.stmts: list = []
        self.memo: dict = {}
        self.read: set = set()

    def row(self, x0: Var, out: Var) -> list:
        self.read = self._read_instead(x0)
        self.full(x0, out)
        return self.stmts

    def _nodes(self, x0: Var) -> dict:
        """The values the row of x0 would recompute: x0 and, transitively, its
        full-shaped operands computed here by cheap primitives -> their statements."""
        nodes, todo = {}, [x0]
        while todo:
            v = todo.pop()
            st = self.defs.get(v)
            if v in nodes or st is None or not _Sink._sinkable(st, self.shape, v is x0):
                continue
            nodes[v] = st
            todo += [a for a in st.exp.args if isinstance(a, Var) and tuple(a.type.shape) == self.shape]
        return nodes

    def _read_instead(self, x0: Var) -> set:
        """Nodes whose rows are read rather than recomputed: those computed (in a
        fused loop) anyway, because a value outside the row's statements needs
        them, whose row costs fewer bytes of memory traffic to store and read
        there (2 x its element size) than its operands' rows cost to read
        (kmeans: the bool mask `D == min` against D itself, note [sink-rows])."""
        nodes = self._nodes(x0)
        inside = Counter(a for st in nodes.values() for a in st.exp.args if isinstance(a, Var))
        kept, todo = set(), [v for v in nodes if v is not x0 and self.sink.uses[v] > inside[v]]
        while todo:   # needed outside, and so everything it is computed from
            v = todo.pop()
            if v in kept or v not in nodes:
                continue
            kept.add(v)
            todo += [a for a in nodes[v].exp.args if isinstance(a, Var)]
        read: set = set()
        memo: dict = {}

        def cost(a) -> int:   # bytes per element read to get a's row
            if not (isinstance(a, Var) and tuple(a.type.shape) == self.shape):
                return 0 if len(a.type.shape) < len(self.shape) or a.type.shape[0] == 1 else _item(a)
            if a not in nodes:
                return _item(a)
            if a not in memo:
                rec = sum(cost(b) for b in nodes[a].exp.args)
                if a in kept and 2 * _item(a) < rec:
                    read.add(a)
                    rec = _item(a)
                memo[a] = rec
            return memo[a]

        cost(x0)
        return read

    def let(self, hint: Var | str, t: TensorType, e: Prim, loc=None, out: Var | None = None):
        v = out if out is not None else Var(self.sink.names.fresh(hint if isinstance(hint, str) else hint.name), t)
        self.stmts.append(Let((v,), e, loc or self.loc))
        return v

    def full(self, v: Var, out: Var | None = None):
        """Row r of v, which has the full shape (exactly shape[1:])."""
        if v in self.memo and out is None:
            return self.memo[v]
        rt = dataclasses.replace(v.type, shape=self.shape[1:])
        st = self.defs.get(v)
        if st is not None and v not in self.read and _Sink._sinkable(st, self.shape, out is not None):
            e = st.exp
            if e.op == "broadcast_to":
                a = self.operand(e.args[0])
                if out is None and tuple(a.type.shape) == self.shape[1:] and a.type.dtype == rt.dtype:
                    self.memo[v] = a
                    return a
                res = self.let(v, rt, Prim("broadcast_to", (a,), (("shape", self.shape[1:]),)), st.loc, out)
            else:
                args = tuple(self.operand(a) for a in e.args)
                shp = np.broadcast_shapes(*(tuple(a.type.shape) for a in args))
                if shp != self.shape[1:]:   # every operand was a broadcast: make one full
                    i = next(j for j, a in enumerate(args) if a.type.shape or j == len(args) - 1)
                    b = args[i]
                    bt = dataclasses.replace(b.type, shape=self.shape[1:])
                    b = self.let(f"{v.name}_b", bt, Prim("broadcast_to", (b,), (("shape", self.shape[1:]),)), st.loc)
                    args = args[:i] + (b,) + args[i + 1:]
                res = self.let(v, rt, Prim(e.op, args, e.params), st.loc, out)
        else:
            res = self.let(v, rt, Prim("index", (v, self.r), (("spec", _row_spec(self.shape)),)), None, out)
        self.memo[v] = res
        return res

    def operand(self, a):
        """Row r of operand a, broadcast (NumPy's rules) to the full shape."""
        t = a.type
        if not t.shape:
            return a
        if tuple(t.shape) == self.shape and isinstance(a, Var):
            return self.full(a)
        if len(t.shape) < len(self.shape):   # aligned with the trailing axes: unchanged
            return a
        rt = dataclasses.replace(t, shape=tuple(t.shape[1:]))
        idx = _I0 if t.shape[0] == 1 else self.r
        hint = a.name if isinstance(a, Var) else "c"
        return self.let(f"{hint}_row", rt, Prim("index", (a, idx), (("spec", _row_spec(t.shape)),)))
