"""The numba backend's generated modules loaded in this process, and their
numba disk-cache entries (note [numba-cache-safety]).

Contract:
- `load_unit(h, src, cache) -> _Unit`: module `src` (cache name ``pb_<h>``)
  written to `numba_cache.module_dir()` (or a private directory when that
  entry cannot be written) and executed from the source in memory, once per
  process (`UNITS`); the caller holds `numba_backend._LOCK`.
- `_Unit.compile(name, sig, opt)`: dispatcher `name` compiled for numba
  signature `sig` at LLVM level `opt`, numba's cache files verified against
  the entry's manifest first and recorded after; files numba cannot load are
  discarded and the module executed afresh (`generation` counts reloads).
"""
from __future__ import annotations

import os
import sys
import types

from . import numba_cache
from .numba_opt import numba_opt

UNITS: dict = {}    # module name -> _Unit loaded in this process


class _Unit:
    """A generated module loaded in this process and its cache entry. `cache`:
    whether numba's disk cache is used; `ndir`: numba's cache path."""

    def __init__(self, entry, modname: str, cache: bool):
        self.entry, self.modname, self.cache = entry, modname, cache
        self.ndir = None
        self.generation = 0
        self.mod = self._exec()

    def _exec(self):
        """Execute the module from the source in memory (never from the file)."""
        from numba.core.caching import NullCache
        from numba.core.dispatcher import Dispatcher

        code = compile(self.entry.src, self.entry.path, "exec")
        mod = types.ModuleType(self.modname)
        mod.__file__ = self.entry.path
        exec(code, mod.__dict__)  # noqa: S102 - the source pullback generated, held in memory
        disps = [v for v in vars(mod).values() if isinstance(v, Dispatcher)]
        if self.cache:
            import numba

            self.ndir = next((d._cache.cache_path for d in disps if not isinstance(d._cache, NullCache)), None)
            bad = self.ndir
            why = numba_cache.unsafe_reason(bad) if bad else "is not usable"
            if why is None and numba.config.CACHE_DIR:
                bad = numba.config.CACHE_DIR
                why = numba_cache.unsafe_reason(bad)
            if why:
                self.cache = False
                numba_cache.warn(f"numba's cache directory {bad} {why}; compiling {self.entry.path} without "
                                 "numba's disk cache (make the directory private, e.g. `chmod 700`)")
        if not self.cache:
            for d in disps:
                d._cache = NullCache()
        sys.modules[self.modname] = mod   # only once it has run to the end
        return mod

    def compile(self, name: str, sig, opt: int = 3):
        """Compile dispatcher `name` for `sig` at LLVM level `opt` (`opt_level`),
        numba's cache files verified first; returns the dispatcher (a new one if
        the module was reloaded)."""
        with numba_opt(opt):
            return self._compile(name, sig)

    def _compile(self, name: str, sig):
        disp = getattr(self.mod, name)
        if not self.cache:
            disp.compile(sig)
            return disp
        e = self.entry
        with e.lock():
            why = e.verify(self.ndir)
            if why:
                numba_cache.warn(f"{why}; discarded this entry's numba cache files and recompiling")
                e.discard(self.ndir)
            had_files = bool(e.numba_files(self.ndir))
            try:
                disp.compile(sig)
            except Exception as err:
                if not had_files:
                    raise
                # a cache file numba could not load (or a real error): drop the files,
                # run the module afresh (numba remembers failed typings) and compile again
                e.discard(self.ndir)
                self.generation += 1
                self.mod = self._exec()
                disp = getattr(self.mod, name)
                disp.compile(sig)
                numba_cache.warn(f"numba could not load its cache files for {e.path} ({type(err).__name__}: "
                                 f"{str(err)[:200]}); discarded them and recompiled")
            try:
                e.record(self.ndir)
            except OSError as err:
                numba_cache.warn(f"could not write the cache manifest {e.manifest}: {err}")
        return disp


def load_unit(h: str, src: str, cache: bool) -> _Unit:
    """The module `src` (entry `pb_<h>`), loaded once per process (call with
    `numba_backend._LOCK` held). `cache`: whether numba's disk cache may be
    used (not for mutual recursion)."""
    modname = f"pullback_numba_{h}"
    unit = UNITS.get(modname)
    if unit is not None:
        return unit
    d = numba_cache.module_dir()
    while True:
        _make_numba_dir(d)
        entry = numba_cache.Entry(d, h, src)
        with entry.lock():
            try:
                why = entry.write_module()
            except OSError as err:  # e.g. a directory in the entry's place
                if d == numba_cache.private_module_dir():
                    raise
                numba_cache.warn(f"cannot write the cache entry {entry.path} ({err}); "
                                 "using a private temporary cache for it")
                d = numba_cache.private_module_dir()
                continue
            if why:
                numba_cache.warn(f"cached {why}; rewrote it and recompiling")
            unit = _Unit(entry, modname, cache=cache)
            if why and unit.cache:
                entry.discard(unit.ndir)
        break
    UNITS[modname] = unit
    return unit


def _make_numba_dir(d: str) -> None:
    """Make numba's cache path for modules in `d` (see numba.core.caching's
    locators) owner-only before numba makes it with the umask's mode."""
    import numba

    try:
        if numba.config.CACHE_DIR:
            from numba.core.caching import _CacheLocator

            os.makedirs(numba.config.CACHE_DIR, mode=0o700, exist_ok=True)
            sub = _CacheLocator.get_suitable_cache_subpath(os.path.join(d, "x.py"))
            os.makedirs(os.path.join(numba.config.CACHE_DIR, sub), mode=0o700, exist_ok=True)
        else:
            os.makedirs(os.path.join(d, "__pycache__"), mode=0o700, exist_ok=True)
    except OSError:
        pass  # numba then picks another place, vetted in _Unit._exec


