"""Static detection of a Jacobian's sparsity pattern (note [sparse-jacobian]).

Contract: `detect(prog, leaf)` returns a canonical boolean `scipy.sparse.csr_array`
of shape (output size, input size): entry (i, j) is True when element i of the
entry function's first result may depend on element j of its parameter number
`leaf` (both flattened in C order). It reads only the staged IR, never values:
a superset of the Jacobian's nonzeros for every input. Raises `deps.TooDense`
when a dependency set would be too large to hold.

How (an abstract interpretation of the IR, each value mapped to a dependency
set of `deps` and, for small integer and boolean values, a known value):
- primitives: `rules.prim`;
- calls: the callee is analysed with the arguments' sets; a recursive call,
  and a call of a function with user-given derivative rules (`pb.custom_jvp`,
  `pb.custom_vjp`: the rule, not the body, gives the derivative), is
  conservative (every result element on every argument element);
- ifs: a condition known while analysing (computed from loop counters and
  constants) takes its branch; any other takes both and unites them;
- for loops with a known bound are unrolled while their statements stay under
  `UNROLL` evaluations (the counter is known in each iteration, so `x[i]`
  reads one element); other loops iterate to a fixed point from the initial
  sets, widened after `WIDEN_AFTER` rounds to whole-array sets;
- maps: a body that does not read the iteration index is analysed once, on a
  column space widened with one column per element of the mapped arrays, and
  the result is instantiated per iteration by sparse products (exact, and
  linear in the width); a body that reads the index, or maps an integer array
  whose values are known (pb.hist's bins), is unrolled per iteration within
  the budget, else analysed that way with the index unknown.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..ir.core import Apply, Const, ForForm, If, Loop, Map, Prim, Var
from ..ir.traverse import free_vars
from . import deps as D
from .rules import KNOWN_MAX, is_float, prim, size_of

UNROLL = 20_000       # statement evaluations (plus rows / 256) an unrolled loop or map may take
WIDEN_AFTER = 6       # fixed-point rounds before sets are widened to whole arrays
MAX_CALL_DEPTH = 200


class _Abort(Exception):
    """An unrolled loop went over its budget: it is analysed by a fixed point instead."""

    def __init__(self, token):
        super().__init__()
        self.token = token


def detect(prog, leaf: int):
    f = prog.main
    x = f.params[leaf]
    n = size_of(x.type)
    a = Analyzer(prog, n)
    args = [(D.identity_cols(n, n, 0), None) if p is x else (None, _known_const(p)) for p in f.params]
    res = a.call(f.name, args)
    out_t = f.ret_types[0]
    d = res[0][0]
    if d is None:
        return D.empty(size_of(out_t), n)
    return D.canonical(d)


def _known_const(p):
    return None


def _small(v, t):
    if v is None:
        return None
    v = np.asarray(v)
    return v if v.size <= KNOWN_MAX else None


class Analyzer:
    def __init__(self, prog, ncols: int):
        self.funcs = {f.name: f for f in prog.funcs}
        self.ncols = ncols
        self.count = 0
        self.deadlines = []   # (statement count, token) of the unrolled loops being analysed
        self.active = []

    # -- values -------------------------------------------------------------
    def atom(self, a, env):
        if isinstance(a, Const):
            return None, _small(a.value, a.type)
        d, k = env[a]
        if d is not None and d.shape[1] < self.ncols:
            d = D.pad(d, self.ncols)
        return d, k

    def bind(self, v: Var, val, env):
        d, k = val
        env[v] = (d if is_float(v.type) else None, _small(k, v.type))

    # -- statements ---------------------------------------------------------
    def body(self, body, env):
        for st in body.stmts:
            self.stmt(st, env)
        return [self.atom(a, env) for a in body.result]

    def stmt(self, st, env):
        self.count += 1
        for lim, tok in self.deadlines:
            if self.count > lim:
                raise _Abort(tok)
        e = st.exp
        if isinstance(e, Prim):
            outs = prim(e, [self.atom(a, env) for a in e.args], [v.type for v in st.pat], self.ncols)
        elif isinstance(e, Apply):
            outs = self.call(e.func, [self.atom(a, env) for a in e.args])
        elif isinstance(e, If):
            outs = self.if_(e, env)
        elif isinstance(e, Loop):
            outs = self.loop(e, env)
        elif isinstance(e, Map):
            outs = self.map(e, env)
        else:   # an expression this analysis does not know: conservative
            outs = self.conservative([self.atom(a, env) for a in _atoms(e)], [v.type for v in st.pat])
        for v, o in zip(st.pat, outs):
            self.bind(v, o, env)
            if o[0] is not None:   # large sets cost more: an unrolled loop over them stops sooner
                self.count += o[0].shape[0] // 256

    def conservative(self, args, types):
        ds = [d for d, _ in args]
        return [(D.whole(ds, size_of(t), self.ncols) if is_float(t) else None, None) for t in types]

    def call(self, fname, args):
        f = self.funcs[fname]
        if fname in self.active or len(self.active) > MAX_CALL_DEPTH or f.rules:
            return self.conservative(args, f.ret_types)
        self.active.append(fname)
        try:
            env = {}
            for p, a in zip(f.params, args):
                self.bind(p, a, env)
            return self.body(f.body, env)
        finally:
            self.active.pop()

    def if_(self, e, env):
        _, c = self.atom(e.cond, env)
        if c is not None:
            return self.body(e.then if bool(c) else e.else_, env)
        r1 = self.body(e.then, env)
        r2 = self.body(e.else_, env)
        return [(D.union([d1, d2]), k1 if _same_known(k1, k2) else None) for (d1, k1), (d2, k2) in zip(r1, r2)]

    # -- loops --------------------------------------------------------------
    def _unrolled(self, run):
        """`run()` under the unrolling budget; None when it went over."""
        tok = object()
        entry = (self.count + UNROLL, tok)
        self.deadlines.append(entry)
        try:
            return run()
        except _Abort as a:
            if a.token is not tok:
                raise
            return None
        finally:
            self.deadlines.remove(entry)

    def loop(self, e, env):
        init = [self.atom(a, env) for a in e.init]
        if isinstance(e.form, ForForm):
            _, bound = self.atom(e.form.bound, env)
            if bound is not None:
                def run():
                    cur = init
                    for k in range(int(bound)):
                        for p, v in zip(e.params, cur):
                            self.bind(p, v, env)
                        env[e.form.index] = (None, np.int64(k))
                        cur = self.body(e.body, env)
                    return cur
                out = self._unrolled(run)
                if out is not None:
                    return out
            env[e.form.index] = (None, None)
        return self.fixed_point(e.params, init, lambda: self.body(e.body, env), env)

    def fixed_point(self, params, init, run, env):
        """Sets of loop-carried `params` over any number of iterations of `run`."""
        cur = [d for d, _ in init]
        rounds = 0
        while True:
            for p, d in zip(params, cur):
                self.bind(p, (d, None), env)
            res = run()
            new = [D.union([c, r]) if is_float(p.type) else None for p, c, (r, _) in zip(params, cur, res)]
            if rounds >= WIDEN_AFTER:
                new = [D.whole([d], size_of(p.type), self.ncols) if d is not None else None
                       for p, d in zip(params, new)]
            if all(D.same(c, n) for c, n in zip(cur, new)):
                return [(d, None) for d in cur]
            cur = new
            rounds += 1

    # -- maps ---------------------------------------------------------------
    def map(self, e, env):
        w = int(e.width.value) if isinstance(e.width, Const) else int(self.atom(e.width, env)[1])
        arrays = [self.atom(a, env) for a in e.arrays]
        accs = [self.atom(a, env) for a in e.accs]
        int_known = any(k is not None and not is_float(p.type) for p, (_, k) in zip(e.elems, arrays))
        if int_known or e.index in free_vars(e.lam.body):
            out = self._unrolled(lambda: self.map_unrolled(e, w, arrays, accs, env))
            if out is not None:
                return out
        return self.map_relative(e, w, arrays, accs, env)

    def map_unrolled(self, e, w, arrays, accs, env):
        k = e.n_out
        stacked = [[] for _ in range(k)]
        cur = accs
        for i in range(w):
            env[e.index] = (None, np.int64(i))
            for p, (d, kv) in zip(e.elems, arrays):
                s = size_of(p.type)
                self.bind(p, (None if d is None else D.take_rows(d, np.arange(i * s, (i + 1) * s)),
                              None if kv is None else kv[i]), env)
            for p, a in zip(e.acc_params, cur):
                self.bind(p, a, env)
            res = self.body(e.lam.body, env)
            for j in range(k):
                stacked[j].append(res[j])
            cur = res[k:]
        outs = []
        for j in range(k):
            t = e.lam.body.result[j].type
            ds = [d for d, _ in stacked[j]]
            kn = [kv for _, kv in stacked[j]]
            known = np.stack(kn) if w and all(kv is not None for kv in kn) else None
            outs.append((D.stack(ds, [size_of(t)] * w, self.ncols) if w else D.empty(0, self.ncols), known))
        return outs + list(cur)

    def map_relative(self, e, w, arrays, accs, env):
        n = self.ncols
        sizes = [size_of(p.type) for p in e.elems]
        offs = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        ext = n + int(offs[-1])
        elem_all = _elements(arrays, sizes, offs, w, n)
        self.ncols = ext
        try:
            env[e.index] = (None, None)
            for p, s, o in zip(e.elems, sizes, offs):
                self.bind(p, (D.identity_cols(s, ext, n + int(o)), None), env)
            k = e.n_out
            if e.accs:
                def run():
                    res = self.body(e.lam.body, env)
                    return [(_inst_union(r, n, elem_all, w, size_of(p.type), ext), None)
                            for p, (r, _) in zip(e.acc_params, res[k:])]
                acc_sets = self.fixed_point(e.acc_params, [(D.pad(d, ext), None) for d, _ in accs], run, env)
                for p, a in zip(e.acc_params, acc_sets):
                    self.bind(p, a, env)
            res = self.body(e.lam.body, env)
        finally:
            self.ncols = n
        outs = []
        for j in range(k):
            r = res[j][0]
            s = size_of(e.lam.body.result[j].type)
            outs.append((None if r is None else _instantiate(r, n, elem_all, w, s), None))
        for d, _ in (acc_sets if e.accs else []):
            outs.append((None if d is None else D.canonical(d[:, :n]), None))
        return outs


def _elements(arrays, sizes, offs, w, n):
    """The sets of every iteration's elements, (w * total element size) x n: rows
    [i * E + offs[k], ...) hold element k of iteration i."""
    E = int(offs[-1])
    if E == 0 or w == 0:
        return D.empty(w * E, n)
    parts, base = [], 0
    src = np.full((w, E), -1, dtype=np.int64)
    for (d, _), s, o in zip(arrays, sizes, offs):
        if d is None:
            continue
        src[:, o:o + s] = base + np.arange(w)[:, None] * s + np.arange(s)[None, :]
        parts.append(d)
        base += d.shape[0]
    if not parts:
        return D.empty(w * E, n)
    stacked = parts[0] if len(parts) == 1 else D.canonical(sp.vstack(parts, format="csr"))
    return D.take_rows(stacked, src.ravel())


def _instantiate(r, n, elem_all, w, s):
    """Per iteration i, ``r[:, :n]`` united with ``r[:, n:]`` applied to iteration i's
    elements; stacked, (w * s) x n."""
    rx = D.canonical(r[:, :n])
    re = D.canonical(r[:, n:])
    parts = [D.take_rows(rx, np.tile(np.arange(s), w))] if rx.nnz else []
    if re.nnz and elem_all.nnz:
        big = sp.kron(sp.eye(w, format="csr", dtype=bool), re, format="csr")
        parts.append(D.canonical(big @ elem_all))
    out = D.union(parts)
    return out if out is not None else D.empty(w * s, n)


def _inst_union(r, n, elem_all, w, s, ext):
    """The union over iterations of `_instantiate` (an accumulator's contributions),
    s x ext (widened back to the body's column space)."""
    if r is None:
        return None
    st = _instantiate(r, n, elem_all, w, s)
    fold = D.structure(np.tile(np.arange(s), w), np.arange(w * s), (s, w * s))
    return D.pad(D.union([D.apply(fold, st), D.empty(s, n)]), ext)


def _same_known(a, b) -> bool:
    if a is None or b is None:
        return False
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and bool(np.all(a == b))


def _atoms(e):
    from ..ir.traverse import exp_atoms

    return [a for a in exp_atoms(e) if isinstance(a, (Var, Const))]
