"""The reassociable addition of reverse-mode sums for numba code (note
[adjoint-reassoc]).

Contract:
- `_pb_radd(x, y)`: a numba intrinsic, ``x + y`` of two floats of one type
  (float64 or float32), printed as LLVM's ``fadd`` with the ``reassoc``
  fast-math flag and no other: the value of one call is the correctly rounded
  sum (NaN, infinities and signed zeros as ``x + y``), but LLVM may regroup a
  chain of such additions, e.g. split a loop's serial sum into vector partial
  sums. Only the additions that carry a loop's adjoint sum (`Loop.sums`) are
  printed with it; a user's own loop keeps its order.
- Generated modules import it by name; numba caches the functions that use it
  keyed on the generated source, so a change to its code generation needs a
  new `numba_backend._VERSION`.
- Only the numba backend imports this module (it imports numba).
"""
from __future__ import annotations

from numba.core import types
from numba.extending import intrinsic


@intrinsic
def _pb_radd(typingctx, x, y):
    if not (isinstance(x, types.Float) and x == y):
        return None
    sig = x(x, y)

    def codegen(context, builder, signature, args):
        return builder.fadd(args[0], args[1], flags=("reassoc",))

    return sig, codegen
