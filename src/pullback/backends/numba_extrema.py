"""The float extrema of numba code: the NaN-propagating maximum and minimum of two
scalars, as LLVM's ``llvm.maximum`` / ``llvm.minimum`` (note [compile-time],
"Vectorised extrema").

Contract:
- `_pb_fmax(a, b)` / `_pb_fmin(a, b)`: numba intrinsics for two floats of the
  same type: NaN if either is NaN, else the larger (smaller) one; of two zeros
  of different signs, +0.0 is the larger. That is np.max / np.min of the two
  (NumPy leaves the sign of a tie of zeros unspecified).
- Code shape: one call of the LLVM intrinsic, which LLVM's loop vectoriser
  recognises as a reduction (a loop ``out = _pb_fmax(out, x[k])`` becomes
  vector maxima and one final vector reduction), where the select numba
  printed before, ``if v > out or v != v: out = v``, kept the loop scalar.
- Generated modules import them (`numba_loop_helpers`' min and max
  reductions of floats); numba caches the functions that use them like any
  other, keyed on the generated source, so a change to their code generation
  needs a new `numba_backend._VERSION`.
- Only the numba backend imports this module (it imports numba).
"""
from __future__ import annotations

from numba.core import types
from numba.extending import intrinsic


def _typed(a, b, name: str):
    """The signature and code of the intrinsic `name` for floats `a`, `b` (None: not ours)."""
    if not (isinstance(a, types.Float) and a == b):
        return None

    def codegen(context, builder, signature, args):
        from llvmlite import ir

        t = args[0].type
        fn = builder.module.declare_intrinsic(name, [t], ir.FunctionType(t, [t, t]))
        return builder.call(fn, args)

    return a(a, b), codegen


@intrinsic
def _pb_fmax(typingctx, a, b):
    return _typed(a, b, "llvm.maximum")


@intrinsic
def _pb_fmin(typingctx, a, b):
    return _typed(a, b, "llvm.minimum")
