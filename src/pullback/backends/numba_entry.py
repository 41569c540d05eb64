"""The compiled entry of a numba module: the callable `numba_backend.compile_prog` and
the warm cache return, and the direct callers of note [call-overhead].

Contract:
- `from_spec(spec) -> callable` (a `numba_backend.Spec`): leaf values in, a list of
  results out. It loads the module (`numba_units`), compiles or loads numba's code per
  signature of C-contiguous arguments under `numba_backend._LOCK` (numba's cache files
  verified first), coerces each leaf to its parameter's dtype, copies read-only arrays,
  and non-C-ordered arrays of the parameters `spec.contiguous` marks (note
  [contiguous-args]), to C order, and raises check failures as located errors. The
  callable carries `precompile(param_types)`, `direct(leaves)` (a caller for later calls
  with leaves exactly like these, or False), `source`, `path`, `parallel`,
  `compile_seconds`, `cache_hit` and `spec`.
- `_as_is(a, dt) -> bool`: whether a direct call may hand leaf `a` to a parameter of
  `dt` ((dtype, is_array)) unconverted.
- Thread safety: first compiles under `numba_backend._LOCK`; a warm call takes no lock,
  except on numba's `workqueue` threading layer (`numba_parallel.CALL_LOCK`).
"""
from __future__ import annotations

import time
import traceback

import numpy as np

from ..errors import PullbackError
from .leaves import coerce as _coerce
from .numba_blas import defer_blas_check, ensure_blas_for
from .numba_malloc import tune_malloc
from .numba_opt import opt_level
from .numba_units import load_unit as _load_unit


def _out_fn(dt):
    """Converts one result of numba code to the interpreter's value; `dt`: the
    result's `(NumPy dtype, is_array)`, or None (not a tensor)."""
    if dt is None:
        return lambda r: r
    dt, is_array = dt
    if is_array:
        return lambda r: r if isinstance(r, np.ndarray) and r.dtype == dt else np.asarray(r, dtype=dt)
    scalar = getattr(dt, "type", dt)   # numba returns a Python scalar: the NumPy scalar of that value
    return lambda r: scalar(r)


# the dtype of the parameter a Python scalar goes to as it is (numba converts it as `coerce` would)
_PY_SCALAR = {float: np.dtype(np.float64), int: np.dtype(np.int64), bool: np.dtype(np.bool_)}


def _as_is(a, dt) -> bool:
    """Whether a direct call may hand leaf `a` to its parameter (`dt`: (dtype, is_array))
    unconverted: a writeable, aligned ndarray of the parameter's dtype, a NumPy scalar of
    it, or a Python float, int or bool for a parameter of float64, int64 or bool (an int's
    key says it fits in 64 bits). numba's typing of `a` is then the type the code was
    compiled for after `coerce`."""
    if dt is None:
        return False
    t = type(a)
    if t is np.ndarray:
        return dt[1] and a.dtype == dt[0] and a.flags.writeable and a.flags.aligned
    if dt[1]:
        return False
    if isinstance(a, np.generic):
        return a.dtype == dt[0]
    want = _PY_SCALAR.get(t)
    return want is not None and want == dt[0]   # (`dtype == None` is True: NumPy reads None as float64)


def _compiled_for(disp, values):
    """(callable, numba result type) of the code `disp` compiled for arguments typed as
    `values`: its overload's entry point, which converts the arguments by those types
    without dispatching on them (a direct caller's key has fixed the types, note
    [call-overhead]); `(disp, None)` where there is no such overload."""
    import numba

    cres = disp.overloads.get(tuple(numba.typeof(v) for v in values))
    if cres is None:
        return disp, None
    return cres.entry_point, cres.signature.return_type


def _direct_out(dt, rtype):
    """`_out_fn(dt)` for a direct call whose numba result type is `rtype`, or None where the
    result is already the output: a result that is no tensor, or an array of the dtype."""
    if dt is None:
        return None
    dtype, is_array = dt
    if not is_array:
        return getattr(dtype, "type", dtype)   # numba returns a Python scalar: the NumPy scalar of it
    from numba import types
    from numba.np.numpy_support import as_dtype

    if isinstance(rtype, types.Array) and as_dtype(rtype.dtype) == dtype:
        return None
    return _out_fn(dt)


def _direct_outs(convs):
    """The conversion of a direct call's results (a tuple) by `convs` (`_direct_out`'s, None
    where a result is already its output): None where none converts, two results spelt out."""
    if all(c is None for c in convs):
        return None
    if len(convs) == 2:
        c0, c1 = convs
        if c1 is None:
            return lambda r: (c0(r[0]), r[1])
        if c0 is None:
            return lambda r: (r[0], c1(r[1]))
        return lambda r: (c0(r[0]), c1(r[1]))
    return lambda r: tuple([v if c is None else c(v) for c, v in zip(convs, r)])



def from_spec(spec):
    """The compiled entry `spec` describes (loaded from numba's disk cache when
    it is there); see `compile_prog`."""
    import numba
    from numba.core import errors as nberr

    from . import numba_parallel
    from .numba_backend import _LAST, _LOCK, _consts, _numba_error

    tune_malloc()
    src, consts, par = spec.src, _consts(spec), spec.par
    with _LOCK:
        defer_blas_check()
        ensure_blas_for(src)
        serialise = numba_parallel.ensure_threading_layer() if par else False
        unit = _load_unit(spec.h, src, spec.cache)
    path = unit.entry.path
    dname = spec.dname
    disp = getattr(unit.mod, dname)
    np_types = spec.params
    nparams = len(np_types)
    outs = [_out_fn(t) for t in spec.rets]
    # note [contiguous-args]: the parameters whose non-C-ordered arguments go to numba as C-ordered copies
    copied = tuple(spec.contiguous) if len(spec.contiguous) == nparams else (False,) * nparams
    seen: set = set()
    gen = [unit.generation]

    def first_compile(key, sig):
        """Compile a new signature (under `_LOCK`); numba's cache files are verified first."""
        nonlocal disp
        if key in seen:
            return
        if tuple(sig) in disp.overloads:   # compiled or loaded already (`precompile`): no second verification
            seen.add(key)
            return
        old = disp
        hits0 = sum(old.stats.cache_hits.values())
        t0 = time.perf_counter()
        try:
            new = unit.compile(dname, sig, opt_level())
        except (nberr.TypingError, nberr.UnsupportedError, nberr.LoweringError, nberr.NumbaError) as err:
            raise _numba_error(err, path, src, spec.name) from None
        except ImportError as err:  # numba's np.dot/matmul needs SciPy's BLAS
            raise PullbackError(f"numba could not compile {spec.name}: {err}",
                                hint="install SciPy (numba uses it for matmul/dot), or use backend='pysource'") from None
        except AssertionError as err:
            # an assertion inside numba's own passes (e.g. its array-expression rewrite on
            # some loop-carried arrays: "'x_1' not unique"): numba's limit, not the program's
            if "numba" not in (traceback.extract_tb(err.__traceback__)[-1].filename or ""):
                raise
            raise PullbackError(f"numba failed while compiling {spec.name} (an internal assertion of numba: {err})",
                                hint=f"use backend='pysource' for this program; generated source: {path}") from None
        entry.compile_seconds = _LAST["seconds"] = time.perf_counter() - t0
        entry.cache_hit = _LAST["cache_hit"] = new is old and sum(new.stats.cache_hits.values()) > hits0
        if unit.generation != gen[0]:  # the module was reloaded: every signature compiles again
            gen[0] = unit.generation
            seen.clear()
        disp = entry.__wrapped__ = new
        seen.add(key)

    def entry(*given):
        if len(given) != nparams:
            raise PullbackError(f"{spec.name} takes {nparams} arguments, got {len(given)}")
        args, key = [], []   # the leaves as the parameters' dtypes (read-only arrays copied), their layouts
        for a, dt, w in zip(given, np_types, copied):
            a = _coerce(a, dt)
            if isinstance(a, np.ndarray):
                flags = a.flags
                if not flags.writeable or (w and not flags.c_contiguous):
                    a = np.array(a, order="C")   # a writeable C-ordered copy
                    flags = a.flags
                key.append((a.ndim, flags.c_contiguous, flags.f_contiguous))
            else:
                key.append(type(a))
            args.append(a)
        key = tuple(key)
        if key not in seen:
            sig = tuple(numba.typeof(a) for a in [*args, *consts.trailing()])
            with _LOCK:
                first_compile(key, sig)
        if serialise:  # numba's workqueue layer aborts on parallel regions from two threads at once
            with numba_parallel.CALL_LOCK:
                r = consts.call(disp, args)
        else:
            r = consts.call(disp, args)  # = disp(*args, *consts.trailing()), check failures raised as located errors
        if len(outs) == 1:
            return [outs[0](r)]
        return [o(v) for o, v in zip(outs, r)]

    def direct(leaves):
        """A caller for later calls whose leaves are exactly like `leaves` (arrays: dtype,
        rank, layout, writeable and aligned; scalars: type, as `api.jit`'s direct key says),
        made after a call with `leaves` ran: the compiled function with its hidden arguments
        bound, the check translation and the result conversion (the one result itself where
        there is one, else the list), without the per-call coercion, layout key and compile
        check (note [call-overhead]). False where calls need more: a leaf that its parameter
        would convert (`_as_is`), a stack limit or byte meter computed per call, or
        parallel regions serialised."""
        if (serialise or consts.limit is not None or consts.metered or len(leaves) != nparams
                or not all(_as_is(a, dt) for a, dt in zip(leaves, np_types))
                or any(w and type(a) is np.ndarray and not a.flags.c_contiguous for a, w in zip(leaves, copied))):
            return False
        fn, rtype = _compiled_for(disp, [*leaves, *consts.trailing()])
        if len(outs) == 1:
            return consts.bound(fn, _direct_out(spec.rets[0], rtype))
        if rtype is None:
            return consts.bound(fn, lambda r: [o(v) for o, v in zip(outs, r)])
        return consts.bound(fn, _direct_outs([_direct_out(d, t) for d, t in zip(spec.rets, rtype.types)]))

    def precompile(param_types):
        """Compile (or load) now for C-contiguous arguments of these numba types."""
        sig = tuple([*param_types, *(numba.typeof(a) for a in consts.trailing())])
        with _LOCK:
            first_compile(("precompiled",), sig)

    entry.precompile = precompile
    entry.direct = direct
    entry.__wrapped__ = disp
    entry.source = src
    entry.parallel = par
    entry.path = path
    entry.compile_seconds = None
    entry.cache_hit = None
    entry.spec = spec
    entry.__name__ = spec.name
    return entry
