"""Random well-typed IR programs for property tests (printer/parser round trip,
type checker, backends agreeing with the interpreter).

`gen_prog(pick)` builds a program from a stream of choices: `pick(lo, hi)`
returns an int in [lo, hi]. Drive it with Hypothesis (`hyp_pick(data)`) or a
`random.Random` (`rng_pick(rng)`). `gen_args(prog, rng)` makes argument values.

Programs stay in a numerically boring domain only where the IR has no
definition otherwise (indices are reduced with `mod`; loops are short); NaNs and
infinities are allowed and compared with equal_nan.
"""
from __future__ import annotations

import numpy as np

from pullback.ir.builder import Builder
from pullback.ir.core import Const, Func, Prog, Var
from pullback.ir.names import NameSupply
from pullback.ir.types import F64, I64, BOOL, TensorType

UNARY = ["neg", "sin", "cos", "tan", "exp", "log", "log1p", "expm1", "sqrt", "tanh", "logistic",
         "abs", "sign", "floor", "ceil", "round"]
BINARY = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "mod", "atan2"]
COMPARE = ["lt", "le", "gt", "ge", "eq", "ne"]

PARAMS = [
    ("x", TensorType("f64", (3,))),
    ("y", TensorType("f64", (3,))),
    ("m", TensorType("f64", (2, 3))),
    ("a", F64),
    ("n", I64),
]
HELPER_PARAMS = [("u", TensorType("f64", (3,))), ("s", F64)]


def hyp_pick(data):
    from hypothesis import strategies as st

    return lambda lo, hi: data.draw(st.integers(lo, hi))


def rng_pick(rng):
    return lambda lo, hi: rng.randint(lo, hi)


class Gen:
    def __init__(self, pick, supply: NameSupply, funcs: dict):
        self.pick = pick
        self.supply = supply
        self.funcs = funcs  # name -> Func callable from here

    def choice(self, xs):
        return xs[self.pick(0, len(xs) - 1)]

    # -- pools --------------------------------------------------------------
    def of(self, scope, pred):
        return [v for v in scope if pred(v.type)]

    def float_var(self, scope, b):
        vs = self.of(scope, lambda t: isinstance(t, TensorType) and t.dtype == "f64")
        if not vs:
            return b.const(self.pick(-3, 3) * 0.5)
        return self.choice(vs)

    def operand(self, scope, b, shape_with=None):
        """A float atom broadcast-compatible with `shape_with` (or any)."""
        vs = self.of(scope, lambda t: isinstance(t, TensorType) and t.dtype in ("f64", "i64"))
        if shape_with is not None:
            vs = [v for v in vs if _bcast_ok(v.type.shape, shape_with)]
        if not vs or self.pick(0, 5) == 0:
            if self.pick(0, 1):
                return Const(self.pick(-4, 4) * 0.75, F64)
            return Const(self.pick(-2, 3), I64)
        return self.choice(vs)

    # -- statements -----------------------------------------------------------
    def stmts(self, b: Builder, scope: list, count: int, depth: int):
        from pullback.errors import ShapeError

        for _ in range(count):
            n0 = len(b.stmts)
            try:
                v = self.stmt(b, scope, depth)
            except ShapeError:  # an operand combination the type rule rejects: skip it
                del b.stmts[n0:]
                v = None
            if v is not None:
                scope.extend(v if isinstance(v, tuple) else (v,))

    def stmt(self, b: Builder, scope: list, depth: int):
        kind = self.pick(0, 17)
        if kind <= 3:
            x = self.float_var(scope, b)
            op = self.choice(UNARY)
            if isinstance(x, Const):
                return None
            return b.emit(op, x, name=op[:3])
        if kind <= 6:
            x = self.operand(scope, b)
            sx = x.type.shape
            y = self.operand(scope, b, sx)
            op = self.choice(BINARY + COMPARE)
            if isinstance(x, Const) and isinstance(y, Const):
                return None
            if op in ("pow", "mod") and x.type.dtype == "i64" and y.type.dtype == "i64":
                op = "mul"  # negative powers and zero divisors of ints raise (issue 8)
            return b.emit(op, x, y, name="c" if op in COMPARE else "t")
        if kind == 7:  # reductions
            xs = self.of(scope, lambda t: isinstance(t, TensorType) and t.ndim >= 1 and t.dtype == "f64")
            if not xs:
                return None
            x = self.choice(xs)
            op = self.choice(["sum", "max", "min", "prod", "argmax"])
            if op == "argmax":
                return b.argmax(x, axis=self.pick(0, x.type.ndim - 1), name="am")
            nd = x.type.ndim
            axes = self.choice([tuple(range(nd)), (self.pick(0, nd - 1),), ()])
            return b.emit(op, x, axes=axes, name=op)
        if kind == 8:  # shape ops
            xs = self.of(scope, lambda t: isinstance(t, TensorType) and t.ndim >= 1)
            if not xs:
                return None
            x = self.choice(xs)
            k = self.pick(0, 3)
            if k == 0:
                return b.reshape(x, shape=(x.type.size,) if x.type.ndim > 1 else (1, x.type.size), name="r")
            if k == 1:
                return b.transpose(x, perm=tuple(reversed(range(x.type.ndim))), name="tr")
            if k == 2:
                return b.broadcast_to(x, shape=(2,) + x.type.shape, name="bc")
            return b.concatenate(x, x, axis=0, name="cat")
        if kind == 9:  # indexing with a computed index
            xs = self.of(scope, lambda t: isinstance(t, TensorType) and t.ndim >= 1)
            ints = self.of(scope, lambda t: t == I64)
            if not xs:
                return None
            x = self.choice(xs)
            d0 = x.type.shape[0]
            if ints and self.pick(0, 1):
                i = b.mod(self.choice(ints), Const(d0, I64), name="i")
            else:
                i = Const(self.pick(0, d0 - 1), I64)
            k = self.pick(0, 3)
            if k == 0:
                return b.index(x, i, spec=(("d",),), name="el")
            if k == 1:
                return b.index(x, spec=(("s", 0, max(1, d0 - 1), 1),), name="sl")
            region = x.type.shape[1:]
            if k == 2:
                v = b.full(Const(self.pick(-2, 2) * 1.0, TensorType(x.type.dtype)), shape=region, name="fill") \
                    if region and self.pick(0, 1) else Const(self.pick(-2, 2) * 1.5, F64)
                if x.type.dtype != "f64" and isinstance(v, Const):
                    return None
                return b.index_update(x, v, i, spec=(("d",),), mode=self.choice(["set", "add"]), name="upd")
            return b.index_update(x, Const(2.5, F64) if x.type.dtype == "f64" else Const(1, I64),
                                  spec=(("s", 1, d0, 1),), mode="add", name="upd") if x.type.dtype in ("f64", "i64") else None
        if kind == 10:  # gathers
            xs = self.of(scope, lambda t: isinstance(t, TensorType) and t.ndim >= 1 and t.dtype == "f64")
            if not xs:
                return None
            x = self.choice(xs)
            d0 = x.type.shape[0]
            idx = Const(np.array([self.pick(0, d0 - 1) for _ in range(4)]), TensorType("i64", (4,)))
            g = b.take(x, idx, axis=0, name="g")
            if self.pick(0, 1):
                return g
            return b.take_add(x, idx, g, axis=0, name="ta")
        if kind == 11:  # constructors, casts, where, matmul
            k = self.pick(0, 5)
            if k == 0:
                return b.iota(n=self.pick(1, 4), dtype=self.choice(["i64", "f64"]), name="io")
            if k == 1:
                return b.full(Const(self.pick(-3, 3) * 0.5, F64), shape=(3,), name="fl")
            if k == 2:
                xs = self.of(scope, lambda t: isinstance(t, TensorType))
                x = self.choice(xs)
                return b.cast(x, dtype=self.choice(["f64", "i64", "f32", "bool"]), name="cv")
            if k == 3:
                cs = self.of(scope, lambda t: isinstance(t, TensorType) and t.dtype == "bool")
                if not cs:
                    return None
                c = self.choice(cs)
                x = self.operand(scope, b, c.type.shape)
                y = self.operand(scope, b, c.type.shape)
                return b.where(c, x, y, name="w")
            if k == 4:
                ms = self.of(scope, lambda t: t == TensorType("f64", (2, 3)))
                vs = self.of(scope, lambda t: t == TensorType("f64", (3,)))
                if not ms or not vs:
                    return None
                return b.matmul(self.choice(ms), self.choice(vs), name="mv")
            fs = self.of(scope, lambda t: isinstance(t, TensorType) and t.dtype == "f32")
            if len(fs) >= 1:
                x = self.choice(fs)
                ys = self.of(scope, lambda t: isinstance(t, TensorType) and t.dtype in ("f32", "f64")
                             and _bcast_ok(t.shape, x.type.shape))
                return b.emit(self.choice(["add", "mul", "sub", "lt"]), x, self.choice(ys), name="h")
            return None
        if kind == 12:  # stores
            xs = self.of(scope, lambda t: isinstance(t, TensorType))
            x = self.choice(xs)
            s = b.emit("store_new", elem=x.type, name="st")
            s = b.store_push(s, x, name="st")
            if self.pick(0, 1):
                s = b.store_push(s, x, name="st")
                s, _ = b.emit_multi("store_pop", s, name="st")
            s2, v = b.emit_multi("store_pop", s, name="popped")
            return v
        if kind == 13 and depth < 2:  # if
            ss = self.of(scope, lambda t: isinstance(t, TensorType) and t.shape == () and t.dtype != "bool")
            if not ss:
                return None
            c = b.lt(self.choice(ss), Const(self.pick(-1, 1) * 0.5, F64), name="cond")
            outs = self._pick_types(scope)
            bodies = []
            for _ in range(2):
                sb = b.sub()
                sc = list(scope)
                self.stmts(sb, sc, self.pick(0, 3), depth + 1)
                bodies.append(sb.body([self._of_type(sc, t) for t in outs]))
            return b.if_(c, bodies[0], bodies[1], names=["r"] * len(outs))
        if kind == 14 and depth < 2:  # for loop
            ps = self._pick_types(scope)
            params = [b.fresh("acc", t) for t in ps]
            init = [self._of_type(scope, t) for t in ps]
            idx = b.fresh("i", I64)
            ints = self.of(scope, lambda t: t == I64 and True)
            bound = Const(self.pick(0, 3), I64)
            if "n" in [v.name for v in ints] and self.pick(0, 1):
                bound = [v for v in ints if v.name == "n"][0]
            sb = b.sub()
            sc = list(scope) + params + [idx]
            self.stmts(sb, sc, self.pick(1, 4), depth + 1)
            body = sb.body([self._of_type(sc, t) for t in ps])
            return b.for_loop(params, init, idx, bound, body, names=["acc"] * len(ps))
        if kind == 15 and depth < 2:  # while loop with a counter
            ps = self._pick_types(scope)
            cnt = b.fresh("cnt", I64)
            go = b.fresh("go", BOOL)
            params = [b.fresh("w", t) for t in ps]
            init = [self._of_type(scope, t) for t in ps]
            sb = b.sub()
            sc = list(scope) + params
            self.stmts(sb, sc, self.pick(0, 3), depth + 1)
            cnt2 = sb.add(cnt, Const(1, I64), name="cnt")
            go2 = sb.lt(cnt2, Const(self.pick(0, 3), I64), name="go")
            body = sb.body([cnt2, go2] + [self._of_type(sc, t) for t in ps])
            outs = b.while_loop([cnt, go] + params, [Const(0, I64), Const(True, BOOL)] + init, go, body)
            return outs[2:] + outs[:1]
        if kind == 16 and self.funcs:  # call
            fname = self.choice(sorted(self.funcs))
            f = self.funcs[fname]
            args = [self._of_type(scope, p.type) for p in f.params]
            if any(a is None for a in args):
                return None
            return b.apply(fname, args, f.ret_types, names=["ret"] * len(f.ret_types))
        return None

    def _pick_types(self, scope):
        ts = [v.type for v in scope if isinstance(v.type, TensorType)]
        k = self.pick(0, 2)
        return [self.choice(ts) for _ in range(k)]

    def _of_type(self, scope, t):
        vs = [v for v in scope if v.type == t]
        if not vs:
            if t.shape == ():
                return Const({"f64": 1.0, "f32": 1.0, "i64": 1, "bool": True}[t.dtype], t)
            return None
        # prefer recent values
        return vs[-1 - self.pick(0, min(3, len(vs) - 1))]


def _bcast_ok(s1, s2):
    try:
        np.broadcast_shapes(tuple(s1), tuple(s2))
        return True
    except ValueError:
        return False


def gen_func(pick, name, params, funcs, nstmts, nres=2):
    supply = NameSupply()
    ps = tuple(Var(supply.fresh(n), t) for n, t in params)
    b = Builder(supply)
    g = Gen(pick, supply, funcs)
    scope = list(ps)
    g.stmts(b, scope, nstmts, 0)
    tensors = [v for v in scope if isinstance(v.type, TensorType)]
    res = [tensors[-1 - g.pick(0, min(len(tensors) - 1, 5))] for _ in range(nres)]
    return Func(name, ps, b.body(res), tuple(v.type for v in res))


def gen_prog(pick, max_stmts=8) -> Prog:
    funcs = {}
    out = []
    if pick(0, 1):
        h = gen_func(pick, "helper", HELPER_PARAMS, {}, pick(0, 4), nres=1)
        funcs["helper"] = h
        out.append(h)
    f = gen_func(pick, "f", PARAMS, funcs, pick(1, max_stmts))
    out.append(f)
    return Prog(tuple(out), "f")


def gen_args(prog: Prog, rng) -> list:
    args = []
    for p in prog.main.params:
        t = p.type
        if t.dtype == "i64":
            args.append(np.int64(rng.randint(0, 3)) if not t.shape else np.array([rng.randint(0, 3) for _ in range(t.size)]).reshape(t.shape))
        elif t.shape:
            args.append(np.array([rng.uniform(-2, 2) for _ in range(t.size)]).reshape(t.shape))
        else:
            args.append(np.float64(rng.uniform(-2, 2)))
    return args


def values_equal(a, b) -> bool:
    """Same values, shapes and dtypes (NaNs equal)."""
    from pullback.ir.prims.stores import StoreValue

    if isinstance(a, StoreValue) or isinstance(b, StoreValue):
        return (isinstance(a, StoreValue) and isinstance(b, StoreValue) and len(a.items) == len(b.items)
                and all(values_equal(x, y) for x, y in zip(a.items, b.items)))
    a2, b2 = np.asarray(a), np.asarray(b)
    if a2.shape != b2.shape or a2.dtype != b2.dtype:
        return False
    return bool(np.array_equal(a2, b2, equal_nan=a2.dtype.kind == "f"))
