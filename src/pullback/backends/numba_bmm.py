"""Small batched matrix products of numba code, compiled once per process (note
[small-matmul], "Shared batched products").

Contract:
- `_pb_bmm(x, y, nb, m, k, n)`, callable from numba-compiled code: the stack of
  products ``x[b] @ y[b]`` for b < nb, a new C-ordered (nb, m, n) array of
  `x`'s dtype, for 3-D arrays `x` of shape (nb, m, k) and `y` of shape
  (nb, k, n) of one dtype (float64, float32 or int64) and integer literals
  `nb`, `m`, `k`, `n` (the caller guarantees the shapes: the IR's static
  ones). Each entry sums ``x[b, i, l] * y[b, l, j]`` left to right from zero,
  as the batched helper `libcalls.linalg` prints otherwise, so results are
  the same bits. The sizes are literals so that LLVM unrolls the small loops.
  The operands are indexed as they are: read through `numba_views._pb_reshape`
  views of the literal extents, LLVM vectorised the unrolled products into
  vector multiplies with shuffles, 2x slower (a 22 x 4 x 4 stack:
  `benchmarks/bmm_forms.py`).
  Called from Python it returns ``np.matmul(x, y)``.
- An overload: numba compiles it once per process and signature (the literals
  included) and links it into every caller, where a helper printed into each
  generated module was compiled again for each module (ht's Jacobian compiled
  its objective's two 22-matrix products again, 0.4 s).
- Only code printed by the numba dialect imports this module (it imports
  numba); the cache key is the generated source, so a change to this code
  needs a new `numba_backend._VERSION`.
"""
from __future__ import annotations

import numpy as np
from numba.core import types
from numba.extending import overload

from .numba_alloc import _pb_empty

DTYPES = {types.float64: np.float64, types.float32: np.float32, types.int64: np.int64}


def _pb_bmm(x, y, nb, m, k, n):
    """The stack of products x[b] @ y[b] (the Python form of the overload)."""
    return np.matmul(x, y)


@overload(_pb_bmm, prefer_literal=True, jit_options={"error_model": "numpy"})
def _pb_bmm_numba(x, y, nb, m, k, n):
    sizes = (nb, m, k, n)
    if not (all(isinstance(s, types.IntegerLiteral) for s in sizes)
            and isinstance(x, types.Array) and isinstance(y, types.Array)
            and x.ndim == y.ndim == 3 and x.dtype == y.dtype and x.dtype in DTYPES):
        return None
    NB, M, K, N = (int(s.literal_value) for s in sizes)
    DT = DTYPES[x.dtype]

    def impl(x, y, nb, m, k, n):
        out = _pb_empty((NB, M, N), DT)
        for b in range(NB):
            for i in range(M):
                for j in range(N):
                    s = DT(0)
                    for l in range(K):
                        s += x[b, i, l] * y[b, l, j]
                    out[b, i, j] = s
        return out
    return impl
