"""numba's IR post-processing without the analyses nobody reads, while
pullback's modules compile (note [compile-time], "Lazy lifetimes").

numba runs `PostProcessor.run` on a function's IR after its bytecode front
end, after each rewrite or inlining pass that changed it and before lowering
(about nine times per function). Each run canonicalises the CFG, then
computes the uses and definitions, the live and dead variables of every
block and the variables live at each block's entry, eagerly: about 0.1 s per
run on ht's Jacobian (700 lines), 0.7 s of its compile. In nopython mode
nothing reads the entry variables (object-mode lowering and generators do),
and the lifetime analyses are read only by the passes that need them, through
`func_ir.variable_lifetime`, whose properties numba already computes on first
use.

Contract:
- `install()` / `uninstall()`: called by `numba_opt.numba_opt` on entering
  and leaving its outermost context, under numba's global compiler lock (no
  other thread's numba compile sees the change). While installed,
  `PostProcessor.run` on a function that is not a generator canonicalises the
  CFG and sets a fresh `VariableLifetime` as numba's does, and makes
  `func_ir.block_entry_vars` a `LazyEntryVars`: the same mapping (block ->
  variables live at its entry), computed from that `VariableLifetime` when
  first read. ``emit_dels`` still inserts the deletions at once (they read the
  lifetimes). A generator's IR goes through numba's own method. The LLVM IR
  numba emits is the same (tests/backends/test_numba_postproc.py compares it).
- `STATS`: lazy runs and entry-variable computations, for tests.
"""
from __future__ import annotations

from .numba_typing import method_patch

STATS = {"runs": 0, "filled": 0}


class LazyEntryVars(dict):
    """Block -> names live at its entry, computed on first read from the
    `VariableLifetime` of the post-processing run that made it (so from the
    blocks as they were then, as numba's eager run)."""

    __slots__ = ("_vlt", "_done")

    def __init__(self, vlt):
        super().__init__()
        self._vlt, self._done = vlt, False

    def _fill(self):
        if self._done:
            return
        from numba.core import analysis

        self._done = True
        vlt = self._vlt
        bev = analysis.compute_live_variables(vlt.cfg, vlt._blocks, vlt.usedefs.defmap, vlt.deadmaps.combined)
        for offset, block in vlt._blocks.items():
            dict.__setitem__(self, block, bev[offset])
        STATS["filled"] += 1

    def __missing__(self, key):
        self._fill()
        return dict.__getitem__(self, key)


def _filled(name: str):
    """dict's method `name`, computing the mapping first."""
    def method(self, *args, **kwargs):
        self._fill()
        return getattr(dict, name)(self, *args, **kwargs)

    method.__name__ = name
    return method


for _name in ("__setitem__", "__contains__", "__iter__", "__len__", "__repr__", "get", "keys", "values", "items"):
    setattr(LazyEntryVars, _name, _filled(_name))
del _name


def _lazy(orig):
    def run(self, emit_dels: bool = False, extend_lifetimes: bool = False):
        fir = self.func_ir
        if fir.is_generator:
            return orig(self, emit_dels=emit_dels, extend_lifetimes=extend_lifetimes)
        from numba.core import postproc, transforms

        fir.blocks = transforms.canonicalize_cfg(fir.blocks)
        vlt = postproc.VariableLifetime(fir.blocks)
        fir.variable_lifetime = vlt
        fir.block_entry_vars = LazyEntryVars(vlt)
        fir.generator_info = None
        STATS["runs"] += 1
        if emit_dels:
            self._insert_var_dels(extend_lifetimes=extend_lifetimes)

    run.__wrapped__ = orig
    return run


# the lazy post-processing, and numba's own again (module docstring)
install, uninstall = method_patch("numba.core.postproc", "PostProcessor", "run", _lazy)
