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
  BLAS call. First `preload_cython_blas`: the check, numba's typing and its
  machine code's first BLAS call then find SciPy's BLAS without `scipy.linalg`.
- `preload_cython_blas(lapack)`: load `scipy.linalg.cython_blas` (and
  `cython_lapack` when `lapack`) by itself, from the file the import system
  would load, into `sys.modules`, without executing the `scipy.linalg`
  package (0.1-0.2 s; note [warm-start], "SciPy's BLAS alone"). When
  `scipy.linalg` is imported later it gets the loaded modules as attributes,
  as a normal import of them would have left it. A no-op where `scipy.linalg`
  or the module is already imported, or where SciPy or the file cannot be
  found (numba's own import then runs and reports, as before). Call with the
  numba backend's lock held.
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
import os
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

        preload_cython_blas(lapack="np.linalg" in src)

        try:
            ensure_blas()
        except ImportError:
            pass  # compiling (or calling) the BLAS code reports it, as before


_PRELOADED: list = []   # names of the scipy.linalg submodules loaded by `preload_cython_blas`


def preload_cython_blas(lapack: bool = False) -> None:
    """Load SciPy's `cython_blas` (and `cython_lapack`) without `scipy.linalg` (see the docstring)."""
    if "scipy.linalg" in sys.modules:
        return
    spec = importlib.util.find_spec("scipy")   # numba imported the top-level package already
    if spec is None or not spec.submodule_search_locations:
        return
    finder = importlib.machinery.FileFinder(
        os.path.join(list(spec.submodule_search_locations)[0], "linalg"),
        (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES))
    for child in ("cython_blas", "cython_lapack") if lapack else ("cython_blas",):
        name = f"scipy.linalg.{child}"
        if name in sys.modules:
            continue
        sub = finder.find_spec(name)
        if sub is None or sub.loader is None:
            return
        module = importlib.util.module_from_spec(sub)
        sys.modules[name] = module
        try:
            sub.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        _PRELOADED.append(child)
        if len(_PRELOADED) == 1:
            sys.meta_path.insert(0, _BindPreloaded())


class _BindPreloaded:
    """A meta path finder that only watches for `scipy.linalg`: it takes itself
    off `sys.meta_path`, asks the other finders for the spec as the import
    system would, and makes the loader set the submodules `preload_cython_blas`
    loaded as the package's attributes once the package has run."""

    def find_spec(self, name, path, target=None):
        if name != "scipy.linalg":
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        spec = None
        for finder in list(sys.meta_path):   # the import system's own search, without this finder
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            for child in _PRELOADED:
                if not hasattr(module, child) and f"scipy.linalg.{child}" in sys.modules:
                    setattr(module, child, sys.modules[f"scipy.linalg.{child}"])

        spec.loader.exec_module = exec_module
        return spec
