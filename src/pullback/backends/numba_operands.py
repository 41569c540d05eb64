"""BLAS operands without copies in numba code (note [blas-operands]).

Contract:
- `_pb_blas(a)`, callable from numba-compiled code (the numba dialect prints
  it around both operands of a 2-D `matmul`): `a` itself when its numba type
  is a C- or F-contiguous array, else `np.ascontiguousarray(a)`, which checks
  at run time and copies only an array that is not contiguous. Numba's `@`
  passes C and F operands to BLAS as they are (an F operand with a transpose
  flag); it copies every array of layout 'A'. So a transposed fresh matrix
  (`x.T`, layout F) reaches BLAS with no copy, where
  `np.ascontiguousarray(x.T)` made a transposing copy. The value is the same
  array either way, so results are unchanged.
- Called from Python (the interpreter never does), it is
  `np.ascontiguousarray(a)`.
- Only code printed by the numba dialect imports this module (it imports
  numba); the cache key is the generated source, so a change to
  `_pb_blas`'s typing needs a new `numba_backend._VERSION`.
"""
from __future__ import annotations

import numpy as np
from numba.core import types
from numba.extending import overload


def _pb_blas(a):
    """The array `a` as a BLAS operand (C- or F-contiguous)."""
    return np.ascontiguousarray(a)


@overload(_pb_blas, inline="always")
def _pb_blas_numba(a):
    if isinstance(a, types.Array) and a.layout in "CF":
        return lambda a: a
    return lambda a: np.ascontiguousarray(a)
