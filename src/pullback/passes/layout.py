"""Transposed layout for matrices filled column by column: `transpose_layout(prog) -> prog`
(note [transposed-layout]).

Contract: a loop-carried matrix X (shape (n, k), n, k >= 2) that the loop body
only reads and updates by whole columns (`X[:, j]`, `X[:, j] = v` and
`X[:, j] += v`, chained from the carried value to the value yielded for it),
whose initial value is a `full` or a matrix whose transpose is at hand, is
carried transposed: the body reads and updates rows of X^T, which are
contiguous. After the loop, X is bound to `transpose(X^T)` (a view), and the
statements that read X are moved onto X^T where that is free ("sinking"):
- elementwise primitives whose other operands are scalars, fills,
  broadcasts of vectors and of (n, 1) / (1, k) matrices, or computed
  elementwise from such operands compute their result transposed (the
  result's own name is bound to a transposed view of it);
- `sum`, `min` and `max` reduce the other axis of X^T (same additions, in the
  same order, as the fused loops of the numba backend do them);
- whole-column reads `X[:, j]` read row j of X^T;
and loops whose carried matrix starts from such a transposed value are
carried transposed in turn. Everything else reads the view, unchanged. Values
are the same: every element is computed by the same primitive from the same
operands (a full sum that reads the view may add in another order). The numba backend runs it before code generation; the interpreter
and pysource print the program as staged.
"""
from __future__ import annotations

import dataclasses

from ..ir.core import Body, Const, Let, Loop, Prim, Prog, Var
from ..ir.names import NameSupply
from ..ir.traverse import all_names, dce, free_vars, map_exp
from ..ir.types import TensorType

# elementwise primitives computed on the transposed operands (the numba fusion's set,
# less `broadcast_to`, handled as an operand)
_ELEMENTWISE = frozenset({
    "add", "sub", "mul", "div", "neg", "exp", "log", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "tanh",
    "abs", "sign", "maximum", "minimum", "logistic", "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "not",
    "isnan", "where", "cast", "floor", "ceil", "round", "atan2", "arcsin", "arccos", "arctan", "sinh", "cosh",
    "smul", "pow", "mod", "floordiv", "square",
})
_REDUCE = frozenset({"sum", "min", "max"})


def _matrix(t) -> bool:
    return (isinstance(t, TensorType) and len(t.shape) == 2 and all(isinstance(d, int) and d >= 2 for d in t.shape))


def _tt(t: TensorType) -> TensorType:
    return dataclasses.replace(t, shape=(t.shape[1], t.shape[0]))


def _col_spec(spec, shape) -> bool:
    """`X[:, j]`: a whole first axis and one dynamic index on the second."""
    return (len(spec) == 2 and spec[1] == ("d",) and spec[0][0] == "s"
            and range(*slice(spec[0][1], spec[0][2], spec[0][3]).indices(shape[0])) == range(shape[0]))


def transpose_layout(prog: Prog) -> Prog:
    out, changed = [], False
    for f in prog.funcs:
        lay = _Layout(NameSupply(all_names(f)))
        body = lay.body(f.body, {}, {})
        if lay.changed:
            changed = True
            f = dataclasses.replace(f, body=dce(body))
        out.append(f)
    return prog.with_funcs(out) if changed else prog


class _Layout:
    def __init__(self, names: NameSupply):
        self.names = names
        self.changed = False

    def var(self, hint: str, t) -> Var:
        return Var(self.names.fresh(hint), t)

    def body(self, body: Body, tmap: dict, defs: dict) -> Body:
        """`tmap[x]`: a variable holding x's transpose; `defs[x]`: x's defining Prim."""
        tmap, defs = dict(tmap), dict(defs)
        out: list = []
        for st in body.stmts:
            e = st.exp
            if isinstance(e, Loop):
                self.loop(st, tmap, defs, out)
                continue
            if isinstance(e, Prim):
                if not self.sink(st, tmap, defs, out):
                    out.append(st)
                if len(st.pat) == 1:
                    defs[st.pat[0]] = e
                continue
            out.append(Let(st.pat, map_exp(e, lambda a: a, lambda bs, b: (bs, self.body(b, tmap, defs))), st.loc))
        return Body(tuple(out), body.result)

    # -- transposed operands ---------------------------------------------------------------
    def operand(self, a, shape: tuple, defs: dict, tmap: dict, out: list, loc):
        """An atom whose value, broadcast to the transposed `shape`, is the transpose of
        `a` broadcast to `shape`; None if that needs a transposed copy."""
        if a in tmap:
            return tmap[a]
        t = a.type
        if not t.shape:
            return a
        if isinstance(a, Const):
            return None
        d = defs.get(a)
        if d is not None and d.op == "full" and tuple(t.shape) == shape:
            return self.let(out, "t", _tt(t), Prim("full", d.args, (("shape", (shape[1], shape[0])),)), loc)
        if d is not None and d.op in _ELEMENTWISE and tuple(t.shape) == shape:
            # computed elementwise from transposable operands (a mask of a broadcast
            # value, say): computed transposed too
            mark = self.mark(out, tmap)
            args = [self.operand(x, shape, defs, tmap, out, loc) for x in d.args]
            if any(x is None for x in args):
                self.undo(mark, out, tmap)
                return None
            tmap[a] = self.let(out, a.name, _tt(t), Prim(d.op, tuple(args), d.params), loc)
            return tmap[a]
        if d is not None and d.op == "broadcast_to" and tuple(t.shape) == shape:
            z = self.operand(d.args[0], shape, defs, tmap, out, loc)
            if z is None:
                return None
            tshape = (shape[1], shape[0])
            return self.let(out, "t", _tt(t), Prim("broadcast_to", (z,), (("shape", tshape),)), loc)
        shp = tuple(t.shape)
        if len(shp) == 1:   # a row, broadcast along the first axis: a column of the transpose
            return self.reshape(out, a, (shp[0], 1), loc)
        if len(shp) == 2 and 1 in shp:   # (n, 1) or (1, k): the same elements
            return self.reshape(out, a, (shp[1], shp[0]), loc)
        return None

    @staticmethod
    def mark(out: list, tmap: dict) -> tuple:
        return len(out), set(tmap)

    @staticmethod
    def undo(mark: tuple, out: list, tmap: dict) -> None:
        """Forget the statements and transposes made since `mark` (an operand failed)."""
        n, keys = mark
        del out[n:]
        for k in set(tmap) - keys:
            del tmap[k]

    def let(self, out: list, hint: str, t, e: Prim, loc) -> Var:
        v = self.var(hint, t)
        out.append(Let((v,), e, loc))
        return v

    def reshape(self, out: list, a, shape: tuple, loc) -> Var:
        return self.let(out, "t", dataclasses.replace(a.type, shape=shape), Prim("reshape", (a,), (("shape", shape),)), loc)

    def bind_view(self, out: list, y: Var, yt: Var, tmap: dict, loc) -> None:
        out.append(Let((y,), Prim("transpose", (yt,), (("perm", (1, 0)),)), loc))
        tmap[y] = yt
        self.changed = True

    # -- statements ------------------------------------------------------------------------
    def sink(self, st: Let, tmap: dict, defs: dict, out: list) -> bool:
        """Compute `st` on transposed values where that is free; False to keep it as is."""
        e: Prim = st.exp
        if len(st.pat) != 1 or not any(isinstance(a, Var) and a in tmap for a in e.args):
            return False
        (y,) = st.pat
        if e.op in _ELEMENTWISE and _matrix(y.type):
            shape = tuple(y.type.shape)
            mark = self.mark(out, tmap)
            args = [self.operand(a, shape, defs, tmap, out, st.loc) for a in e.args]
            if any(a is None for a in args):
                self.undo(mark, out, tmap)
                return False
            yt = self.let(out, y.name, _tt(y.type), Prim(e.op, tuple(args), e.params), st.loc)
            self.bind_view(out, y, yt, tmap, st.loc)
            return True
        (x, *rest) = e.args
        if e.op in _REDUCE and x in tmap and not rest:
            axes = tuple(sorted(1 - int(a) for a in e.p["axes"]))
            if len(axes) == 1:   # a full reduction keeps its order of elements: leave it
                params = tuple((k, axes if k == "axes" else v) for k, v in e.params)
                out.append(Let(st.pat, Prim(e.op, (tmap[x],), params), st.loc))
                self.changed = True
                return True
        if e.op == "index" and x in tmap and _col_spec(e.p["spec"], x.type.shape):
            spec = e.p["spec"]
            params = tuple((k, (spec[1], spec[0]) if k == "spec" else v) for k, v in e.params)
            out.append(Let(st.pat, Prim("index", (tmap[x], *rest), params), st.loc))
            self.changed = True
            return True
        return False

    def loop(self, st: Let, tmap: dict, defs: dict, out: list) -> None:
        lp: Loop = st.exp
        swap = {}   # position -> transposed init
        for pos, (c, a) in enumerate(zip(lp.params, lp.init)):
            if not (_matrix(c.type) and c.type == a.type and _column_chain(lp.body, c, pos)):
                continue
            d = defs.get(a)
            if a in tmap:
                swap[pos] = tmap[a]
            elif d is not None and d.op == "full":
                swap[pos] = self.let(out, a.name if isinstance(a, Var) else "t", _tt(a.type),
                                     Prim("full", d.args, (("shape", tuple(reversed(a.type.shape))),)), st.loc)
        if not swap:
            out.append(Let(st.pat, map_exp(lp, lambda a: a, lambda bs, b: (bs, self.body(b, tmap, defs))), st.loc))
            return
        params, init, sub = list(lp.params), list(lp.init), {}
        for pos, at in swap.items():
            c = lp.params[pos]
            params[pos] = ct = self.var(c.name, _tt(c.type))
            init[pos] = at
            sub[c] = ct
        body = self.body(_transpose_chains(lp.body, sub, self), tmap, defs)
        pat = list(st.pat)
        outs = {}
        for pos in swap:
            outs[pos] = pat[pos]
            pat[pos] = self.var(pat[pos].name, _tt(pat[pos].type))
        out.append(Let(tuple(pat), dataclasses.replace(lp, params=tuple(params), init=tuple(init), body=body), st.loc))
        for pos, y in outs.items():
            self.bind_view(out, y, pat[pos], tmap, st.loc)


def _column_chain(body: Body, c: Var, pos: int) -> bool:
    """Is the carried `c` read and updated only by whole columns in `body`, each update
    of the chain read only that way, and the chain's last value yielded at `pos`?"""
    chain = {c}
    for st in body.stmts:
        e = st.exp
        if not isinstance(e, Prim):
            if free_vars(e) & chain:
                return False
            continue
        uses = [i for i, a in enumerate(e.args) if isinstance(a, Var) and a in chain]
        if not uses:
            continue
        if uses != [0] or e.op not in ("index", "index_update") or not _col_spec(e.p["spec"], c.type.shape):
            return False
        if e.op == "index_update":
            if e.p["mode"] not in ("set", "add"):
                return False
            chain.add(st.pat[0])
    res = [i for i, a in enumerate(body.result) if isinstance(a, Var) and a in chain]
    return res == [pos]


def _transpose_chains(body: Body, sub: dict, lay: _Layout) -> Body:
    """`body` with each column access of a carried matrix in `sub` (param -> transposed
    param) made a row access of the transposed chain."""
    tr = dict(sub)
    stmts = []
    for st in body.stmts:
        e = st.exp
        if isinstance(e, Prim) and e.args and isinstance(e.args[0], Var) and e.args[0] in tr:
            spec = e.p["spec"]
            params = tuple((k, (spec[1], spec[0]) if k == "spec" else v) for k, v in e.params)
            if e.op == "index":
                stmts.append(Let(st.pat, Prim("index", (tr[e.args[0]], *e.args[1:]), params), st.loc))
            else:
                (u,) = st.pat
                tr[u] = ut = lay.var(u.name, _tt(u.type))
                stmts.append(Let((ut,), Prim("index_update", (tr[e.args[0]], *e.args[1:]), params), st.loc))
            continue
        stmts.append(st)
    return Body(tuple(stmts), tuple(tr.get(a, a) if isinstance(a, Var) else a for a in body.result))
