"""The bits of a float64 as an int64 and back, for numba code (note [vecmath],
"Bit casts").

Contract:
- `_pb_f64_bits(x)`: numba intrinsic, the int64 whose bits are those of the
  float64 `x` (``np.float64(x).view(np.int64)``); a real `x` of another type
  is converted to float64 first.
- `_pb_bits_f64(k)`: numba intrinsic, the float64 whose bits are those of the
  int64 `k` (``np.int64(k).view(np.float64)``); an integer `k` of another type
  is converted to int64 first.
- Each is one LLVM ``bitcast``. numba's scalar ``.view`` is a function
  (`scalar_view`) compiled once per process and signature and linked into
  every module that calls the vecmath helpers; the machine code is the same.
- Only code printed by the numba dialect imports this module (it imports
  numba); a change to the code generation here needs a new
  `numba_backend._VERSION`.
"""
from __future__ import annotations

from numba.core import types
from numba.extending import intrinsic

IMPORT = "from pullback.backends.numba_bits import _pb_f64_bits, _pb_bits_f64"


def _bitcast(src_ty, dst_ty):
    """The codegen of a bit cast to `dst_ty` of a value first converted to `src_ty`."""
    def codegen(context, builder, signature, args):
        x = context.cast(builder, args[0], signature.args[0], src_ty)
        return builder.bitcast(x, context.get_value_type(dst_ty))
    return codegen


@intrinsic
def _pb_f64_bits(typingctx, x):
    if not isinstance(x, (types.Float, types.Integer)):
        return None
    return types.int64(x), _bitcast(types.float64, types.int64)


@intrinsic
def _pb_bits_f64(typingctx, k):
    if not isinstance(k, types.Integer):
        return None
    return types.float64(k), _bitcast(types.int64, types.float64)
