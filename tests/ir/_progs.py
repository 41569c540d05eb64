"""Hand-written IR programs shared by the IR and backend tests."""
from __future__ import annotations

import numpy as np

from pullback.ir.builder import Builder
from pullback.ir.core import Const, Func, Prog, SrcLoc, Var
from pullback.ir.names import NameSupply
from pullback.ir.types import BOOL, F64, I64, TensorType

V3 = TensorType("f64", (3,))


def loop_update_prog() -> Prog:
    """a = zeros(3); for i < 3: a[i] = x[i] * s; return sum(a), a  (in-place candidate)."""
    sp = NameSupply()
    b = Builder(sp, loc=SrcLoc("demo.py", 3, "a = np.zeros(3)"))
    x = Var(sp.fresh("x"), V3)
    s = Var(sp.fresh("s"), F64)
    a0 = b.zeros(V3, name="a")
    a = b.fresh("a", V3)
    i = b.fresh("i", I64)
    lb = Builder(sp, loc=SrcLoc("demo.py", 5, "a[i] = x[i] * s"))
    xi = lb.index(x, i, spec=(("d",),), name="xi")
    v = lb.mul(xi, s, name="v")
    a2 = lb.index_update(a, v, i, spec=(("d",),), mode="set", name="a")
    (a_out,) = b.for_loop([a], [a0], i, Const(3, I64), lb.body([a2]), names=["a"])
    tot = b.sum(a_out, axes=(0,), name="total")
    f = Func("f", (x, s), b.body([tot, a_out]), (F64, V3))
    return Prog((f,), "f")


def recursive_prog() -> Prog:
    """fact(n) = 1 if n <= 0 else n * fact(n - 1), with a while loop caller."""
    sp = NameSupply()
    n = Var(sp.fresh("n"), I64)
    b = Builder(sp)
    c = b.le(n, Const(0, I64), name="base")
    tb = b.sub()
    eb = b.sub()
    m = eb.sub_(n, Const(1, I64), name="m") if False else eb.emit("sub", n, Const(1, I64), name="m")
    (r,) = eb.apply("fact", [m], [I64], names=["r"])
    nr = eb.mul(n, r, name="nr")
    (out,) = b.if_(c, tb.body([Const(1, I64)]), eb.body([nr]), names=["out"])
    fact = Func("fact", (n,), b.body([out]), (I64,))

    sp2 = NameSupply()
    k = Var(sp2.fresh("k"), I64)
    x = Var(sp2.fresh("x"), F64)
    b2 = Builder(sp2)
    (fk,) = b2.apply("fact", [k], [I64], names=["fk"])
    go = b2.fresh("go", BOOL)
    acc = b2.fresh("acc", F64)
    wb = b2.sub()
    acc2 = wb.mul(acc, Const(0.5, F64), name="acc")
    go2 = wb.gt(acc2, Const(1.0, F64), name="go")
    (go_o, acc_o) = b2.while_loop([go, acc], [Const(True, BOOL), x], go, wb.body([go2, acc2]))
    fkf = b2.cast(fk, dtype="f64", name="fkf")
    y = b2.add(acc_o, fkf, name="y")
    main = Func("main", (k, x), b2.body([y]), (F64,))
    return Prog((fact, main), "main")


def arrays_prog() -> Prog:
    """Array constants, params of every kind, stores, multi-output lets."""
    sp = NameSupply()
    m = Var(sp.fresh("m"), TensorType("f64", (2, 3)))
    v = Var(sp.fresh("v"), V3)
    b = Builder(sp)
    c = Const(np.array([[1.0, -2.5, 3e-300], [np.inf, -0.0, 1e20]]), TensorType("f64", (2, 3)))
    t = b.add(m, c, name="t")
    mv = b.matmul(t, v, name="mv")
    sl = b.index(t, Const(1, I64), spec=(("d",), ("s", 0, 3, 2)), name="sl")
    st = b.emit("store_new", elem=V3, name="st")
    st = b.store_push(st, v, name="st")
    st2, pv = b.emit_multi("store_pop", st, name="st")
    ta = b.take_add(v, Const(np.array([0, 2, 2]), TensorType("i64", (3,))), pv, axis=0, name="ta")
    tr = b.transpose(t, perm=(1, 0), name="tr")
    flags = b.gt(v, Const(0.0, F64), name="flags")
    w = b.where(flags, v, Const(-1.0, F64), name="w")
    f32 = b.cast(w, dtype="f32", name="w32")
    s32 = b.sum(f32, axes=(0,), name="s32")
    f = Func("g", (m, v), b.body([mv, sl, ta, tr, s32]), (TensorType("f64", (2,)), TensorType("f64", (2,)), V3,
                                                      TensorType("f64", (3, 2)), TensorType("f32")))
    return Prog((f,), "g")


ALL = {"loop_update": loop_update_prog, "recursive": recursive_prog, "arrays": arrays_prog}
