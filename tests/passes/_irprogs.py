"""Hand-built IR programs that exercise the derivative passes directly."""

from pullback.ir.builder import Builder
from pullback.ir.core import Const, Func, Prog, Var
from pullback.ir.types import BOOL, F64, I64, TensorType


def inplace_recurrence(size):
    """a = x; for i < n: a[i] = sin(a[i-1]) * x[i]; s = sum(a*a); while s > 1: s = s/2 + sin(s/2)/10."""
    b = Builder()
    x = Var("x", TensorType("f64", (size,)))
    n = Var("n", I64)
    sb = b.child()
    i = sb.fresh("i", I64)
    ap = sb.fresh("a", x.type)
    prev = sb.index(ap, sb.sub(i, Const(1, I64)), spec=(("d",),))
    xi = sb.index(x, i, spec=(("d",),))
    a2 = sb.index_update(ap, sb.mul(sb.sin(prev), xi), i, spec=(("d",),), mode="set")
    (a,) = b.for_loop([ap], [x], i, n, sb.body([a2]))
    s = b.sum(b.mul(a, a), axes=(0,))
    c0 = b.gt(s, Const(1.0, F64))
    wb = b.child()
    sp, cp = wb.fresh("s", F64), wb.fresh("c", BOOL)
    h = wb.mul(sp, Const(0.5, F64))
    s2 = wb.add(h, wb.mul(wb.sin(h), Const(0.1, F64)))
    c2 = wb.gt(s2, Const(1.0, F64))
    (sf, _) = b.while_loop([sp, cp], [s, c0], cp, wb.body([s2, c2]))
    return Prog((Func("f", (x, n), b.body([sf]), (F64,)),), "f")


def recursive(depth_param=True):
    """g(x, n) = x if n == 0 else sin(g(1.1 x, n - 1)) + x."""
    b = Builder()
    x, n = Var("x", F64), Var("n", I64)
    c = b.eq(n, Const(0, I64))
    tb, eb = b.child(), b.child()
    (r,) = eb.apply("g", [eb.mul(x, Const(1.1, F64)), eb.sub(n, Const(1, I64))], [F64])
    y = eb.add(eb.sin(r), x)
    (res,) = b.if_(c, tb.body([x]), eb.body([y]))
    return Prog((Func("g", (x, n), b.body([res]), (F64,)),), "g")


def prefix_writes(size, square_prev=False):
    """a = zeros(n); for i < n: a[i] = x[i] * x[i] + (a[i-1] if i > 0 else 0); return sum(a).
    With `square_prev`, a[i-1] ** 2 instead of a[i-1]: its adjoint reads the old value."""
    b = Builder()
    x = Var("x", TensorType("f64", (size,)))
    z = b.zeros(x.type)
    sb = b.child()
    i = sb.fresh("i", I64)
    ap = sb.fresh("a", x.type)
    xi = sb.index(x, i, spec=(("d",),))
    prev = sb.index(ap, sb.sub(i, Const(1, I64)), spec=(("d",),))
    if square_prev:
        prev = sb.mul(prev, prev)
    v = sb.add(sb.mul(xi, xi), sb.mul(prev, sb.cast(sb.gt(i, Const(0, I64)), dtype="f64")))
    a2 = sb.index_update(ap, v, i, spec=(("d",),), mode="set")
    (a,) = b.for_loop([ap], [z], i, Const(size, I64), sb.body([a2]))
    return Prog((Func("f", (x,), b.body([b.sum(a, axes=(0,))]), (F64,)),), "f")
