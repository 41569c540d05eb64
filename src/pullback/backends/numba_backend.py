"""Numba backend: compile, cache and run the module `numba_dialect` prints.

Contract:
- `emit_prog(prog) -> str`: the module `pysource` prints in the numba dialect
  (`numba_dialect.NumbaDialect`).
- `compile_prog(prog, fname=None) -> callable`: leaf values in, a list of
  results out (the interpreter's convention). The module is written to
  ``$PULLBACK_CACHE_DIR`` (default ``~/.cache/pullback/numba``) as
  ``pb_<hash>.py``, the hash being of the printed IR, the entry signature and
  the emitted source, and imported as a real file, so numba's own on-disk cache
  makes a second process load machine code instead of compiling. The callable
  carries `compile_seconds` and `cache_hit` for its last new signature;
  `last_compile_seconds()` gives the latest of these in this process.
- A construct numba cannot type raises `PullbackError` naming the IR function,
  the primitive and the generated source line; there is no silent fallback.
- `run(prog, *args, fname=None, meter=None) -> list` compiles (memoized per
  program) and runs. Stores report no bytes to a meter (`memory_report` uses
  the interpreter).
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
import time

import numpy as np

from ..errors import PullbackError
from ..ir.core import Prog
from ..ir.types import TensorType
from . import pysource as ps
from .numba_dialect import NumbaDialect

_VERSION = "1"

# ---------------------------------------------------------------------------
# compile, cache, run
# ---------------------------------------------------------------------------

_MEMO: dict = {}
_LAST = {"seconds": None, "cache_hit": None}


def emit_prog(prog: Prog, name_hints: bool = True) -> str:
    return _emit(prog, name_hints)[0]


def _emit(prog: Prog, name_hints: bool = True):
    """The module's source and the values of its hidden constant parameters."""
    d = NumbaDialect()
    return ps.emit_prog(prog, name_hints, dialect=d), d.big_values


def cache_dir() -> str:
    d = os.environ.get("PULLBACK_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "pullback")
    return os.path.join(d, "numba")


def last_compile_seconds():
    """Seconds the latest new signature took to compile (or load from numba's disk cache)."""
    return _LAST["seconds"]


def last_cache_hit():
    """Whether the latest new signature was loaded from numba's disk cache."""
    return _LAST["cache_hit"]


def _load_module(prog: Prog, fname: str | None, src: str):
    from ..ir.printer import print_prog, print_type

    f = prog.func(fname or prog.entry)
    sig = ",".join(print_type(p.type) for p in f.params)
    import numba

    h = hashlib.sha256("\n".join([_VERSION, numba.__version__, np.__version__, print_prog(prog),
                                  f.name, sig, src]).encode()).hexdigest()[:24]
    d = cache_dir()
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"pb_{h}.py")
    if not os.path.exists(path):  # keep the mtime: numba's cache index checks it
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as fh:
            fh.write(src)
        os.replace(tmp, path)
    modname = f"pullback_numba_{h}"
    mod = sys.modules.get(modname)
    if mod is None:
        spec = importlib.util.spec_from_file_location(modname, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[modname] = mod
        try:
            spec.loader.exec_module(mod)
        except Exception:
            sys.modules.pop(modname, None)
            raise
    return mod, path


def _numba_error(err, path: str, src: str, prog: Prog) -> PullbackError:
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
        f"numba cannot compile {what} in function '{func or prog.entry}'{where} ({type(err).__name__}: {detail})",
        hint=f"use backend='pysource' for this program; generated source: {path}")


def _out_fn(t):
    """Converts one result of numba code to the interpreter's value for type `t`."""
    if not isinstance(t, TensorType):
        return lambda r: r
    dt = ps._np_dtype(t.dtype)
    if t.shape:
        return lambda r: r if isinstance(r, np.ndarray) and r.dtype == dt else np.asarray(r, dtype=dt)
    return lambda r: np.asarray(r, dtype=dt)[()]


_MALLOC_TUNED = [False]


def tune_malloc() -> bool:
    """Keep freed memory in glibc's heap instead of returning it to the OS
    (note [numba-malloc]); `PULLBACK_MALLOPT=0` opts out. Returns whether it applied."""
    if _MALLOC_TUNED[0] or os.environ.get("PULLBACK_MALLOPT", "1") == "0" or not sys.platform.startswith("linux"):
        return _MALLOC_TUNED[0]
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        m_trim_threshold, m_mmap_threshold = -1, -3
        ok = libc.mallopt(m_mmap_threshold, 32 * 1024 * 1024) == 1
        ok = libc.mallopt(m_trim_threshold, 1024 * 1024 * 1024) == 1 and ok
    except (OSError, AttributeError):
        ok = False
    _MALLOC_TUNED[0] = ok
    return ok


def compile_prog(prog: Prog, fname: str | None = None):
    """The entry function (or `fname`) compiled with numba, taking leaf values
    positionally and returning a list of results."""
    import numba
    from numba.core import errors as nberr

    tune_malloc()
    from ..passes.inline import inline_small

    prog = inline_small(prog)
    src, consts = _emit(prog)
    mod, path = _load_module(prog, fname, src)
    f = prog.func(fname or prog.entry)
    disp = getattr(mod, ps._Module(prog, True).fnames[f.name])
    np_types = [ps._param_dtype(p.type) for p in f.params]
    ret_types = f.ret_types
    outs = [_out_fn(t) for t in ret_types]
    seen: set = set()

    def entry(*args):
        if len(args) != len(f.params):
            raise PullbackError(f"{f.name} takes {len(f.params)} arguments, got {len(args)}")
        args = [ps._coerce(a, dt) for a, dt in zip(args, np_types)]
        args = [a.copy() if isinstance(a, np.ndarray) and not a.flags.writeable else a for a in args]
        key = tuple((a.ndim, a.flags.c_contiguous) if isinstance(a, np.ndarray) else type(a) for a in args)
        if key not in seen:
            sig = tuple(numba.typeof(a) for a in list(args) + consts)
            hits0 = sum(disp.stats.cache_hits.values())
            t0 = time.perf_counter()
            try:
                disp.compile(sig)
            except (nberr.TypingError, nberr.UnsupportedError, nberr.LoweringError, nberr.NumbaError) as err:
                raise _numba_error(err, path, src, prog) from None
            except ImportError as err:  # numba's np.dot/matmul needs SciPy's BLAS
                raise PullbackError(f"numba could not compile {f.name}: {err}",
                                    hint="install SciPy (numba uses it for matmul/dot), or use backend='pysource'") from None
            entry.compile_seconds = _LAST["seconds"] = time.perf_counter() - t0
            entry.cache_hit = _LAST["cache_hit"] = sum(disp.stats.cache_hits.values()) > hits0
            seen.add(key)
        r = disp(*args, *consts)
        if len(outs) == 1:
            return [outs[0](r)]
        return [o(v) for o, v in zip(outs, r)]

    entry.__wrapped__ = disp
    entry.source = src
    entry.path = path
    entry.compile_seconds = None
    entry.cache_hit = None
    entry.__name__ = f.name
    return entry


def run(prog: Prog, *args, fname: str | None = None, meter=None) -> list:
    """Compile `prog` (memoized per program) and run it on leaf values. `meter`
    is ignored: stores under numba report no bytes."""
    return compiled(prog, fname)(*args)


def compiled(prog: Prog, fname: str | None = None):
    """`compile_prog(prog, fname)`, memoized per program."""
    key = (prog, fname)
    try:
        fn = _MEMO.get(key)
    except TypeError:
        key, fn = None, None
    if fn is None:
        fn = compile_prog(prog, fname)
        if key is not None:
            if len(_MEMO) > 256:
                _MEMO.clear()
            _MEMO[key] = fn
    return fn
