"""Scalarise small static arrays: `scalarize(prog) -> prog` (note [scalarize]).

Contract: inside every function body, an array value of static shape with at
most `SMALL` elements that is computed by a supported primitive (elementwise
math, broadcasts, reshapes, transposes, static indexing and updates, sums,
`full`, `concatenate`), carried by a loop or returned by an `if`, is replaced
by one scalar variable per element, in row-major order. Where such a value
reaches anything else (a call, a map, a store, a primitive without a rule
here, a function's result) it is packed back into a fresh array at that
point (`full`, then one `index_update` per element, which the backends do in
place). Parameters that are small arrays are read element by element where a
rule needs their elements. An array of at most `BUILT` elements concatenated
or reshaped from scalarised values is one pack, and its elements stay known
(`_Func.built`). Values are unchanged: each element is computed by
the same scalar primitive the array primitive applies elementwise (sums keep
NumPy's left-to-right order for these sizes; NumPy's pairwise summation only
differs from it above 8 elements).

The numba backend runs it before code generation: a two-element position in
an ODE loop otherwise allocates an array per operation (GradBench's particle
and saddle, det's small minors).
"""
from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from ..ir.core import Body, Const, Func, If, Let, Loop, Prim, Prog, Var
from ..ir.names import NameSupply
from ..ir.traverse import all_names, map_exp, substitute_exp
from ..ir.types import I64, TensorType

SMALL = 4          # elements of a small vector
SMALL_MATRIX = 9   # ... of a small matrix or higher-rank array: 3 x 3 (note [scalarize])
BUILT = 64         # elements of an array built from scalarised pieces in one pack (`_Func.built`)

_ELEMENTWISE = frozenset({
    "add", "sub", "mul", "div", "neg", "exp", "log", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "tanh",
    "abs", "sign", "maximum", "minimum", "logistic", "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "not",
    "isnan", "where", "cast", "floor", "ceil", "round", "atan2", "arcsin", "arccos", "arctan", "sinh", "cosh",
})


def small_type(t) -> bool:
    """A static array type this pass scalarises: at most `SMALL` elements (a
    vector) or `SMALL_MATRIX` (rank 2 or more), or none at all (an empty slice,
    det's `rest[:, :0]`, whose updates and concatenations are then no-ops)."""
    if not (isinstance(t, TensorType) and len(t.shape) >= 1 and all(isinstance(d, int) for d in t.shape)):
        return False
    return int(np.prod(t.shape)) <= (SMALL if len(t.shape) == 1 else SMALL_MATRIX)


_small = small_type


def scalarize(prog: Prog) -> Prog:
    out, changed = [], False
    for f in prog.funcs:
        g = _Func(f).run()
        changed = changed or g is not f
        out.append(g)
    return prog.with_funcs(out) if changed else prog


def _coords(shape):
    return list(itertools.product(*(range(int(d)) for d in shape)))


def read_elements(a: Var, names: NameSupply, out: list, loc=None) -> list[Var]:
    """Append to `out` one static `index` read per element of the array `a`, in
    row-major order; the element variables."""
    t = a.type
    es = []
    for c in _coords(t.shape):
        s = Var(names.fresh(f"{a.name}_e"), TensorType(t.dtype, ()))
        out.append(Let((s,), Prim("index", (a,) + tuple(Const(int(i), I64) for i in c),
                                  (("spec", tuple(("d",) for _ in c)),)), loc))
        es.append(s)
    return es


def pack_elements(v: Var, es, names: NameSupply, out: list, into: Var | None = None, loc=None) -> Var:
    """Append to `out` the statements that build an array of `v`'s type from its
    element atoms `es` (row-major): a `full`, then one `index_update` per element
    (the backends do these in place). The last one binds `into` if given."""
    t = v.type
    zero = Const(False if t.dtype == "bool" else (0.0 if t.is_float else 0), TensorType(t.dtype, ()))
    cur = Var(names.fresh(f"{v.name}_p"), t)
    out.append(Let((cur,), Prim("full", (zero,), (("shape", tuple(t.shape)),)), loc))
    coords = _coords(t.shape)
    for k, (c, e) in enumerate(zip(coords, es)):
        nxt = into if into is not None and k == len(coords) - 1 else Var(names.fresh(f"{v.name}_p"), t)
        out.append(Let((nxt,), Prim("index_update", (cur, e) + tuple(Const(int(i), I64) for i in c),
                                    (("spec", tuple(("d",) for _ in c)), ("mode", "set"))), loc))
        cur = nxt
    return cur


class _Func:
    def __init__(self, f: Func):
        self.f = f
        self.names = NameSupply(all_names(f))
        self.changed = False
        self.scal: dict = {}   # scalar results replaced by an atom (a statement that only reads an element)
        self.reads: set = set()   # element variables that read an array that is not scalarised (`elems`)

    def run(self) -> Func:
        body = self.body(self.f.body, {})
        return dataclasses.replace(self.f, body=body) if self.changed else self.f

    # -- element lists ---------------------------------------------------------------------

    def fresh(self, base, dtype) -> Var:
        return Var(self.names.fresh(base), TensorType(dtype, ()))

    def elems(self, a, env, out) -> list | None:
        """The element atoms of small array atom `a` (reading a parameter's elements), or None."""
        if isinstance(a, Var) and a in env:
            return env[a]
        t = a.type
        if not _small(t):
            return None
        if isinstance(a, Const):
            v = np.broadcast_to(np.asarray(a.value), t.shape)
            return [Const(v[c].item(), TensorType(t.dtype, ())) for c in _coords(t.shape)]
        es = env[a] = read_elements(a, self.names, out)
        self.reads.update(es)
        return es

    def pack(self, v: Var, es, out) -> Var:
        return pack_elements(v, es, self.names, out)

    def atom(self, a, env, out, packed):
        """`a` as an array: packed once per body when it was scalarised."""
        if isinstance(a, Var) and a in self.scal:
            return self.scal[a]
        if isinstance(a, Var) and a in env and _small(a.type):
            if a not in packed:
                packed[a] = self.pack(a, env[a], out)
            return packed[a]
        return a

    # -- bodies ----------------------------------------------------------------------------

    def body(self, body: Body, env: dict) -> Body:
        env = dict(env)
        out: list = []
        packed: dict = {}
        for st in body.stmts:
            self.stmt(st, env, out, packed)
        result = tuple(self.atom(self.scal.get(a, a) if isinstance(a, Var) else a, env, out, packed)
                       for a in body.result)
        return Body(tuple(out), result)

    def stmt(self, st: Let, env, out, packed):
        e = substitute_exp(st.exp, self.scal) if self.scal else st.exp
        if isinstance(e, Prim) and len(st.pat) == 1:
            es = self.prim(e, st.pat[0], env, out, st)
            if es is not None:
                self.changed = True
                if st.pat[0].type.shape:
                    env[st.pat[0]] = es
                else:
                    self.scal[st.pat[0]] = es[0]
                return
        if self.built(e, st, env, out):
            return
        if isinstance(e, Loop) and any(_small(p.type) for p in e.params):
            return self.loop(st, e, env, out, packed)
        if isinstance(e, If) and any(_small(v.type) for v in st.pat):
            return self.if_(st, e, env, out, packed)
        # anything else: scalarised operands are packed; nested bodies are scalarised on their own
        e = map_exp(e, lambda a: self.atom(a, env, out, packed), lambda bs, b: (bs, self.body(b, env)))
        out.append(Let(st.pat, e, st.loc))

    def built(self, e, st, env, out) -> bool:
        """A concatenation of scalarised pieces, or a reshape of a scalarised
        array, into an array too large to scalarise (`np.stack` of nine scalars,
        a rotation's entries, and the adjoint of that), no piece of which is
        only the elements of an array that exists (copying that is cheaper):
        one pack of all its elements, not a pack per piece and a
        concatenation. Its elements stay known, so static reads of it and
        reshapes of it into small arrays are scalar again (note [scalarize],
        "Arrays built from scalars")."""
        if not (isinstance(e, Prim) and e.op in ("concatenate", "reshape") and len(st.pat) == 1):
            return False
        v = st.pat[0]
        if not (isinstance(v.type, TensorType) and all(isinstance(d, int) for d in v.type.shape)
                and 0 < v.type.size <= BUILT):
            return False
        if not all(isinstance(a, Var) and a in env for a in e.args):
            return False
        lists = [env[a] for a in e.args]
        if any(len(xs) > 1 and all(isinstance(x, Var) and x in self.reads for x in xs) for xs in lists):
            return False   # a piece that is an array that exists: copying it (the backends' loops) is cheaper
        es = _concat_elems(e, lists, v.type) if e.op == "concatenate" else lists[0]
        pack_elements(v, es, self.names, out, into=v, loc=st.loc)
        env[v] = es   # not small: `atom` gives `v` itself, which the pack binds
        self.changed = True
        return True

    def loop(self, st, e: Loop, env, out, packed):
        self.changed = True
        params, init, inner = [], [], dict(env)
        for p, a in zip(e.params, e.init):
            es = self.elems(a, env, out) if _small(p.type) else None
            if es is None:
                params.append(p)
                init.append(self.atom(a, env, out, packed))
                continue
            ps = [self.fresh(f"{p.name}_{k}", p.type.dtype) for k in range(len(es))]
            params += ps
            init += es
            inner[p] = ps
        bout: list = []
        bpacked: dict = {}
        benv = dict(inner)
        for s in e.body.stmts:
            self.stmt(s, benv, bout, bpacked)
        res = []
        for p, r in zip(e.params, e.body.result):
            r = self.scal.get(r, r) if isinstance(r, Var) else r
            if p in inner:
                res += self.elems(r, benv, bout)
            else:
                res.append(self.atom(r, benv, bout, bpacked))
        pat = []
        for v, p in zip(st.pat, e.params):
            if p in inner:
                vs = [self.fresh(f"{v.name}_{k}", v.type.dtype) for k in range(len(inner[p]))]
                pat += vs
                env[v] = vs
            else:
                pat.append(v)
        out.append(Let(tuple(pat), Loop(tuple(params), tuple(init), e.form, Body(tuple(bout), tuple(res))), st.loc))

    def if_(self, st, e: If, env, out, packed):
        self.changed = True
        branches = []
        for b in (e.then, e.else_):
            bout, benv, bpacked = [], dict(env), {}
            for s in b.stmts:
                self.stmt(s, benv, bout, bpacked)
            res = []
            for v, r in zip(st.pat, b.result):
                r = self.scal.get(r, r) if isinstance(r, Var) else r
                if _small(v.type):
                    res += self.elems(r, benv, bout)
                else:
                    res.append(self.atom(r, benv, bout, bpacked))
            branches.append(Body(tuple(bout), tuple(res)))
        pat = []
        for v in st.pat:
            if _small(v.type):
                vs = [self.fresh(f"{v.name}_{k}", v.type.dtype) for k in range(int(np.prod(v.type.shape)))]
                pat += vs
                env[v] = vs
            else:
                pat.append(v)
        out.append(Let(tuple(pat), If(self.atom(e.cond, env, out, packed), *branches), st.loc))

    # -- primitives --------------------------------------------------------------------------

    def prim(self, e: Prim, v: Var, env, out, st):
        """The element atoms of `v = e`, emitting scalar statements, or None (no rule)."""
        t = v.type
        small_out = _small(t)
        if not small_out and getattr(t, "shape", None):
            return None
        op, p = e.op, e.p
        if not all(isinstance(a.type, TensorType) for a in e.args) or not isinstance(t, TensorType):
            return None
        arrays = [a for a in e.args if a.type.shape]
        if op in ("index", "reshape"):   # an array built from scalars (`built`) has known elements too
            if not all(_small(a.type) or isinstance(a, Var) and a in env for a in arrays):
                return None
        elif not all(_small(a.type) for a in arrays):
            return None
        if not arrays:   # an array made from scalars
            if small_out and op in ("reshape", "broadcast_to", "full"):
                self.changed = True
                return [e.args[0]] * int(np.prod(t.shape))
            return None
        if not small_out and op not in ("sum", "index", "reshape"):   # (a reshape to a scalar: its one element)
            return None
        loc = st.loc

        def emit(op_, args, params=(), dtype=None):
            s = self.fresh(v.name if v.name[:1].isalpha() else "t", dtype or t.dtype)
            out.append(Let((s,), Prim(op_, tuple(args), params), loc))
            return s

        if op in _ELEMENTWISE:
            ops = []
            for a in e.args:
                if a.type.shape:
                    es = self.elems(a, env, out)
                    if es is None:
                        return None
                    ops.append((a.type.shape, es))
                else:
                    ops.append(((), [a]))
            shape = tuple(t.shape)
            res = []
            for c in _coords(shape):
                args = [es[_flat(sh, c, shape)] for sh, es in ops]
                res.append(emit(op, args, e.params))
            return res
        if op == "broadcast_to":
            es = self.elems(e.args[0], env, out)
            return None if es is None else [es[_flat(e.args[0].type.shape, c, t.shape)] for c in _coords(t.shape)]
        if op == "reshape":
            return self.elems(e.args[0], env, out)
        if op == "transpose":
            x = e.args[0]
            es = self.elems(x, env, out)
            if es is None:
                return None
            perm = p["perm"]
            return [es[_flat(x.type.shape, tuple(c[perm.index(d)] for d in range(len(perm))), x.type.shape)]
                    for c in _coords(t.shape)]
        if op == "concatenate":
            lists = [self.elems(a, env, out) for a in e.args]
            return None if any(x is None for x in lists) else _concat_elems(e, lists, t)
        if op == "sum":
            x = e.args[0]
            es = self.elems(x, env, out)
            if es is None or not t.is_float or x.type.size == 0:   # (an empty sum stays a sum: zeros)
                return None
            axes = tuple(int(a) for a in p["axes"])
            groups: dict = {}
            for c, s in zip(_coords(x.type.shape), es):
                key = tuple(c[d] for d in range(len(c)) if d not in axes)
                groups.setdefault(key, []).append(s)
            res = []
            for key in _coords(t.shape) if t.shape else [()]:
                acc = groups[key][0]   # NumPy's order for so few elements: e0 + e1 + ...
                for s in groups[key][1:]:
                    acc = emit("add", (acc, s), dtype=t.dtype)
                res.append(acc)
            return res
        if op in ("index", "index_update"):
            return self.index(e, v, env, out, emit)
        return None

    def index(self, e, v, env, out, emit):
        x = e.args[0]
        spec = e.p["spec"]
        nidx = sum(1 for s in spec if s[0] in ("d", "ds"))
        idx = e.args[2:] if e.op == "index_update" else e.args[1:]
        if len(idx) != nidx or any(not (isinstance(a, Const) and not a.type.shape) for a in idx):
            return None
        if any(s[0] not in ("d", "s") for s in spec):
            return None
        es = self.elems(x, env, out)
        if es is None:
            return None
        shape = tuple(x.type.shape)
        # the source coordinates the region's elements come from, in the region's order
        per_axis, it = [], iter(idx)
        for d in range(len(shape)):
            if d < len(spec) and spec[d][0] == "d":
                i = int(next(it).value)
                if not -shape[d] <= i < shape[d]:
                    return None
                per_axis.append([i % shape[d]])
            elif d < len(spec):
                _, start, stop, step = spec[d]
                per_axis.append(list(range(*slice(start, stop, step).indices(shape[d]))))
            else:
                per_axis.append(list(range(shape[d])))
        region = list(itertools.product(*per_axis))
        if e.op == "index":
            return [es[_flat(shape, c, shape)] for c in region]
        val = e.args[1]
        vs = self.elems(val, env, out) if val.type.shape else [val] * len(region)
        if vs is None:
            return None
        if val.type.shape and len(vs) != len(region):  # a broadcast value: read it per region element
            rshape = tuple(len(a) for k, a in enumerate(per_axis) if not (k < len(spec) and spec[k][0] == "d"))
            vs = [vs[_flat(val.type.shape, c, rshape)] for c in _coords(rshape)]
        new = list(es)
        mode = e.p["mode"]
        for c, s in zip(region, vs):
            k = _flat(shape, c, shape)
            new[k] = s if mode == "set" else emit("add", (new[k], s))
        return new


def _concat_elems(e: Prim, lists, t) -> list:
    """The element atoms of concatenation `e` (of type `t`) whose pieces have
    the element atoms `lists`, in row-major order."""
    axis = e.p["axis"]
    res = []
    for c in _coords(t.shape):
        k = c[axis]
        for a, es in zip(e.args, lists):
            n = a.type.shape[axis]
            if k < n:
                res.append(es[_flat(a.type.shape, c[:axis] + (k,) + c[axis + 1:], a.type.shape)])
                break
            k -= n
    return res


def _flat(src_shape, c, out_shape) -> int:
    """The row-major position in an array of `src_shape`, broadcast to `out_shape`,
    of the element at coordinates `c` of `out_shape`."""
    src_shape = tuple(int(d) for d in src_shape)
    off = len(out_shape) - len(src_shape)
    k = 0
    for j, d in enumerate(src_shape):
        i = 0 if d == 1 else c[off + j]
        k = k * d + i
    return k
