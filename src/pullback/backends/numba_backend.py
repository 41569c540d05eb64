"""Numba backend: compile, cache and run the module `numba_dialect` prints.

Contract:
- `emit_prog(prog) -> str`: the module `pysource` prints in the numba dialect
  (`numba_dialect.NumbaDialect`).
- `compile_prog(prog, fname=None) -> callable`: leaf values in, a list of
  results out (the interpreter's convention). The module is written to
  ``$PULLBACK_CACHE_DIR/numba`` (default ``~/.cache/pullback/numba``) as
  ``pb_<hash>.py``, the hash being of the printed IR, the entry signature and
  the emitted source, so numba's own on-disk cache makes a second process load
  machine code instead of compiling. The module is executed from the source in
  memory, never from the file; numba's cache files are checked against
  pullback's manifest before numba may load them, and a mismatch or a load
  error discards them with a `numba_cache.CacheWarning` and recompiles
  (note [numba-cache-safety]). A program with mutually recursive functions is
  compiled without numba's disk cache (numba crashes loading such code).
- Recursion too deep for the calling thread's stack raises
  `errors.RecursionDepthError` located at the user's recursive call, on any
  thread, instead of overflowing the native stack (note
  [numba-recursion-depth]: the dialect's stack checks, the limit from
  `numba_stack.stack_limit()` passed per call).
  The callable carries `compile_seconds` and `cache_hit` for its last new
  signature; `last_compile_seconds()` gives the latest of these in this process.
- Compile time (note [compile-time]): an entry that only forwards to another
  function (`forwarded`) is not compiled, its callee is; numba optimises
  pullback's modules at LLVM level `opt_level()` (``PULLBACK_NUMBA_OPT``,
  default numba's own) with the vectoriser's runtime-check threshold
  `memory_checks()` (note [vectorize-memchecks]) and its alias checks kept
  before each inner loop (`hoist_checks()`, note [hoisted-alias-checks]); the
  module hash covers these (`llvm_tag()`).
- Thread safety: loading, compiling and the memo take one re-entrant lock; a
  warm call takes no lock, except a call of a module with parallel maps on
  numba's `workqueue` threading layer, which takes `numba_parallel.CALL_LOCK`
  (that layer aborts on parallel regions from two threads at once).
- `parallel` (`compile_prog`, `compiled`, `run`, `emit_prog`): True, False or
  None (automatic), as `numba_parallel.setting` resolves it with
  ``PULLBACK_PARALLEL``; the memo is keyed on the effective setting, and the
  module hash covers the source, which differs where a map is parallel.
- A construct numba cannot type raises `PullbackError` naming the IR function,
  the primitive and the generated source line; there is no silent fallback.
- Tiered compilation (note [tiered-compile]): a cold compile of a large
  module whose program is cheap to interpret returns a `numba_tiered.Tiered`
  entry, which runs pysource while this process's compile worker compiles
  the module (`compile_entry`) into the disk cache; `build` makes the
  compiled entry, here or after the worker. `PULLBACK_TIERED=0` turns it off.
- `compile_prog` = passes + emission, giving a `Spec` (the module's source and
  hash, the entry's name and dtypes, hidden arguments), then `from_spec(spec)`
  (`numba_entry`: the compiled entry and its direct callers);
  the warm cache (`warm_cache`) stores Specs, so a new process calls
  `from_spec` without staging (note [warm-start]). A module that differs from
  an earlier one only in numeric literals is compiled once, shape-generic,
  with those literals as a last tuple argument (`numba_generic`, note
  [shape-generic]); a generic module numba cannot type is compiled specialised.
- Numba's registries are loaded without importing SciPy's BLAS
  (`defer_blas_check`); numba's own BLAS check runs before a module that calls
  BLAS is loaded (`ensure_blas_for`) and whenever numba compiles a BLAS call.
- `run(prog, *args, fname=None, meter=None) -> list` compiles (memoized per
  program) and runs. With a meter, a separate *metered* build runs, whose
  store pushes and pops count bytes into a hidden int64[2] argument (live,
  peak), and the meter receives the peak (`memory_report(..., backend="numba")`).
"""
from __future__ import annotations

import hashlib
import os
import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import PullbackError
from ..ir.traverse import reachable_funcs
from . import numba_cache, numba_contiguous
from .numba_blas import defer_blas_check, ensure_blas_for
from .numba_malloc import tune_malloc
from .numba_entry import _as_is, from_spec  # noqa: F401 - `_as_is`: the entry's rule, for tests
from .numba_opt import forwarded, llvm_tag, opt_level, simplify_inlined
from .numba_units import load_unit as _load_unit

if TYPE_CHECKING:
    from ..ir.core import Prog


class _Lazy:
    """A sibling module imported on first use: a warm start (`from_spec`) needs
    neither the emitter nor the dialect (note [warm-start])."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        import importlib

        return getattr(importlib.import_module(self._name, __package__), attr)


ps = _Lazy(".pysource")
numba_parallel = _Lazy(".numba_parallel")

_VERSION = "8"   # 2: modules executed from memory, numba's files under a manifest; 3: the smul intrinsic; 4: allocation intrinsics; 5: the concatenation intrinsic; 6: the select intrinsic; 7: the shared batched product; 8: parallel maps launched by an intrinsic, internal functions without wrappers
# ---------------------------------------------------------------------------
# compile, cache, run
# ---------------------------------------------------------------------------

_MEMO: dict = {}
_LAST = {"seconds": None, "cache_hit": None}
_LOCK = threading.RLock()        # guards _MEMO, numba_units' registry, module loading and first compiles


def emit_prog(prog: Prog, name_hints: bool = True, parallel: bool | None = None) -> str:
    """The module's source; `parallel` as `compile_prog`'s."""
    return _emit_par(prog, name_hints, parallel=numba_parallel.setting(parallel))[0]


def _emit(prog: Prog, name_hints: bool = True, metered: bool = False):
    """The module's source and the values of its hidden constant parameters, as a
    `checks.ModuleArgs` that also holds the module's run-time check sites.
    `metered`: the stores count their bytes (memory_report). Maps are sequential."""
    return _emit_par(prog, name_hints, metered)[:2]


def _vectorize(prog: Prog, setting, metered: bool) -> Prog:
    """Maps as whole-array code and contractions as BLAS `matmul` (`passes.vectorize`),
    except the maps that run in parallel (`numba_parallel.plan`): those stay
    maps run by chunks, with their bodies vectorised (note [vectorize]). With the
    automatic setting (None), a parallel candidate that vectorises into BLAS
    is vectorised instead."""
    from ..passes.vectorize import becomes_blas, vectorize
    from .numba_dialect import cycle_edges

    if metered:
        return vectorize(prog)
    par = numba_parallel.plan(prog, setting, cycle_edges(prog)).maps
    # automatic: a map that vectorises into BLAS contractions (a product written as
    # nested maps) is faster as one BLAS call than as iterations on several cores
    keep = frozenset(k for k, st in par.items() if setting is not None or not becomes_blas(prog, st))
    return vectorize(prog, keep)


def _emit_par(prog: Prog, name_hints: bool = True, metered: bool = False, parallel: bool | None = False,
              entry: str | None = None):
    """`_emit`'s pair and whether a function of the module runs a map in
    parallel; `parallel`: the effective setting (`numba_parallel.setting`);
    `entry`: the function Python calls (the others get no Python wrapper;
    None: every function keeps it)."""
    from .checks import ModuleArgs
    from .numba_dialect import NumbaDialect

    d = NumbaDialect(metered=metered, parallel=parallel, entry=entry)
    m = ps.emit_module(prog, name_hints, dialect=d)
    limit = None
    if d.stack_param:
        from .numba_stack import stack_limit as limit
    return m.source, ModuleArgs(d.big_values, m.sites, limit, metered), bool(d.par)


def cache_dir() -> str:
    """The directory of generated modules (a private temporary one when the
    configured cache is refused, see `numba_cache.root`)."""
    return numba_cache.module_dir()


def last_compile_seconds():
    """Seconds the latest new signature took to compile (or load from numba's disk cache)."""
    return _LAST["seconds"]


def last_cache_hit():
    """Whether the latest new signature was loaded from numba's disk cache."""
    return _LAST["cache_hit"]


def _mutual_recursion(prog: Prog) -> list[str]:
    """Recursive functions numba crashes on when it loads them from its disk
    cache (note [numba-cache-safety]): those in a call-graph cycle through more
    than one function, and self-recursive ones that return several values
    (a tuple) or take a store (a tuple under numba): split-mode `f_fwd`/`f_bwd`."""
    from ..ir.types import StoreType
    from .numba_dialect import cycle_edges

    out = set()
    for f, g in cycle_edges(prog):
        if f != g:
            out.add(f)
            continue
        fn = prog.func(f)
        if len(fn.ret_types) != 1 or any(isinstance(p.type, StoreType) for p in fn.params):
            out.add(f)
    return sorted(out)


def _module_hash(prog: Prog, f, src: str) -> str:
    """The cache entry's name: a hash of the printed IR, the entry's signature,
    the source and the versions."""
    from ..ir.printer import fingerprint, print_type

    sig = ",".join(print_type(p.type) for p in f.params)
    import numba

    return hashlib.sha256("\n".join([_VERSION, numba.__version__, np.__version__, llvm_tag(),
                                      fingerprint(prog), f.name, sig, src]).encode()).hexdigest()[:24]


def _numba_error(err, path: str, src: str, entry_name: str) -> PullbackError:
    lines = src.splitlines()
    hits = [int(m) for m in re.findall(re.escape(os.path.basename(path)) + r'", line (\d+)', str(err))]
    where, prim, func = "", None, None
    if hits:
        n = hits[-1]
        text = lines[n - 1].strip() if 0 < n <= len(lines) else ""
        m = re.search(r"# pb:(\w+)", text)
        prim = m.group(1) if m else None
        for k in range(min(n, len(lines)) - 1, -1, -1):
            if lines[k].startswith("def "):
                doc = lines[k + 1].strip() if k + 1 < len(lines) else ""
                mm = re.match(r'"""([^(]+)\(', doc)
                func = mm.group(1) if mm else lines[k][4:].split("(")[0]
                break
        where = f" at line {n} of the generated module: {text}"
    what = f"primitive '{prim}'" if prim else "a construct"
    msg = [s.strip() for s in str(err).strip().splitlines() if s.strip() and not s.strip().startswith("-")]
    detail = next((s for s in msg if s.startswith(("No implementation", "Unknown attribute", "Invalid use",
                                                   "Cannot unify", "Use of unsupported", "Cannot determine"))),
                  msg[0] if msg else "")
    return PullbackError(
        f"numba cannot compile {what} in function '{func or entry_name}'{where} ({type(err).__name__}: {detail})",
        hint=f"use backend='pysource' for this program; generated source: {path}")


@dataclass
class Spec:
    """Everything a compiled entry needs besides the program: the warm cache
    (`warm_cache`) stores it, so that a new process runs it without staging.
    `params`/`rets`: `(NumPy dtype, is_array)` or None per parameter/result."""
    src: str
    h: str                # the module's cache name pb_<h>
    cache: bool           # numba's disk cache used (no mutual recursion)
    dname: str            # the entry's Python name in the module
    name: str             # the entry's IR name (messages)
    params: list
    rets: list
    consts: object        # checks.ModuleArgs
    par: bool             # some map runs in parallel
    shape_args: tuple = ()  # a shape-generic module's literal values (`numba_generic`), passed last
    contiguous: tuple = ()  # per parameter: handed to numba C-contiguous (note [contiguous-args])


def compile_prog(prog: Prog, fname: str | None = None, metered: bool = False, parallel: bool | None = None):
    """The entry function (or `fname`) compiled with numba, taking leaf values
    positionally and returning a list of results. `metered`: its stores count
    their bytes into the calling thread's `checks.metering_array`. `parallel`:
    True, False or None (automatic), as `numba_parallel.setting` resolves it
    (note [numba-parallel]); the callable's `parallel` says whether any map
    of it runs in parallel, its `spec` what `from_spec` needs to rebuild it."""
    tune_malloc()
    setting = numba_parallel.setting(parallel)
    source = prog
    prog = lower(prog, setting, metered, fname)
    f = prog.func(fname or prog.entry)
    src, consts, par = _emit_par(prog, metered=metered, parallel=setting, entry=f.name)
    dname = ps._Module(prog, True).fnames[forwarded(prog, f).name]   # the function numba compiles first
    spec = Spec(src, _module_hash(prog, f, src), not _mutual_recursion(prog), dname, f.name,
                [ps._param_dtype(p.type) for p in f.params], [ps._param_dtype(t) for t in f.ret_types], consts, par,
                contiguous=numba_contiguous.contiguous_params(prog, f))
    from . import numba_generic

    attempts = []   # (Spec, on_fail): a shape-generic module first, then the specialised one
    g = None if metered else numba_generic.plan(src)
    if g is not None:   # shape-generic: the machine code of an earlier shape, or one compile for all
        gsrc, shape_args = g
        import dataclasses

        attempts.append((dataclasses.replace(spec, src=gsrc, h=_src_hash(gsrc), shape_args=shape_args),
                         lambda: numba_generic.failed(gsrc)))
    attempts.append((spec, None))
    ptypes = [_numba_type(p.type) for p in f.params]
    if not metered:
        from .numba_tiered import tiered

        t = tiered(prog, fname, attempts, ptypes, [_signature(s, ptypes) for s, _ in attempts], source)
        if t is not None:   # note [tiered-compile]: pysource runs while numba compiles in the background
            return t
    return build(attempts, ptypes)


def build(attempts, ptypes, precompile: bool = False):
    """The entry of the first of `attempts` (`[(Spec, on_fail)]`) that numba
    compiles in this process, for C-contiguous arguments of numba types
    `ptypes`; `on_fail()` records an attempt that numba could not type (e.g. a
    construct that needs its literal: this shape is compiled specialised). The
    last attempt compiles at its first call unless `precompile`."""
    for spec, on_fail in attempts[:-1]:
        fn = from_spec(spec)
        try:
            fn.precompile(ptypes)
            return fn
        except Exception:   # noqa: BLE001 - the next attempt (numba's error text is not the user's)
            if on_fail is not None:
                on_fail()
    fn = from_spec(attempts[-1][0])
    if precompile:
        fn.precompile(ptypes)
    return fn


def _consts(spec: Spec):
    """The module's hidden trailing arguments for `spec`."""
    if spec.shape_args:
        from .numba_generic import ShapeArgs

        return ShapeArgs(spec.consts, spec.shape_args)
    return spec.consts


def _signature(spec: Spec, ptypes) -> tuple:
    """numba's signature of `spec`'s entry for parameters of numba types `ptypes`."""
    import numba

    return tuple([*ptypes, *(numba.typeof(a) for a in _consts(spec).trailing())])


def compile_entry(src: str, h: str, cache: bool, dname: str, sig) -> None:
    """Compile entry `dname` of module `src` (cache name `pb_<h>`) for numba
    signature `sig` into numba's disk cache, verified as every compile is:
    the tiered-compile worker's job (`numba_worker`)."""
    tune_malloc()
    with _LOCK:
        defer_blas_check()
        ensure_blas_for(src)
        unit = _load_unit(h, src, cache)
        unit.compile(dname, sig, opt_level())


def lower(prog: Prog, setting=None, metered: bool = False, fname: str | None = None) -> Prog:
    """The numba-only passes, in order, on the transformed program: what
    `compile_prog` prints (`emit_prog(lower(prog))` shows the module numba
    compiles). `setting`: the effective parallel setting; `fname`: the
    function compiled as the entry (default: the program's), whose signature
    the passes keep."""
    from ..passes.accumulate import accumulate
    from ..passes.dead_clears import dead_clears
    from ..passes.forward_index import forward_index
    from ..passes.hoist_maps import hoist_maps
    from ..passes.inline import inline_scalar_calls, inline_small
    from ..passes.into_zeros import set_into_zeros
    from ..passes.layout import transpose_layout
    from ..passes.reroll import reroll
    from ..passes.scalarize import scalarize
    from ..passes.short_rows import transpose_short_rows
    from ..passes.sink_rows import sink_rows
    from ..passes.specialize_calls import specialize_calls
    from ..passes.strong_mul import strong_mul
    from ..passes.sum_matmul import sum_matmul
    from ..passes.unpack_calls import unpack_calls
    from .numba_remat import remat

    prog = simplify_inlined(prog, inline_scalar_calls(inline_small(prog), roots=[fname or prog.entry]))  # note [compile-time]
    prog = simplify_inlined(prog, scalarize(unpack_calls(forward_index(prog), fname)))  # [forward-index], [unpack-calls], [scalarize]
    prog = set_into_zeros(accumulate(specialize_calls(prog)))  # notes [seed-constants], [accumulate], [into-zeros]
    prog = transpose_layout(dead_clears(sum_matmul(prog)))  # notes [sum-matmul], [dead-clears], [transposed-layout]
    prog = sink_rows(prog)  # note [sink-rows]
    prog = hoist_maps(_vectorize(prog, setting, metered))  # note [hoist-maps]
    prog = remat(reroll(strong_mul(prog)))  # notes [strong-mul], [reroll], [remat]
    prog = transpose_short_rows(prog)  # note [short-rows]
    # the copies inlining and scalarising left uncalled are not printed (numba would not compile them)
    keep = reachable_funcs(prog, [fname or prog.entry])
    return prog.with_funcs([f for f in prog.funcs if f.name in keep])


def _src_hash(src: str) -> str:
    """The cache name of a shape-generic module: a hash of its source and the versions."""
    import numba

    return hashlib.sha256("\n".join([_VERSION, numba.__version__, np.__version__, llvm_tag(), "generic", src])
                          .encode()).hexdigest()[:24]


def _numba_type(t):
    """numba's type of a C-contiguous argument of IR type `t`."""
    import numba

    dt = numba.from_dtype(np.dtype(ps._param_dtype(t)[0]))
    return numba.types.Array(dt, len(t.shape), "C") if t.shape else dt


def run(prog: Prog, *args, fname: str | None = None, meter=None, parallel: bool | None = None) -> list:
    """Compile `prog` (memoized per program) and run it on leaf values. With a
    `meter` (`interp.Meter`), a metered build of the program runs and the
    meter gets its peak and final store bytes. `parallel`: see `compile_prog`."""
    if meter is None:
        return compiled(prog, fname, parallel=parallel)(*args)
    from .checks import metering_array

    fn = compiled(prog, fname, metered=True)
    with metering_array() as m:
        out = fn(*args)
        meter.alloc(int(m[1]))
        meter.free(int(m[1]) - int(m[0]))
    return out


def compiled(prog: Prog, fname: str | None = None, metered: bool = False, parallel: bool | None = None):
    """`compile_prog(prog, fname, metered, parallel)`, memoized per program and
    effective parallel setting (safe from many threads)."""
    parallel = numba_parallel.setting(parallel)
    key = (prog, fname, metered, parallel)
    try:
        fn = _MEMO.get(key)
    except TypeError:
        key, fn = None, None
    if fn is not None:
        return fn
    with _LOCK:
        fn = _MEMO.get(key) if key is not None else None
        if fn is None:
            fn = compile_prog(prog, fname, metered, parallel)
            if key is not None:
                if len(_MEMO) > 256:
                    _MEMO.clear()
                _MEMO[key] = fn
    return fn
