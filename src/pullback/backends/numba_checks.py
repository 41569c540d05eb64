"""The index-array check of numba code, compiled once per process (note [compile-time],
"One index check per process").

Contract:
- `_pb_check_idx(idx, n, k)`, callable from numba-compiled code: raises
  ``IndexError(k, i)`` at the first element `i` (in C order) of the integer array
  `idx` outside ``-n <= i < n``; returns nothing otherwise (note
  [run-time-checks]). Called from Python it does the same on a NumPy array.
- An overload: numba compiles it once per process and argument types and links
  it into every caller, where a helper printed into each generated module was
  compiled again for each module (0.2-0.3 s per module and process: ht's
  Jacobian after its objective). The numba dialect prints it where more than
  `numba_loop_helpers.FEW_SITES` sites of a module call it; at fewer sites the
  module keeps its own helper, which numba inlines (`few_helper`).
- Only code printed by the numba dialect imports this module (it imports
  numba); the cache key is the generated source, so a change to this code
  needs a new `numba_backend._VERSION`.
"""
from __future__ import annotations

import numpy as np
from numba.core import types
from numba.extending import overload

IMPORT = "from pullback.backends.numba_checks import _pb_check_idx"


def _pb_check_idx(idx, n, k):
    """Raise IndexError(k, i) at the first index i of `idx` outside [-n, n)."""
    for i in np.asarray(idx).flat:
        if i < -n or i >= n:
            raise IndexError(k, i)


@overload(_pb_check_idx, jit_options={"error_model": "numpy"})
def _pb_check_idx_numba(idx, n, k):
    if not (isinstance(idx, types.Array) and isinstance(idx.dtype, types.Integer)):
        return None

    def impl(idx, n, k):
        for i in idx.flat:
            if i < -n or i >= n:
                raise IndexError(k, i)
    return impl
