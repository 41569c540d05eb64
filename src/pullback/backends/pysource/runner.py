"""Compile and run pysource modules.

Contract: `compile_prog(prog, fname=None)` execs the emitted module (its source
registered with `linecache` for tracebacks) and returns the entry function
(or `fname`) wrapped to take leaf values positionally, coerce them to the
parameter dtypes (`_coerce`) and return a list of results.
`run(prog, *args, fname=None, meter=None) -> list` compiles (cached per
program) and runs, with `meter` receiving the stores' bytes.
"""
from __future__ import annotations

import linecache
import sys

import numpy as np

from ...ir.core import Prog
from ...ir.types import TensorType
from .emitter import _Module, emit_prog

_CACHE: dict = {}
_COUNTER = [0]


def compile_prog(prog: Prog, fname: str | None = None):
    """The entry function (or `fname`) of the emitted module, taking leaf values
    positionally and returning a list of results."""
    src = emit_prog(prog)
    _COUNTER[0] += 1
    filename = f"<pullback-{prog.entry}-{_COUNTER[0]}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns: dict = {"__name__": f"pullback_generated_{_COUNTER[0]}"}
    exec(compile(src, filename, "exec"), ns)
    mod = _Module(prog, True)  # for the function-name mapping only
    f = prog.func(fname or prog.entry)
    fn = ns[mod.fnames[f.name]]
    nres = len(f.ret_types)
    np_types = [_param_dtype(p.type) for p in f.params]

    def entry(*args):
        if len(args) != len(f.params):
            from ...errors import PullbackError

            raise PullbackError(f"{f.name} takes {len(f.params)} arguments, got {len(args)}")
        args = [_coerce(a, dt) for a, dt in zip(args, np_types)]
        with np.errstate(all="ignore"):
            r = fn(*args)
        if nres == 1:
            return [r]
        return list(r)

    entry.__wrapped__ = fn
    entry.source = src
    entry.__name__ = f.name
    return entry


def _param_dtype(t):
    from ...ir.types import np_dtype

    if isinstance(t, TensorType):
        return (np_dtype(t.dtype), bool(t.shape))
    return None


def _coerce(a, dt):
    """Leaf values as NumPy arrays/scalars of the parameter's dtype."""
    if dt is None:
        return a
    npdt, is_array = dt
    if is_array:
        return a if isinstance(a, np.ndarray) and a.dtype == npdt else np.asarray(a, dtype=npdt)
    if isinstance(a, np.generic) and a.dtype == npdt:
        return a
    return np.asarray(a, dtype=npdt)[()]


def run(prog: Prog, *args, fname: str | None = None, meter=None) -> list:
    """Compile `prog` (cached per program) and run it on leaf values."""
    from ...ir.prims import stores as _stores

    key = (prog, fname)
    try:
        fn = _CACHE.get(key)
    except TypeError:  # unhashable params
        key, fn = None, None
    if fn is None:
        fn = compile_prog(prog, fname)
        if key is not None:
            if len(_CACHE) > 256:
                _CACHE.clear()
            _CACHE[key] = fn
    old = _stores.CURRENT_METER[0]
    _stores.CURRENT_METER[0] = meter
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20000))
    try:
        return fn(*args)
    finally:
        _stores.CURRENT_METER[0] = old
        sys.setrecursionlimit(limit)


def derivative_source(prog: Prog) -> str:
    """Alias of `emit_prog`, for the API layer."""
    return emit_prog(prog)
