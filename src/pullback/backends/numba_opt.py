"""Compile-time measures of the numba backend (note [compile-time]).

Contract:
- `forwarded(prog, f) -> Func`: the function `f` only forwards to (`f`
  itself when it does more); `forward_chain(prog, f)`: `f` and every
  function on the way there. `numba_backend.compile_prog` compiles that one as
  the entry, so numba never optimises the callee's whole module a second time
  inside a one-line wrapper (numba links every callee's LLVM module into its
  caller's and optimises the result again).
- `opt_level() -> int`: LLVM's optimisation level for pullback's modules:
  ``$PULLBACK_NUMBA_OPT`` (0-3) if set, else the lower of `_DEFAULT_OPT` and
  numba's own level (``$NUMBA_OPT``, default 3). Read at each compile;
  `numba_backend` puts it into the module hash, so machine code of one level
  is never loaded for another.
- `function_opt_level() -> int`: the level of the function-level passes numba
  runs on each function's LLVM IR as it is added to a code library, before
  the library's module passes at `opt_level()`: ``$PULLBACK_NUMBA_FOPT``
  (0-3) if set, else `_DEFAULT_FOPT`; never above `opt_level()` (note
  [compile-time], "Function passes").
- `memory_checks() -> int`: how many runtime alias checks LLVM's loop
  vectoriser may emit before a loop (its ``-vectorize-memory-check-threshold``):
  ``$PULLBACK_NUMBA_MEMCHECKS`` if set to an integer, else `_MEMCHECKS`
  (note [vectorize-memchecks]).
- `hoist_checks() -> bool`: whether LLVM's loop vectoriser may hoist an inner
  loop's runtime alias checks out of the enclosing loop (its
  ``-hoist-runtime-checks``): ``$PULLBACK_NUMBA_HOISTCHECKS`` if set to 0 or 1,
  else `_HOIST_CHECKS` (False; note [hoisted-alias-checks]). LLVM has the
  option from version 18 on; with an older llvmlite it is never set (an
  unknown option would end the process).
- `llvm_tag() -> str`: the LLVM settings above as one string; `numba_backend`
  puts it into the module hash, so machine code built under one setting is
  never loaded for another.
- `simplify_inlined(before, after) -> Prog`: `after` (`before` with calls
  inlined) with common subexpressions merged and dead statements dropped
  (`passes.simplify.simplify_func`) in the functions inlining changed: the
  copies of an inlined body read again what the caller or a sibling copy
  already read (det's minors re-read the same elements and 2 x 2
  determinants). Values are unchanged (the IR is pure); numba has fewer
  statements to type, lower and optimise.
- `numba_opt(level)`: a context in which numba builds LLVM's pass pipelines
  at `level` (its `config.OPT`) and LLVM's vectoriser allows `memory_checks()`
  runtime checks and hoists them as `hoist_checks()` says, holding numba's
  global compiler lock so that no other thread's numba compile sees the
  settings; numba's level and LLVM's defaults are restored on exit. Code
  generation keeps numba's target machine (built once per process, at numba's
  own level). The outermost context also memoises numba's call-type resolution
  (`numba_typing`) and the untyped IR of the functions it inlines
  (`numba_inlining`), defers the IR's lifetime analyses to their first reader
  (`numba_postproc`), lowers variables defined once to LLVM values rather
  than stack slots (`numba_ssa`), leaves out the entry block's zero store of
  slots numba stores where it creates them (`numba_allocas`), builds numba's function-level pass managers at
  `function_opt_level()`, and holds `gcpause.paused` (Python's cyclic
  garbage collector paused where `collector_paused()`; note [compile-time],
  "The collector"); the collector runs again on exit if it ran before.
- `collector_paused() -> bool`: `gcpause.collector_paused`, False where
  ``$PULLBACK_COMPILE_GC`` is 1 (the collector keeps running during
  compiles), else True.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .. import gcpause
from ..gcpause import collector_paused  # noqa: F401 - part of this module's contract
from . import numba_allocas, numba_inlining, numba_postproc, numba_ssa, numba_typing

if TYPE_CHECKING:
    from ..ir.core import Func, Prog

# O2 compiles gmm's gradient about 30% faster than numba's default O3, but its calls ran
# 4-5% slower (the other benchmark programs: within noise; `benchmarks/compile_time.py
# --speed-opt 3,2,1`), so the default stays 3 and PULLBACK_NUMBA_OPT=2 opts in
_DEFAULT_OPT = 3

# note [compile-time], "Function passes": numba runs its whole O3 pipeline on each function as it
# is added, then again on the linked module; O1 there (SROA, early CSE, instcombine, CFG
# simplification) leaves the module passes the same work: gmm's and lstm's first calls about 10%
# faster, warm calls within noise
_DEFAULT_FOPT = 1

# note [vectorize-memchecks]: LLVM's default (128) keeps a fused adjoint loop that reads ~30
# arrays and writes ~8 scalar; ba's two reverse sweeps vectorise from about 1024 on (2x faster)
_MEMCHECKS = 4096
_LLVM_DEFAULT_MEMCHECKS = 128

# note [hoisted-alias-checks]: LLVM hoists an inner loop's alias checks out of the outer loop,
# over all of its iterations; with static trip counts the hoisted check of a return sweep's
# adjoint rows (A_adj[j, k] read, A_adj[i, k] written) folds to "always overlaps" and the
# vectoriser gives up silently (det_lu's gradient). Checked per inner loop instead
_HOIST_CHECKS = False
_LLVM_DEFAULT_HOIST = True


def opt_level() -> int:
    """LLVM's optimisation level for pullback's modules (module docstring)."""
    import numba

    v = os.environ.get("PULLBACK_NUMBA_OPT", "").strip()
    if v in ("0", "1", "2", "3"):
        return int(v)
    return min(_DEFAULT_OPT, int(numba.config.OPT))


def function_opt_level() -> int:
    """The level of numba's function-level passes in pullback's modules (module docstring)."""
    v = os.environ.get("PULLBACK_NUMBA_FOPT", "").strip()
    return min(int(v) if v in ("0", "1", "2", "3") else _DEFAULT_FOPT, opt_level())


def memory_checks() -> int:
    """The vectoriser's runtime-check threshold for pullback's modules (module docstring)."""
    v = os.environ.get("PULLBACK_NUMBA_MEMCHECKS", "").strip()
    return int(v) if v.isdigit() else _MEMCHECKS


def hoist_checks() -> bool:
    """May LLVM hoist inner loops' alias checks out of outer loops (module docstring)."""
    v = os.environ.get("PULLBACK_NUMBA_HOISTCHECKS", "").strip()
    return v == "1" if v in ("0", "1") else _HOIST_CHECKS


def llvm_tag() -> str:
    """The LLVM settings pullback's modules are built under, for the module hash."""
    return f"O{opt_level()} fO{function_opt_level()} vmc{memory_checks()} hrc{int(hoist_checks())}"


def _set_memory_checks(n: int) -> None:
    import llvmlite.binding as llvm

    llvm.set_option("", f"-vectorize-memory-check-threshold={n}")


def _set_hoist_checks(on: bool) -> None:
    import llvmlite.binding as llvm

    if llvm.llvm_version_info >= (18,):   # the option's first release (its default: hoist)
        llvm.set_option("", f"-hoist-runtime-checks={'true' if on else 'false'}")


class numba_opt:
    """numba optimises at `level` while held (module docstring)."""

    _depth = 0   # contexts held (numba's lock is re-entrant): the outermost sets and restores LLVM's option

    def __init__(self, level: int):
        self.level = level

    def __enter__(self):
        from numba.core import config
        from numba.core.compiler_lock import global_compiler_lock

        self.lock = global_compiler_lock
        self.lock.acquire()
        self.old = config.OPT
        try:
            if int(self.old) != self.level or self.old.is_opt_max:
                config.OPT = type(self.old)(self.level)
            outer = numba_opt._depth == 0
            self.checks = memory_checks() if outer else _LLVM_DEFAULT_MEMCHECKS
            self.hoist = hoist_checks() if outer else _LLVM_DEFAULT_HOIST
            if self.checks != _LLVM_DEFAULT_MEMCHECKS:
                _set_memory_checks(self.checks)
            if self.hoist != _LLVM_DEFAULT_HOIST:
                _set_hoist_checks(self.hoist)
            if outer:
                numba_typing.install()
                numba_inlining.install()
                numba_postproc.install()
                numba_ssa.install()
                numba_allocas.install()
                _install_function_passes(min(function_opt_level(), self.level))
                gcpause.pause()
            numba_opt._depth += 1
        except BaseException:
            config.OPT = self.old
            self.lock.release()
            raise
        return self

    def __exit__(self, *exc):
        from numba.core import config

        try:
            config.OPT = self.old
            numba_opt._depth -= 1
            if numba_opt._depth == 0:
                gcpause.resume()   # first: nothing below may leave the collector paused
                numba_typing.uninstall()
                numba_inlining.uninstall()
                numba_postproc.uninstall()
                numba_ssa.uninstall()
                numba_allocas.uninstall()
                _uninstall_function_passes()
            if self.checks != _LLVM_DEFAULT_MEMCHECKS:
                _set_memory_checks(_LLVM_DEFAULT_MEMCHECKS)
            if self.hoist != _LLVM_DEFAULT_HOIST:
                _set_hoist_checks(_LLVM_DEFAULT_HOIST)
        finally:
            self.lock.release()
        return False


def _install_function_passes(level: int) -> None:
    """numba's function-level pass managers at `level` (call with numba's compiler lock held)."""
    from numba.core.codegen import CPUCodegen

    orig = CPUCodegen.__dict__["_function_pass_manager"]
    orig = getattr(orig, "__wrapped__", orig)

    def function_pass_manager(self, **kwargs):
        kwargs.setdefault("opt", level)
        return orig(self, **kwargs)

    function_pass_manager.__wrapped__ = orig
    CPUCodegen._function_pass_manager = function_pass_manager


def _uninstall_function_passes() -> None:
    from numba.core.codegen import CPUCodegen

    orig = getattr(CPUCodegen.__dict__["_function_pass_manager"], "__wrapped__", None)
    if orig is not None:
        CPUCodegen._function_pass_manager = orig


def forwarded(prog: Prog, f: Func) -> Func:
    """`f` itself unless its body is one call ``r... = g(params...)`` of its own
    parameters in order, returning exactly the call's results, of a function
    `g` with the same parameter and result types that updates no argument in
    place (no donated parameters); then `g`, followed through chains of such
    functions."""
    return forward_chain(prog, f)[-1]


def forward_chain(prog: Prog, f: Func) -> list:
    """`f` and the functions it forwards to, in order (`forwarded` is the last)."""
    from ..ir.core import Apply

    chain = [f]
    while len(f.body.stmts) == 1:
        st = f.body.stmts[0]
        e = st.exp
        if (not isinstance(e, Apply) or e.args != f.params or f.body.result != st.pat
                or any(g.name == e.func for g in chain)):
            break
        g = prog.func(e.func)
        if (g.donated or tuple(p.type for p in g.params) != tuple(p.type for p in f.params)
                or tuple(g.ret_types) != tuple(f.ret_types)):
            break
        chain.append(g)
        f = g
    return chain


def simplify_inlined(before: Prog, after: Prog) -> Prog:
    """Merge common subexpressions in the functions that inlining changed
    (module docstring)."""
    if after is before:
        return after
    from ..passes.simplify import simplify_func

    old = {f.name: f for f in before.funcs}
    funcs = [f if old.get(f.name) is f else simplify_func(f) for f in after.funcs]
    return after.with_funcs(funcs)
