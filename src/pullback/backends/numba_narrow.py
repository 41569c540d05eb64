"""Products with a narrow inner axis, for numba code (note [small-matmul],
"Narrow inner axes").

Contract:
- `_pb_mmk(x, y, k, n)`, callable from numba-compiled code (the numba dialect
  prints it, `libcalls.linalg`): `x @ y` for 2-D arrays `x` (m x k) and `y`
  (k x n), `k` an integer literal (the inner size), `n` the column count as
  an integer literal, or 0 for "the count of `y`" (wide products: their text
  then does not depend on it). Each entry sums its `k` products left to right
  from zero in the result's dtype (NumPy's promotion of the two dtypes; an
  operand of another dtype is converted element by element), as the other
  product loops of `libcalls.linalg` do. `y` is first copied into a C-ordered
  k x n array (k x n elements, cheap: `y` may be a transpose); `x` is read as
  it is. Both arrays are allocated with `numba_alloc._pb_empty` (numba's
  `np.empty` is one more function to compile per process).
- One implementation per process and signature (argument types, `k`, `n`):
  an overload, compiled once and shared by every generated module, where a
  helper printed into each module was compiled once per module (about 0.3 s
  each with its `np.ascontiguousarray`).
- Called from Python it is NumPy's `x @ y`.
- Only code printed by the numba dialect imports this module (it imports
  numba); the cache key is the generated source, so a change to the code
  generated here needs a new `numba_backend._VERSION`.
"""
from __future__ import annotations

import numpy as np
from numba.core import types
from numba.extending import overload
from numba.np.numpy_support import as_dtype

from .numba_alloc import _pb_empty

_NP = {np.dtype(np.float64): "np.float64", np.dtype(np.float32): "np.float32", np.dtype(np.int64): "np.int64"}


def _pb_mmk(x, y, k, n):
    """x @ y (see the module docstring)."""
    return np.asarray(x) @ np.asarray(y)


def _text(k: int, n: int, want: str, cx: bool, cy: bool) -> str:
    """The implementation's source: `n` 0 for a run-time column count; `cx`, `cy`:
    convert that operand's elements to `want`."""
    xi = f"{want}(x[i, l])" if cx else "x[i, l]"
    yi = f"{want}(y[l, j])" if cy else "y[l, j]"
    cols = str(n) if n else "y.shape[1]"
    return "\n".join([
        "def impl(x, y, k, n):",
        f"    nc = {cols}",
        f"    yc = _pb_empty(({k}, nc), {want})",
        f"    for l in range({k}):",
        "        for j in range(nc):",
        f"            yc[l, j] = {yi}",
        "    m = x.shape[0]",
        f"    out = _pb_empty((m, nc), {want})",
        "    for i in range(m):",
        "        for j in range(nc):",
        f"            s = {want}(0)",
        f"            for l in range({k}):",
        f"                s += {xi} * yc[l, j]",
        "            out[i, j] = s",
        "    return out"])


@overload(_pb_mmk, prefer_literal=True)
def _pb_mmk_numba(x, y, k, n):
    if not (isinstance(x, types.Array) and isinstance(y, types.Array) and x.ndim == y.ndim == 2
            and isinstance(k, types.IntegerLiteral) and isinstance(n, (types.IntegerLiteral, types.Integer))):
        return None
    dx, dy = as_dtype(x.dtype), as_dtype(y.dtype)
    want = np.result_type(dx, dy)
    if want not in _NP or dx not in _NP or dy not in _NP:
        return None
    cols = n.literal_value if isinstance(n, types.IntegerLiteral) else 0
    scope = {"np": np, "_pb_empty": _pb_empty}
    exec(_text(int(k.literal_value), int(cols), _NP[want], dx != want, dy != want), scope)   # our own text
    return scope["impl"]
