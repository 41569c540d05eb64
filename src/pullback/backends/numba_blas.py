"""Loading numba's registries without SciPy's BLAS (note [warm-start]).

Contract:
- `defer_blas_check()`: import `numba.np.arraymath` (which numba imports when
  it first compiles or loads a function) with a cheap stand-in for
  `numba.np.linalg.ensure_blas`, which at that import otherwise imports
  `scipy.linalg` (0.1-0.2 s) only to learn whether BLAS exists; the real check
  is put back at once. Idempotent; call it with the numba backend's lock held.
- `ensure_blas_for(src)`: numba's real check (SciPy's BLAS importable, built
  with the integer width numba was built for) when the module source `src` may
  call BLAS: loading such a module from numba's cache does not type it, so
  numba itself would not check. Numba still checks whenever it compiles a
  BLAS call.
"""
from __future__ import annotations

import re
import sys

_BLAS_DEFERRED = [False]
_BLAS_USE = re.compile(r"np\.(matmul|dot|vdot|inner|linalg|convolve|correlate|cov|corrcoef)\b|\s@\s|\b_pb_matmul")


def defer_blas_check() -> None:
    """Load numba's array registries without importing SciPy's BLAS (note [warm-start]).

    `numba.np.arraymath`, which numba imports when it first compiles or loads a
    function, calls `numba.np.linalg.ensure_blas()` at import: that imports
    `scipy.linalg` (0.1-0.2 s) only to learn whether BLAS exists. Here it is
    imported with a cheap stand-in (is SciPy installed?) and the real check is
    put back; `ensure_blas_for(src)` runs the real one before a module that uses
    BLAS is loaded, and numba calls it itself whenever it compiles a BLAS call.
    Call with the numba backend's lock held."""
    if _BLAS_DEFERRED[0]:
        return
    _BLAS_DEFERRED[0] = True
    if "numba.np.arraymath" in sys.modules:
        return
    import importlib.util

    from numba.np import linalg

    real = linalg.ensure_blas

    def installed():
        if importlib.util.find_spec("scipy") is None:
            raise ImportError("scipy 0.16+ is required for linear algebra")

    linalg.ensure_blas = installed
    try:
        import numba.np.arraymath as am
    finally:
        linalg.ensure_blas = real
    if getattr(am, "ensure_blas", None) is installed:
        am.ensure_blas = real


def ensure_blas_for(src: str) -> None:
    """numba's own BLAS check (SciPy's BLAS importable, with the integer width numba
    was built for) when the module `src` may call BLAS: loading it from numba's
    cache does not type it, so numba would not check."""
    if _BLAS_USE.search(src):
        from numba.np.linalg import ensure_blas

        try:
            ensure_blas()
        except ImportError:
            pass  # compiling (or calling) the BLAS code reports it, as before
