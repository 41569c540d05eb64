"""The scalar select of numba code: `where` of scalars (note [compile-time], "Scalar selects").

Contract:
- `_pb_sel(c, x, y)`: a numba intrinsic, ``x if c else y`` for a boolean or
  integer `c` (nonzero is true) and real or boolean scalars `x` and `y`, both
  converted to their unified numba type first (the printer passes them already
  cast to the result's dtype). Both are evaluated, as the arguments of any
  call. Code shape: one LLVM ``select``; no call, no branch, no exception
  check, where a helper function cost a call site with its status test at
  every site (and a function compiled per module) and a conditional
  expression cost branches and a variable defined on two paths.
- Generated modules import it (`numba_exprs`, `where` of scalars); numba
  caches the functions that use it like any other, keyed on the generated
  source, so a change to its code generation needs a new
  `numba_backend._VERSION`.
- Only the numba backend imports this module (it imports numba).
"""
from __future__ import annotations

from numba.core import types
from numba.extending import intrinsic

_VALUES = (types.Float, types.Integer, types.Boolean)


@intrinsic
def _pb_sel(typingctx, c, x, y):
    if not (isinstance(c, (types.Boolean, types.Integer)) and isinstance(x, _VALUES) and isinstance(y, _VALUES)):
        return None
    t = x if x == y else typingctx.unify_pairs(x, y)
    if not isinstance(t, _VALUES):
        return None
    sig = t(c, x, y)

    def codegen(context, builder, signature, args):
        cond = context.cast(builder, args[0], signature.args[0], types.boolean)
        a = context.cast(builder, args[1], signature.args[1], signature.return_type)
        b = context.cast(builder, args[2], signature.args[2], signature.return_type)
        return builder.select(cond, a, b)

    return sig, codegen
