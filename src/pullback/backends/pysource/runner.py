"""Compile and run pysource modules.

Contract: `compile_prog(prog, fname=None)` execs the emitted module (its source
registered with `linecache` for tracebacks) and returns the entry function
(or `fname`) wrapped to take leaf values positionally, coerce them to the
parameter dtypes (`_coerce`) and return a list of results.
`run(prog, *args, fname=None, meter=None) -> list` compiles (cached per
program) and runs, with `meter` receiving the stores' bytes.

Run-time errors are located at the user's line (note [run-time-checks]): a
failed printed check (integer division by zero) by its site number, and
NumPy's own IndexError (an index out of bounds: NumPy checks every index the
emitted code uses, with the same ``-n <= i < n`` rule as the other backends)
and RecursionError by the generated line the exception came from, mapped
through the module's `line_locs`. Safe from many threads: the meter is per
thread (`stores.metering`) and the recursion limit is raised with
`runtime.deep_recursion`.
"""
from __future__ import annotations

import itertools
import linecache

import numpy as np

from ...errors import PullbackError
from ...ir.core import Prog
from ...ir.types import TensorType
from .. import checks
from ..leaves import coerce as _coerce
from ..runtime import deep_recursion
from .emitter import emit_module
from .text import _sanitize

_CACHE: dict = {}
_COUNTER = itertools.count(1)   # next() is atomic under the GIL: unique module names across threads


def _innermost_loc(err: BaseException, filename: str, line_locs: list):
    """The SrcLoc of the innermost generated line in `err`'s traceback; for a
    RecursionError, of the innermost call (the line that recursed)."""
    locs = []
    tb = err.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            n = tb.tb_lineno
            locs.append(line_locs[n - 1] if 0 < n <= len(line_locs) else None)
        tb = tb.tb_next
    if isinstance(err, RecursionError) and len(locs) > 1:
        locs.pop()
    return next((loc for loc in reversed(locs) if loc is not None), None)


def compile_prog(prog: Prog, fname: str | None = None):
    """The entry function (or `fname`) of the emitted module, taking leaf values
    positionally and returning a list of results."""
    m = emit_module(_vectorize(prog))
    src, sites, line_locs = m.source, m.sites, m.line_locs
    n = next(_COUNTER)
    filename = f"<pullback-{_sanitize(prog.entry)}-{n}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns: dict = {"__name__": f"pullback_generated_{n}", "_pb_const": m.const_values}
    exec(compile(src, filename, "exec"), ns)
    f = prog.func(fname or prog.entry)
    fn = ns[m.fnames[f.name]]
    nres = len(f.ret_types)
    np_types = [_param_dtype(p.type) for p in f.params]

    def entry(*args):
        if len(args) != len(f.params):
            raise PullbackError(f"{f.name} takes {len(f.params)} arguments, got {len(args)}")
        args = [_coerce(a, dt) for a, dt in zip(args, np_types)]
        try:
            with np.errstate(all="ignore"), deep_recursion():
                r = fn(*args)
        except checks.CHECK_ERRORS as err:   # as numba's `checks.raise_located`, and NumPy's own errors located
            located = checks.translate(err, sites)
            if located is None:
                located = checks.from_exception(err, _innermost_loc(err, filename, line_locs))
            if located is None:
                raise
            raise located from None
        if nres == 1:
            return [r]
        return list(r)

    entry.__wrapped__ = fn
    entry.source = src
    entry.__name__ = f.name
    return entry


def _vectorize(prog: Prog) -> Prog:
    """Maps as whole-array code, contractions as matmul (`passes.vectorize`;
    PULLBACK_VECTORIZE=0 turns it off), and the invariant code of the maps left
    run once in front of them (`passes.hoist_maps`). `derivative_source` shows
    the program unvectorised."""
    from ...passes.hoist_maps import hoist_maps
    from ...passes.vectorize import vectorize

    return hoist_maps(vectorize(prog))


def _param_dtype(t):
    from ...ir.types import np_dtype

    if isinstance(t, TensorType):
        return (np_dtype(t.dtype), bool(t.shape))
    return None


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
    with _stores.metering(meter):
        return fn(*args)


def derivative_source(prog: Prog) -> str:
    """Alias of `emit_prog`, for the API layer."""
    return emit_module(prog).source
