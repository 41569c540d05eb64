"""Batching rules: a map's lambda body as whole-array code over the map's width
(used by `passes.vectorize`; note [vectorize] in docs/design.md).

Contract: `Batcher(supply, n, loc).run(map_exp, body)` emits, into its builder
`b`, statements computing the map's results without a loop, and returns one
atom per result of the map (stacked results, then final accumulators); it
raises `Bail` when some statement has no rule (the map then stays a map).

Every body variable is *unbatched* (the same in every iteration: its statement
is emitted as it is, under its own name) or *batched* (its outer value has a
leading axis of length n, the iteration's value at index i), or an
*accumulator value*. A batched operand of rank r in a statement whose result
has rank R is reshaped to ``(n, 1, ..., 1, *shape)`` so NumPy's right-aligned
broadcasting lines it up with unbatched operands (JAX's batching rules).

Accumulator updates (the only operations the IR allows on accumulators,
`ir.core.Map`) become one update after the map: `add` of the contribution
summed over the batch (times n when it is the same every iteration);
`index_update` (mode "add") at an index that does not vary, of the summed
value; at an index that varies, a scatter-add (`take_add`) of every
iteration's value, at a flattened index (normalised, and made out of range
when some index is, so the backends' bounds checks still fire at the line).
"""
from __future__ import annotations

import math

from ..ir import names
from ..ir.builder import Builder
from ..ir.core import Body, Const, Let, Map, Prim, Var
from ..ir.prims.indexing import region_shape, takes_index
from ..ir.traverse import free_vars
from ..ir.types import I64, TensorType


class Bail(Exception):
    """A statement without a batching rule: the map stays a map."""


_EFFECTS = frozenset({"store_new", "store_push", "store_pop", "store_copy", "store_zeros_like",
                      "callback", "revolve_split"})
_ELEMENTWISE = frozenset({
    "neg", "sin", "cos", "tan", "exp", "log", "log1p", "expm1", "sqrt", "tanh", "logistic", "abs", "sign",
    "floor", "ceil", "round", "isnan", "not", "add", "sub", "mul", "div", "pow", "maximum", "minimum", "mod",
    "floordiv", "atan2", "lt", "le", "gt", "ge", "eq", "ne", "and", "or", "xor", "where", "cast",
    "stop_gradient", "erf", "erfc", "erfinv", "gammaln", "gamma", "log_ndtr", "polygamma"})


def _c(value, dtype):
    return Const(value, TensorType(dtype))


class Batcher:
    def __init__(self, supply, n: int, loc=None):
        self.b = Builder(supply, loc)
        self.n = n
        self.val: dict = {}        # batched body var -> outer atom (leading axis n)
        self.iota: set = set()     # body vars equal to the map index
        self.acc: dict = {}        # accumulator value (body var) -> its outer atom
        self._iota_var = None

    # -- driver ---------------------------------------------------------------
    def run(self, e: Map, body: Body) -> list:
        n = self.n
        self.val[e.index] = self.iota_var()
        self.iota.add(e.index)
        for p, a in zip(e.elems, e.arrays):
            self.val[p] = a
        for p, a in zip(e.acc_params, e.accs):
            self.acc[p] = a
        for st in body.stmts:
            self.stmt(st)
        k = e.n_out
        out = []
        for r, pv in zip(body.result[:k], e.lam.body.result[:k]):
            if self.is_b(r):
                out.append(self.val[r])
            else:
                if isinstance(r, Var) and r in self.acc:
                    raise Bail("an accumulator as a stacked result")
                shape = (n,) + tuple(r.type.shape)
                out.append(self.b.broadcast_to(r, shape=shape))
        for r in body.result[k:]:
            if not (isinstance(r, Var) and r in self.acc):
                raise Bail("an accumulator result that is not an accumulator")
            out.append(self.acc[r])
        return out

    def iota_var(self):
        if self._iota_var is None:
            self._iota_var = self.b.iota(n=self.n, dtype="i64", name="i")
        return self._iota_var

    def is_b(self, a) -> bool:
        return isinstance(a, Var) and a in self.val

    def get(self, a):
        if isinstance(a, Var):
            if a in self.acc:
                raise Bail("an accumulator read")
            return self.val.get(a, a)
        return a

    def align(self, a, R: int):
        """Operand `a` of a statement with result rank R, as the batched statement reads it."""
        if not self.is_b(a):
            return a
        r = a.type.ndim
        v = self.val[a]
        if r < R:
            v = self.b.reshape(v, shape=(self.n,) + (1,) * (R - r) + tuple(a.type.shape))
        return v

    def stmt(self, st: Let) -> None:
        e = st.exp
        self.b.loc = st.loc
        if not isinstance(e, Prim):
            fv = free_vars(e)
            if any(v in self.val or v in self.acc for v in fv):
                raise Bail(f"{type(e).__name__} depends on the iteration")
            self.b.let(st.pat, e, st.loc)
            return
        if e.op in _EFFECTS:
            raise Bail(f"effect {e.op}")
        if any(isinstance(a, Var) and a in self.acc for a in e.args):
            self.acc_op(st, e)
            return
        if not any(self.is_b(a) for a in e.args):
            self.b.let(st.pat, e, st.loc)   # hoisted: the same in every iteration
            return
        if len(st.pat) != 1:
            raise Bail(f"multi-result {e.op}")
        rule = _RULES.get(e.op)
        if rule is None:
            if e.op not in _ELEMENTWISE:
                raise Bail(f"no batching rule for {e.op}")
            rule = _elementwise
        v = st.pat[0]
        out = rule(self, v, e, e.p)
        want = (self.n,) + tuple(v.type.shape)
        assert tuple(out.type.shape) == want and out.type.dtype == v.type.dtype, (e.op, out.type, want)
        self.val[v] = self._named(out, v)

    def _named(self, out, v):
        """`out`, renamed after the body's variable `v` when the last statement made it."""
        last = self.b.stmts[-1] if self.b.stmts else None
        if last is None or last.pat != (out,) or names.base(v.name) in ("t", "r"):
            return out
        nv = self.b.fresh(names.base(v.name), out.type)
        self.b.stmts[-1] = Let((nv,), last.exp, last.loc)
        return nv

    # -- accumulators ------------------------------------------------------------
    def acc_op(self, st: Let, e: Prim) -> None:
        b = self.b
        op = e.op
        if op == "add":
            accs = [a for a in e.args if isinstance(a, Var) and a in self.acc]
            if len(accs) != 1:
                raise Bail("add of two accumulator values")
            c = e.args[1] if e.args[0] is accs[0] or e.args[0] == accs[0] else e.args[0]
            new = b.add(self.acc[accs[0]], self.summed(c))
        elif op == "index_update" and e.p["mode"] == "add" and isinstance(e.args[0], Var) \
                and e.args[0] in self.acc:
            x, v, *idx = e.args
            new = self.scatter_add(self.acc[x], x, v, idx, e.p["spec"])
        elif op == "take_add" and isinstance(e.args[0], Var) and e.args[0] in self.acc:
            x, i, v = e.args
            new = self.acc_take_add(self.acc[x], x, i, v, e.p["axis"])
        else:
            raise Bail(f"{op} of an accumulator")
        v = st.pat[0]
        if new.type != v.type:
            raise Bail(f"{op} changes an accumulator's type")
        self.acc[v] = self._named(new, v)

    def summed(self, c):
        """The sum over the iterations of operand `c`."""
        if self.is_b(c):
            return self.b.sum(self.get(c), axes=(0,))
        cv = self.get(c)
        return self.b.mul(cv, _c(self.n if cv.type.dtype in ("i64", "bool") else float(self.n),
                                 "i64" if cv.type.dtype == "bool" else cv.type.dtype))

    def scatter_add(self, A, x, v, idx, spec):
        b, n = self.b, self.n
        if any(isinstance(i, Var) and i in self.acc for i in idx) or (isinstance(v, Var) and v in self.acc):
            raise Bail("an accumulator read")
        bidx = [self.is_b(i) for i in idx]
        if not any(bidx):
            return b.index_update(A, self.summed(v), *[self.get(i) for i in idx], spec=spec, mode="add")
        region = region_shape(tuple(x.type.shape), spec)
        vfull = self.full_values(v, region)                       # (n, *region)
        # one varying index, first in the spec: a slice (the map index) or a gather along axis 0
        if spec and spec[0][0] == "d" and bidx == [True] + [False] * (len(idx) - 1):
            i0 = idx[0]
            D = x.type.shape[0]
            if len(spec) == 1:
                if i0 in self.iota and D >= n:
                    return b.index_update(A, vfull, spec=(("s", 0, n, 1),), mode="add")
                return b.take_add(A, self.get(i0), vfull, axis=0)
        flat, total = self.flat_index(x, None, idx, spec, region)   # (n, *region) positions in x
        Af = b.reshape(A, shape=(total,))
        return b.reshape(b.take_add(Af, flat, vfull, axis=0), shape=tuple(x.type.shape))

    def acc_take_add(self, A, x, i, v, axis):
        b = self.b
        if not self.is_b(i):
            return b.take_add(A, self.get(i), self.summed(v), axis=axis)
        iv = self.get(i)
        ishape = tuple(i.type.shape)
        vshape = tuple(x.type.shape[:axis]) + ishape + tuple(x.type.shape[axis + 1:])
        vv = self.full_values(v, vshape)                           # (n, *vshape)
        if axis:
            nd = len(vshape) + 1
            vv = b.transpose(vv, perm=tuple(range(1, axis + 1)) + (0,) + tuple(range(axis + 1, nd)))
        return b.take_add(A, iv, vv, axis=axis)

    def full_values(self, v, region):
        """Every iteration's value `v` broadcast to `region`: shape (n, *region)."""
        b, n = self.b, self.n
        want = (n,) + tuple(region)
        vv = self.align(v, len(region)) if self.is_b(v) else self.get(v)
        if tuple(vv.type.shape) != want:
            vv = b.broadcast_to(vv, shape=want)
        return vv

    def flat_index(self, x, xb, idx, spec, region):
        """Positions, in the flattened x (of the batch too when `xb`, x's batched
        outer value, is given), of every element of every iteration's region:
        an i64 array (n, *region), and the flattened size. Indices are
        normalised (negative ones count from the end); an out-of-range one
        makes every position of its iteration out of range."""
        b, n = self.b, self.n
        shape = tuple(x.type.shape)
        strides = [math.prod(shape[a + 1:]) for a in range(len(shape))]
        total = math.prod(shape) * (n if xb is not None else 1)
        R = len(region)
        it = iter(idx)
        base = _c(0, "i64")        # the offset of each iteration's region: scalar or (n,)
        ok = None
        offs = []                  # (axis of the region, offsets along it)
        ra = 0
        for a, s in enumerate(spec):
            if takes_index(s):
                i = next(it)
                iv = self.get(i)
                if s[0] == "ds" and self.is_b(i):
                    raise Bail("a dynamic slice whose start varies")
                D = shape[a]
                if i not in self.iota or s[0] == "ds":
                    if s[0] == "d":
                        iv = b.where(b.lt(iv, _c(0, "i64")), b.add(iv, _c(D, "i64")), iv)
                        lim = D
                    else:
                        lim = D - s[1] + 1
                    good = b.and_(b.ge(iv, _c(0, "i64")), b.lt(iv, _c(lim, "i64")))
                    ok = good if ok is None else b.and_(ok, good)
                elif D < n:
                    good = b.lt(iv, _c(D, "i64"))
                    ok = good if ok is None else b.and_(ok, good)
                base = b.add(base, b.mul(iv, _c(strides[a], "i64")))
                if s[0] == "ds":
                    offs.append((ra, [strides[a] * j for j in range(s[1])]))
                    ra += 1
            else:
                r = range(*slice(s[1], s[2], s[3]).indices(shape[a]))
                offs.append((ra, [strides[a] * j for j in r]))
                ra += 1
        for a in range(len(spec), len(shape)):
            offs.append((ra, [strides[a] * j for j in range(shape[a])]))
            ra += 1
        if xb is not None:
            base = b.add(base, b.mul(self.iota_var(), _c(math.prod(shape), "i64")))
        if ok is not None:
            base = b.where(ok, base, _c(total, "i64"))
        pos = self.align_scalar(base, R)                            # (n, 1, ..., 1)
        for ax, o in offs:
            oshape = [1] * (R + 1)
            oshape[ax + 1] = len(o)
            pos = b.add(pos, Const(_np_i64(o).reshape(oshape), TensorType("i64", tuple(oshape))))
        want = (n,) + tuple(region)
        if tuple(pos.type.shape) != want:
            pos = b.broadcast_to(pos, shape=want)
        return pos, total

    def align_scalar(self, s, R):
        """A per-iteration scalar, (n,) or (), as (n, 1, ..., 1) of rank R + 1."""
        b, n = self.b, self.n
        if s.type.shape == ():
            s = b.broadcast_to(s, shape=(n,))
        return b.reshape(s, shape=(n,) + (1,) * R) if R else s


def _np_i64(values):
    import numpy as np

    return np.asarray(values, dtype=np.int64)


# -- rules: (batcher, result var, prim, params) -> outer atom with shape (n, *result) ----

def _elementwise(bt, v, e, p):
    R = v.type.ndim
    return bt.b.emit(e.op, *[bt.align(a, R) for a in e.args], **p)


def _reduce(bt, v, e, p):
    return bt.b.emit(e.op, bt.get(e.args[0]), axes=tuple(a + 1 for a in p["axes"]))


def _arg(bt, v, e, p):
    return bt.b.emit(e.op, bt.get(e.args[0]), axis=p["axis"] + 1)


def _argsort(bt, v, e, p):
    return bt.b.argsort(bt.get(e.args[0]))


def _reshape(bt, v, e, p):
    return bt.b.reshape(bt.get(e.args[0]), shape=(bt.n,) + tuple(p["shape"]))


def _transpose(bt, v, e, p):
    return bt.b.transpose(bt.get(e.args[0]), perm=(0,) + tuple(q + 1 for q in p["perm"]))


def _broadcast_to(bt, v, e, p):
    shape = tuple(p["shape"])
    x = bt.align(e.args[0], len(shape))
    return bt.b.broadcast_to(x, shape=(bt.n,) + shape)


def _full(bt, v, e, p):
    shape = tuple(p["shape"])
    x = bt.align(e.args[0], len(shape))
    return bt.b.broadcast_to(x, shape=(bt.n,) + shape)


def _concatenate(bt, v, e, p):
    parts = []
    for a in e.args:
        if bt.is_b(a):
            parts.append(bt.get(a))
        else:
            parts.append(bt.b.broadcast_to(a, shape=(bt.n,) + tuple(a.type.shape)))
    return bt.b.concatenate(*parts, axis=p["axis"] + 1)


def _index(bt, v, e, p):
    b, n = bt.b, bt.n
    x, *idx = e.args
    spec = tuple(p["spec"])
    bidx = [bt.is_b(i) for i in idx]
    if not any(bidx):   # x varies, the indices do not
        return b.index(bt.get(x), *[bt.get(i) for i in idx], spec=(("s", 0, n, 1),) + spec)
    region = region_shape(tuple(x.type.shape), spec)
    if not bt.is_b(x):
        # one varying index ("d"): a slice when it is the map index, else a gather along its axis
        pos = [k for k, s in enumerate(spec) if takes_index(s)]
        varying = [pos[j] for j, f in enumerate(bidx) if f]
        if len(varying) == 1 and spec[varying[0]][0] == "d":
            a = varying[0]
            i = idx[bidx.index(True)]
            xs = tuple(x.type.shape)
            pre = tuple(("s", 0, xs[k], 1) if k == a else s for k, s in enumerate(spec))
            rest = [bt.get(j) for j, f in zip(idx, bidx) if not f]
            y = b.index(x, *rest, spec=pre) if any(s != ("s", 0, d, 1) for s, d in zip(pre, xs)) else x
            ya = sum(1 for s in spec[:a] if s[0] != "d")          # the axis of y it indexes
            D = x.type.shape[a]
            if i in bt.iota and D >= n:
                y = b.index(y, spec=tuple(("s", 0, d, 1) for d in y.type.shape[:ya]) + (("s", 0, n, 1),))
            else:
                y = b.take(y, bt.get(i), axis=ya)
            if ya:
                nd = y.type.ndim
                y = b.transpose(y, perm=(ya,) + tuple(k for k in range(nd) if k != ya))
            return y
    xb = bt.get(x) if bt.is_b(x) else None
    flat, total = bt.flat_index(x, xb, idx, spec, region)
    src = b.reshape(xb if xb is not None else x, shape=(total,))
    return b.take(src, flat, axis=0)


def _index_update(bt, v, e, p):
    b, n = bt.b, bt.n
    x, val, *idx = e.args
    spec = tuple(p["spec"])
    if any(bt.is_b(i) for i in idx):
        raise Bail("an update at an index that varies (not an accumulator)")
    X = bt.get(x) if bt.is_b(x) else _fresh_batch(bt, x)
    region = region_shape(tuple(x.type.shape), spec)
    vv = bt.align(val, len(region)) if bt.is_b(val) else val
    return b.index_update(X, vv, *[bt.get(i) for i in idx], spec=(("s", 0, n, 1),) + spec, mode=p["mode"])


def _fresh_batch(bt, x):
    """An unbatched array repeated along a new leading axis, as a fresh array."""
    b = bt.b
    shape = (bt.n,) + tuple(x.type.shape)
    if x.type.dtype == "bool":
        return b.or_(b.full(_c(False, "bool"), shape=shape), x)
    return b.add(b.full(_c(0, x.type.dtype), shape=shape), x)


def _take(bt, v, e, p):
    b = bt.b
    x, i = e.args
    axis = p["axis"]
    if bt.is_b(x) and bt.is_b(i):
        raise Bail("a gather of a varying array at varying indices")
    if bt.is_b(x):
        return b.take(bt.get(x), i, axis=axis + 1)
    y = b.take(x, bt.get(i), axis=axis)             # x[:axis] + (n, *ishape) + rest
    if axis:
        nd = y.type.ndim
        y = b.transpose(y, perm=(axis,) + tuple(k for k in range(nd) if k != axis))
    return y


def _take_add(bt, v, e, p):
    x, i, val = e.args
    if bt.is_b(i):
        raise Bail("a scatter-add at varying indices (not an accumulator)")
    X = bt.get(x) if bt.is_b(x) else _fresh_batch(bt, x)
    vv = bt.align(val, val.type.ndim) if bt.is_b(val) else bt.b.broadcast_to(
        val, shape=(bt.n,) + tuple(val.type.shape))
    return bt.b.take_add(X, i, vv, axis=p["axis"] + 1)


def _matmul(bt, v, e, p):
    b, n = bt.b, bt.n
    a, c = e.args
    A, C = bt.get(a), bt.get(c)
    ab, cb = bt.is_b(a), bt.is_b(c)
    ra, rc = a.type.ndim, c.type.ndim
    out = (n,) + tuple(v.type.shape)
    if ab and not cb and rc <= 2:   # the batch joins a's rows: one 2-D product
        k = a.type.shape[-1]
        r = b.matmul(b.reshape(A, shape=(A.type.size // k, k)) if ra != 1 else A, c)
        return r if tuple(r.type.shape) == out else b.reshape(r, shape=out)
    if cb and not ab and rc == 1 and ra <= 2:
        r = b.matmul(C, b.transpose(a, perm=(1, 0)) if ra == 2 else a)   # (n, k) @ a^T
        return r
    if cb and not ab and rc == 2 and ra <= 2:
        k, m = c.type.shape
        ct = b.reshape(b.transpose(C, perm=(1, 0, 2)), shape=(k, n * m))
        r = b.matmul(a, ct)                                     # (p, n*m) or (n*m,)
        if ra == 1:
            return b.reshape(r, shape=out)
        pdim = a.type.shape[0]
        return b.transpose(b.reshape(r, shape=(pdim, n, m)), perm=(1, 0, 2))
    if ab and cb and ra == 1 and rc == 1:
        return b.sum(b.mul(A, C), axes=(1,))
    # stacked products: promote vectors, line the batch up, one stacked matmul
    sa = tuple(a.type.shape) if ra >= 2 else (1,) + tuple(a.type.shape)
    sc = tuple(c.type.shape) if rc >= 2 else tuple(c.type.shape) + (1,)
    R = max(len(sa), len(sc))
    A2 = b.reshape(A, shape=((n,) if ab else ()) + (1,) * ((R - len(sa)) if ab else 0) + sa) \
        if (ab or ra == 1) else A
    C2 = b.reshape(C, shape=((n,) if cb else ()) + (1,) * ((R - len(sc)) if cb else 0) + sc) \
        if (cb or rc == 1) else C
    r = b.matmul(A2, C2)
    return r if tuple(r.type.shape) == out else b.reshape(r, shape=out)


_RULES = {
    "sum": _reduce, "prod": _reduce, "max": _reduce, "min": _reduce,
    "argmax": _arg, "argmin": _arg, "argsort": _argsort,
    "reshape": _reshape, "transpose": _transpose, "broadcast_to": _broadcast_to, "full": _full,
    "concatenate": _concatenate, "index": _index, "index_update": _index_update,
    "take": _take, "take_add": _take_add, "matmul": _matmul,
}
