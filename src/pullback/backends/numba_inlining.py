"""A memo of the callee IR numba builds to inline an ``inline="always"``
function, while pullback's modules compile (note [compile-time], "Inlined
helpers").

numba inlines a call of an ``inline="always"`` njit function (the vecmath
functions, the store and loop helpers at few sites) by running the callee's
bytecode front end and untyped passes again at every call site
(`InlineWorker.inline_function` -> `run_untyped_passes`), then copying that IR
into the caller. The IR depends only on the function, the typing and target
contexts, the compiler pipeline's class, the locals and the compile flags.

Contract:
- `install()` / `uninstall()`: called by `numba_opt.numba_opt` on entering and
  leaving its outermost context, under numba's global compiler lock (no other
  thread's numba compile, user code included, sees the memo). While
  installed, `InlineWorker.inline_function` takes the callee's untyped IR from
  `_MEMO` when it built it before for the same key, and otherwise builds and
  remembers it; either way it inlines through numba's own `inline_ir`, which
  copies the IR before changing anything (numba itself inlines one cached IR of
  an overload at many sites that way). numba's side effect of building the IR,
  ``flags.enable_ssa = False`` on the worker's flags, is repeated on a hit.
  `uninstall()` restores numba's method and empties the memo (it holds the
  functions of the modules compiled while installed).
- `STATS`: hits and misses, for tests and benchmarks.
"""
from __future__ import annotations

from .numba_typing import unwrap_method, wrap_method

_MEMO: dict = {}
STATS = {"hits": 0, "misses": 0}


def _key(worker, function):
    flags = worker.flags.copy()
    flags.enable_ssa = False   # what run_untyped_passes sets
    return (function, worker.typingctx, worker.targetctx, type(worker.pipeline),
            tuple(sorted((worker.locals or {}).items())), flags)


def _memoised(orig):
    def inline_function(self, caller_ir, block, i, function, arg_typs=None):
        try:
            key = _key(self, function)
            callee_ir = _MEMO.get(key)
        except TypeError:   # an unhashable part: build it as numba does
            return orig(self, caller_ir, block, i, function, arg_typs=arg_typs)
        if callee_ir is None:
            callee_ir = self.run_untyped_passes(function)
            _MEMO[key] = callee_ir
            STATS["misses"] += 1
        else:
            self.flags.enable_ssa = False   # as run_untyped_passes leaves it
            STATS["hits"] += 1
        return self.inline_ir(caller_ir, block, i, callee_ir, function.__code__.co_freevars, arg_typs=arg_typs)

    inline_function.__wrapped__ = orig
    return inline_function


def install() -> None:
    """Answer inlined callees' IR from `_MEMO` (call with numba's global compiler lock held)."""
    from numba.core.inline_closurecall import InlineWorker

    wrap_method(InlineWorker, "inline_function", _memoised)


def uninstall() -> None:
    """numba's own method again, and an empty memo."""
    from numba.core.inline_closurecall import InlineWorker

    unwrap_method(InlineWorker, "inline_function")
    _MEMO.clear()
