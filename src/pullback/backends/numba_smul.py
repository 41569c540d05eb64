"""The scalar strong product for numba code (note [strong-mul]).

Contract:
- `_pb_smul_s(x, y)`: a numba intrinsic, the float64 strong product of two
  real scalars (float, integer or boolean; each is converted to float64 as
  numba's `x * y` converts it): `r = x * y`, except 0.0 where `r` is NaN and
  `x == 0` or `y == 0`. Exactly the value of the six-statement guard of note
  [edge-numerics] (the sign of a zero product included: only a NaN is
  replaced).
- Code shape: one multiplication, one unordered compare of `r` with itself and
  a branch that LLVM is told is taken rarely; the zero tests run only on that
  branch. Printed as a conditional expression instead, LLVM turns the guard
  into three compares and two selects on every product (its if-conversion
  only keeps a branch it knows is predictable), twice the time of det_lu's
  gradient loop. In a loop the vectoriser still if-converts the branch.
- `_pb_smul_sc(x, c)`, `_pb_smul_cs(c, x)`: the same value, for a loop in which
  the factor `c` does not change: a finite non-zero `c` makes it the plain
  product, a test LLVM hoists out of the loop (note [strong-mul], "Invariant
  factors"); any other `c` takes `_pb_smul_s`'s guard. Exact whatever `c` is:
  printing them where `c` does change costs only speed.
- `_pb_smask_s(y, a, d)`: a numba intrinsic, the float64 value of `smask`
  (`y`, except 0.0 where `a * d` is NaN and `a == 0` or `d == 0`) for real
  scalars, in the same code shape: the product, one unordered compare and a
  rarely taken branch holding the zero tests, where the six-statement guard
  computed every part on every call (note [strong-mul], "Masks").
- Generated modules import them (`backends/libcalls/smul.py`); numba caches the
  functions that use it like any other, keyed on the generated source, so a
  change to its code generation needs a new `numba_backend._VERSION`.
- Only the numba backend imports this module (it imports numba).
"""
from __future__ import annotations

from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

_REAL = (types.Float, types.Integer, types.Boolean)


def _rescued(builder, r, a, b, keep):
    """`keep`, except 0.0 where the product `r` = a * b is NaN and a factor is
    zero: an unordered compare of `r` and a branch marked unlikely that holds
    the zero tests."""
    f64 = ir.DoubleType()
    nan = builder.fcmp_unordered("uno", r, r)
    fast = builder.block
    with builder.if_then(nan, likely=False):
        zero = ir.Constant(f64, 0.0)
        z = builder.or_(builder.fcmp_ordered("==", a, zero), builder.fcmp_ordered("==", b, zero))
        guarded = builder.select(z, zero, keep)
        slow = builder.block
    out = builder.phi(f64)
    out.add_incoming(keep, fast)
    out.add_incoming(guarded, slow)
    return out


@intrinsic
def _pb_smask_s(typingctx, y, a, d):
    if not all(isinstance(t, _REAL) for t in (y, a, d)):
        return None
    sig = types.float64(y, a, d)

    def codegen(context, builder, signature, args):
        v, x, w = (context.cast(builder, args[i], signature.args[i], types.float64) for i in range(3))
        return _rescued(builder, builder.fmul(x, w), x, w, v)

    return sig, codegen


def _plain_unless(builder, r, a, b, c):
    """`r` = a * b where the factor `c` (a or b) is finite and non-zero, else the guard of
    `_rescued`: a test of `c` alone, which LLVM hoists out of a loop that does not change `c`."""
    f64 = ir.DoubleType()
    mag = builder.call(builder.module.declare_intrinsic("llvm.fabs", [f64]), [c])
    plain = builder.and_(builder.fcmp_ordered("<", mag, ir.Constant(f64, float("inf"))),
                         builder.fcmp_ordered("!=", c, ir.Constant(f64, 0.0)))
    fast = builder.block
    with builder.if_then(builder.not_(plain), likely=False):
        guarded = _rescued(builder, r, a, b, r)
        slow = builder.block
    out = builder.phi(f64)
    out.add_incoming(r, fast)
    out.add_incoming(guarded, slow)
    return out


def _smul(name, fixed=None):
    """The strong product intrinsic `name`; `fixed` (0 or 1): the factor a loop printing
    it does not change. A finite non-zero factor makes the strong product the plain one
    (`x * c` is then NaN only where `x` is, and no factor is zero), so with `fixed` the
    loop tests that factor once and computes the plain product (note [strong-mul],
    "Invariant factors")."""
    def smul(typingctx, x, y):
        if not (isinstance(x, _REAL) and isinstance(y, _REAL)):
            return None
        sig = types.float64(x, y)

        def codegen(context, builder, signature, args):
            a, b = (context.cast(builder, args[i], signature.args[i], types.float64) for i in range(2))
            r = builder.fmul(a, b)
            if fixed is None:
                return _rescued(builder, r, a, b, r)
            return _plain_unless(builder, r, a, b, (a, b)[fixed])

        return sig, codegen

    smul.__name__ = smul.__qualname__ = name
    return intrinsic(smul)


_pb_smul_s = _smul("_pb_smul_s")
_pb_smul_cs = _smul("_pb_smul_cs", fixed=0)   # smul(c, x), c the same in the loop
_pb_smul_sc = _smul("_pb_smul_sc", fixed=1)   # smul(x, c)
