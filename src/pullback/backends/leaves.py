"""Argument leaves at a compiled function's boundary, shared by the pysource and
numba runners (light: NumPy only, so a warm start need not import an emitter).

Contract: `coerce(a, dt)` gives leaf `a` as the parameter's NumPy array or
scalar, where `dt` is `(numpy dtype, is_array)` or None (a store or other
non-tensor value, passed as is); arrays already of that dtype pass unchanged.
"""
from __future__ import annotations

import numpy as np


def coerce(a, dt):
    if dt is None:
        return a
    npdt, is_array = dt
    if is_array:
        return a if isinstance(a, np.ndarray) and a.dtype == npdt else np.asarray(a, dtype=npdt)
    if isinstance(a, np.generic) and a.dtype == npdt:
        return a
    return np.asarray(a, dtype=npdt)[()]
