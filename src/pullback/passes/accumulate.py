"""Add pieces of an adjoint straight into the array they end up in:
`accumulate(prog) -> prog` (note [accumulate]).

Contract. A *chain* is `w = index_update(...index_update(full(+0), v_1, r_1,
add)..., v_k, r_k, add)`: a zero array (fill exactly +0, not -0) into which
values are added at static regions (static slices and constant in-range
integer indices; no dynamic slices or indices), every intermediate array and
`w` itself read once, all defined in the body being rewritten (never across a
loop or branch boundary, where the work would be repeated). Three rewrites:

1. `y = index_update(B, w, R, add)`, `B = full(+0)` of `w`'s dtype and `R`
   static, becomes `y = index_update(...index_update(B, v_1, R.r_1, add)...,
   v_k, R.r_k, add)`, where `R.r_i` is region `r_i` of `w` seen in `B`. Exact:
   each element receives the same additions in the same order, and `0 + s`
   equals `s` for the partial sums `s` (which start from +0, so are never -0).
2. `y = add(a, w)` (or `add(w, a)`), with `a`, `w` and `y` of one type (no
   broadcasting) and the chain's regions pairwise disjoint, becomes
   `y = index_update(...index_update(a, v_1, r_1, add)..., v_k, r_k, add)`.
   Disjointness keeps every element one addition (`a + (0 + v)` against
   `a + v`); the result can differ only in the sign of a zero: an element
   where `a` is -0 and `v` is -0 (or no `v` touches it) was +0 and is now -0.
3. `y = index_update(X, p, R, add)` where `p` is a packed array (a `full`
   whose every element is then set once, by `index_update(..., s, i..., set)`
   with a scalar `s` of its dtype: what `passes.scalarize` builds where a
   scalarised array reaches an array operation) of the region's shape becomes
   one scalar addition per element into `X`; the packed values in the chains
   of 1 and 2 are added likewise. Exact: each element of `X` receives the same
   one addition.
4. `y = index_update(X, w, R, add)`, `X` any array, `R` of static slices and
   integer indices that may be variables (not only constants), the chain's
   regions pairwise disjoint, becomes `y = index_update(...index_update(X,
   v_1, R.r_1, add)..., v_k, R.r_k, add)` (a variable index kept as is). As
   rewrite 2 with `X[R]` for `a`: only a zero's sign can change. An
   out-of-range variable index raises at the first update, as at the one.

Updates of an empty region are dropped (they add nothing). The chain's and
pack's arrays are then unread and `ir.traverse.dce` drops them: the backend's
ownership analysis updates `B`, `a` or `X` in place when it is dead after the
update. The numba backend runs it after `scalarize` (`numba_backend.lower`):
det by minors' gradient otherwise makes, per minor, a zero matrix for the
concatenation's adjoint, one for the row slice's, and adds whole matrices; for
the 3 x 3 minors it also packed each 2 x 2 adjoint before adding it.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..ir.core import Body, Const, Let, Prim, Prog, Var
from ..ir.names import NameSupply
from ..ir.prims import params_key
from ..ir.prims.indexing import ranges_disjoint
from ..ir.traverse import all_names, dce, map_exp, use_counts
from ..ir.types import I64


def accumulate(prog: Prog) -> Prog:
    out, changed = [], False
    for f in prog.funcs:
        rw = _Rewriter(f)
        body = rw.body(f.body, {})
        if body is not f.body:
            changed = True
            f = dataclasses.replace(f, body=dce(body))
        out.append(f)
    return prog.with_funcs(out) if changed else prog


# ---------------------------------------------------------------------------
# regions: one entry per dimension, ("d", i) or ("s", range), all normalised
# ---------------------------------------------------------------------------


def _region(shape, spec, idx, dynamic: bool = False):
    """The region `spec`/`idx` selects in an array of static `shape`, or None
    when it is not static (dynamic slice or index, an index out of range).
    `dynamic`: an integer index that is a variable is allowed too, as the entry
    ("v", atom) (rewrite 4)."""
    if len(spec) > len(shape) or not all(isinstance(n, int) for n in shape):
        return None
    out, it = [], iter(idx)
    for n, s in zip(shape, spec):
        if s[0] == "d":
            a = next(it)
            if (dynamic and isinstance(a, Var) and a.type.dtype == "i64" and not a.type.shape):
                out.append(("v", a))
                continue
            if not (isinstance(a, Const) and a.type.dtype == "i64" and not a.type.shape and -n <= a.value < n):
                return None
            out.append(("d", a.value % n))
        elif s[0] == "s":
            out.append(("s", range(*slice(s[1], s[2], s[3]).indices(n))))
        else:
            return None
    out.extend(("s", range(n)) for n in shape[len(spec):])
    return tuple(out)


def _empty(region) -> bool:
    return any(k == "s" and len(r) == 0 for k, r in region)


def _compose(outer, inner):
    """Region `inner` of the array that region `outer` selects, as a region of
    the outer array (`inner` has one entry per kept dimension of `outer`)."""
    it = iter(inner)
    out = []
    for k, r in outer:
        if k in ("d", "v"):
            out.append((k, r))
            continue
        ki, ri = next(it)
        if ki == "d":
            out.append(("d", r[ri]))
        elif len(ri) == 0:
            out.append(("s", range(0)))
        else:
            start, step = r[ri[0]], r.step * ri.step
            out.append(("s", range(start, start + step * len(ri), step)))
    return tuple(out)


def _spec(shape, region):
    """(spec, index atoms) of the non-empty `region`, or None when a slice would
    not select it (never expected: a safety net)."""
    spec, idx = [], []
    for n, (k, r) in zip(shape, region):
        if k == "v":
            spec.append(("d",))
            idx.append(r)
            continue
        if k == "d":
            spec.append(("d",))
            idx.append(Const(int(r), I64))
            continue
        stop = r[-1] + (1 if r.step > 0 else -1)   # regions here are never empty
        if stop < 0:
            stop = None                                # a negative step down to index 0
        if range(*slice(r.start, stop, r.step).indices(n)) != r:
            return None
        spec.append(("s", r.start, stop, r.step))
    while spec and spec[-1][0] == "s" and spec[-1][1:] == (0, shape[len(spec) - 1], 1):
        spec.pop()
    return tuple(spec), tuple(idx)


def _disjoint(a, b) -> bool:
    """Whether two regions of one array share no element (conservative)."""
    for (ka, ra), (kb, rb) in zip(a, b):
        if ka == "d" and kb == "d":
            if ra != rb:
                return True
        elif ka == "d" or kb == "d":
            i, r = (ra, rb) if ka == "d" else (rb, ra)
            if i not in r:
                return True
        elif ranges_disjoint(ra, rb):
            return True
    return False


def _is_pos_zero(a) -> bool:
    return (isinstance(a, Const) and not a.type.shape and a.value == 0
            and not np.signbit(a.value))


# ---------------------------------------------------------------------------
# the rewrite
# ---------------------------------------------------------------------------


class _Rewriter:
    def __init__(self, f):
        self.names = NameSupply(all_names(f))
        self.uses = use_counts(f.body)

    def body(self, body: Body, outer: dict) -> Body:
        scoped, local = dict(outer), {}
        stmts, changed = [], False
        for st in body.stmts:
            e = st.exp
            if isinstance(e, Prim):
                new = self._rule(st.pat, e, local, scoped) if len(st.pat) == 1 else None
                if new is not None:
                    changed = True
                    for pat, ne in new:
                        stmts.append(Let(pat, ne, st.loc))
                        local[pat[0]] = scoped[pat[0]] = ne
                    continue
                if len(st.pat) == 1:
                    local[st.pat[0]] = scoped[st.pat[0]] = e
            else:
                inner: list = []
                e2 = map_exp(e, lambda a: a, lambda bs, b, seen=inner: (bs, self._scope(b, scoped, seen)))
                if any(inner):
                    changed, e = True, e2
            stmts.append(st if e is st.exp else Let(st.pat, e, st.loc))
        return Body(tuple(stmts), body.result) if changed else body

    def _scope(self, b: Body, scoped: dict, seen: list) -> Body:
        b2 = self.body(b, scoped)
        seen.append(b2 is not b)
        return b2

    def _chain(self, w, local: dict, scoped: dict):
        """[(v, region)] of the chain `w` (static regions of `w`, in order), or None."""
        if not isinstance(w, Var) or not w.type.shape:
            return None
        steps, x = [], w
        while True:
            e = local.get(x)
            if e is None or e.op != "index_update" or e.p["mode"] != "add" or self.uses[x] != 1:
                break
            r = _region(w.type.shape, e.p["spec"], e.args[2:])
            if r is None:
                return None
            steps.append((e.args[1], r))
            x = e.args[0]
        base = scoped.get(x) if isinstance(x, Var) else None
        if not steps or base is None or base.op != "full" or not _is_pos_zero(base.args[0]):
            return None
        return steps[::-1]

    def _pack(self, p, local: dict, scoped: dict):
        """[(s, region)] when `p` is a packed array, `index_update(...index_update(full(c),
        s_1, i_1, set)..., s_n, i_n, set)` setting every element once to a scalar of its
        dtype (what `passes.scalarize` builds where a scalarised array is needed), each
        intermediate read once; else None."""
        if not isinstance(p, Var) or not p.type.shape or self.uses[p] != 1:
            return None
        steps, x = [], p
        while True:
            e = local.get(x)
            if e is None or e.op != "index_update" or e.p["mode"] != "set" or self.uses[x] != 1:
                break
            r = _region(p.type.shape, e.p["spec"], e.args[2:])
            v = e.args[1]
            if r is None or any(k != "d" for k, _ in r) or v.type.shape or v.type.dtype != p.type.dtype:
                return None
            steps.append((v, r))
            x = e.args[0]
        base = scoped.get(x) if isinstance(x, Var) else None
        if base is None or base.op != "full" or not steps or len({r for _, r in steps}) != len(steps):
            return None
        return steps[::-1] if len(steps) == int(np.prod(p.type.shape)) else None

    def _unpacked(self, steps, local: dict, scoped: dict):
        """`steps` with each packed value added element by element."""
        out = []
        for v, r in steps:
            shape = tuple(len(x) for k, x in r if k == "s")
            pk = self._pack(v, local, scoped) if isinstance(v, Var) and v.type.shape == shape else None
            out.extend([(s, _compose(r, pr)) for s, pr in pk] if pk else [(v, r)])
        return out

    def _emit(self, y: Var, base, steps):
        """Statements adding each (v, region) of `steps` into `base`, the last binding `y`."""
        steps = [(v, r) for v, r in steps if not _empty(r)]
        if not steps:
            return None
        specs = [_spec(y.type.shape, r) for _, r in steps]
        if any(s is None for s in specs):
            return None
        out, cur = [], base
        for i, ((v, _), (spec, idx)) in enumerate(zip(steps, specs)):
            if i == len(steps) - 1:
                nxt = y
            else:
                nxt = Var(self.names.fresh(y.name), y.type)
                self.uses[nxt] = 1
            out.append(((nxt,), Prim("index_update", (cur, v) + idx, params_key({"mode": "add", "spec": spec}))))
            cur = nxt
        return out

    def _rule(self, pat, e: Prim, local: dict, scoped: dict):
        (y,) = pat
        if e.op == "index_update" and e.p["mode"] == "add":
            b, w = e.args[0], e.args[1]
            if not isinstance(w, Var) or w.type.dtype != y.type.dtype:
                return None
            outer = _region(y.type.shape, e.p["spec"], e.args[2:])
            if outer is None:
                return self._spread(y, b, w, e, local, scoped)              # rewrite 4
            bd = scoped.get(b) if isinstance(b, Var) else None
            steps = None
            if bd is not None and bd.op == "full" and _is_pos_zero(bd.args[0]):
                steps = self._chain(w, local, scoped)                       # rewrite 1
            if steps is None:
                steps = self._unpacked([(w, outer)], local, scoped)        # rewrite 3
                if steps[0][0] is not w:
                    return self._emit(y, b, steps)
                return self._spread(y, b, w, e, local, scoped)              # rewrite 4
            steps = [(v, _compose(outer, r)) for v, r in steps]
            return self._emit(y, b, self._unpacked(steps, local, scoped))
        if e.op == "add" and len(e.args) == 2:                              # rewrite 2
            for a, w in (e.args, e.args[::-1]):
                if not (isinstance(a, Var) and a.type == w.type == y.type):
                    continue
                steps = self._chain(w, local, scoped)
                if steps is None:
                    continue
                regions = [r for _, r in steps if not _empty(r)]
                if all(_disjoint(p, q) for i, p in enumerate(regions) for q in regions[i + 1:]):
                    return self._emit(y, a, self._unpacked(steps, local, scoped))
        return None

    def _spread(self, y: Var, b, w: Var, e: Prim, local: dict, scoped: dict):
        """Rewrite 4: `y = index_update(b, w, R, add)` with `w` a chain of pairwise
        disjoint regions and `R` of static slices and integer indices, some of them
        variables: each piece of the chain is added into its place in `b`."""
        if w.type.dtype != y.type.dtype:
            return None
        outer = _region(y.type.shape, e.p["spec"], e.args[2:], dynamic=True)
        if outer is None:
            return None
        steps = self._chain(w, local, scoped)
        if steps is None:
            return None
        regions = [r for _, r in steps if not _empty(r)]
        if not all(_disjoint(p, q) for i, p in enumerate(regions) for q in regions[i + 1:]):
            return None
        steps = [(v, _compose(outer, r)) for v, r in self._unpacked(steps, local, scoped)]
        return self._emit(y, b, steps)
