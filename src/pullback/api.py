"""The public API, with JAX's names and conventions.

Contract: every transformation returns a callable that takes and returns
NumPy arrays and floats (pytrees of them). Calling it stages the function for
the argument signature (cached, as `jax.jit` does), derives IR, and runs it on
a backend: `"numba"` (the default; `$PULLBACK_BACKEND` changes it) compiles
the emitted code with Numba, `"interp"` is the reference semantics and
`"pysource"` runs the readable emitted NumPy Python. `parallel=True|False|None`
(every transformation): whether numba runs outermost maps on all cores (None:
when large enough to pay; ``PULLBACK_PARALLEL=0``: never; note
[numba-parallel]); other backends ignore it. Each transformation object also has
`__pullback_stage__`, so it may be called inside code that pullback itself
stages and differentiates (grad of grad, grad of a function that calls grad).

Warm start: on the numba backend a first call looks the signature up in the
warm cache (`backends.warm_cache`) before staging, so a new process with a
populated cache runs the cached machine code without staging (note
[warm-start]); `import pullback` imports neither the frontend nor the passes.

Errors: every public entry point raises only `PullbackError`s that name a
file and line (`errors.user_error` at the boundary, note [api-errors]).
Outputs have the dtypes of the staged program's results on every backend (a
gradient has its argument's dtype, as in JAX). Threads: a first call (staging
and creating the runner) holds `frontend.STAGING_LOCK`; a warm call takes no
lock (note [staging-threads]).
"""
from __future__ import annotations

import os
import types
from dataclasses import dataclass

import sys
import threading

import numpy as np

from . import checkpointing
from .errors import PullbackError, debugging, short_repr, user_error
from .pytree import flatten, unflatten


class _LazyModule:
    """A module imported on first attribute access: `import pullback` and a warm
    start (note [warm-start]) need neither the frontend nor the passes."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        import importlib

        return getattr(importlib.import_module(self._name, __package__), attr)


class _StagingLock:
    """`frontend.STAGING_LOCK`, imported when first taken."""

    def _lock(self):
        from .frontend import STAGING_LOCK

        return STAGING_LOCK

    def __enter__(self):
        return self._lock().__enter__()

    def __exit__(self, *exc):
        return self._lock().__exit__(*exc)


transforms = _LazyModule(".transforms")
STAGING_LOCK = _StagingLock()
_CACHED_LOCK = threading.Lock()   # `_cached`'s dicts: filling them never stages

DEFAULT_BACKEND = "numba"
BACKENDS = ("numba", "pysource", "interp")


def default_backend() -> str:
    """The backend transformations use when none is given: ``$PULLBACK_BACKEND``
    if set (``numba``, ``pysource`` or ``interp``), else ``"numba"``."""
    name = os.environ.get("PULLBACK_BACKEND") or DEFAULT_BACKEND
    if name not in BACKENDS:
        raise PullbackError(f"PULLBACK_BACKEND={name!r} is not a backend",
                            hint="set PULLBACK_BACKEND to 'numba', 'pysource' or 'interp', or unset it")
    return name


def _backend_run(name):
    if name == "interp":
        from .backends.interp import run
    elif name == "pysource":
        from .backends.pysource import run
    elif name == "numba":
        from .backends.numba_backend import run
    else:
        raise PullbackError(f"unknown backend {name!r}", hint="use backend='interp', 'pysource' or 'numba'")
    return run


def _runner(name, prog, parallel=None):
    """A callable running `prog`'s entry on leaf values (compiled once, for numba;
    `parallel` matters only there)."""
    if name == "numba":
        from .backends.numba_backend import compiled

        return compiled(prog, parallel=parallel)
    run = _backend_run(name)
    return lambda *leaves: run(prog, *leaves)


_SIMPLE = (float, int, bool)


def _fast_key(args):
    """A cheap signature key when every argument is an array or a number (no
    pytrees); None otherwise, and the general key is used. uint64 values may not
    fit in int64, so they always take the checked path."""
    key = []
    for a in args:
        if isinstance(a, (np.ndarray, np.generic)):
            if a.dtype.kind not in "fib" or type(a) is not np.ndarray and not isinstance(a, np.generic):
                return None  # uint64, other dtypes and ndarray subclasses take the checked path
            key.append((a.dtype, a.shape))
        elif type(a) in _SIMPLE:
            key.append(type(a))
        else:
            return None
    return tuple(key)


def _out_dtypes(prog):
    """NumPy dtypes of the entry's results: outputs are converted to these (note [output-dtypes])."""
    from .ir.types import TensorType, np_dtype

    return tuple(np.dtype(np_dtype(t.dtype)) if isinstance(t, TensorType) else None
                 for t in prog.func(prog.entry).ret_types)


_PY_KIND = {float: "f", int: "i", bool: "b"}


def _to_output(v, dt):
    """A backend's result as the IR result type `dt` says: arrays of that dtype (no
    copy when they already have it), 0-d arrays as NumPy scalars, Python scalars kept
    when their kind is right."""
    if isinstance(v, np.ndarray):
        if dt is not None and v.dtype != dt:
            v = v.astype(dt)
        return v if v.ndim else v[()]
    if dt is None:
        return v
    if isinstance(v, np.generic):
        return v if v.dtype == dt else dt.type(v)
    if _PY_KIND.get(type(v)) == dt.kind and dt.itemsize == 8 or type(v) is bool and dt.kind == "b":
        return v
    return dt.type(v)


def _positional(fun, args, kwargs) -> tuple:
    """Keyword arguments bound to `fun`'s positional parameters (as Python would)."""
    import inspect

    target = getattr(fun, "fun", fun)
    try:
        bound = inspect.signature(target, follow_wrapped=False).bind(*args, **kwargs)
        bound.apply_defaults()
    except (TypeError, ValueError) as e:
        raise PullbackError(f"cannot pass these arguments to {getattr(target, '__name__', 'the function')}: {e}",
                            hint="pass the arguments its signature declares") from None
    if bound.kwargs:
        raise PullbackError(f"keyword-only arguments {sorted(bound.kwargs)} are not supported by transformations",
                            hint="make them positional parameters")
    return tuple(bound.args)


def _check_callable(fun, what):
    staging = sys.modules.get("pullback.frontend.staging")  # not imported: fun cannot be a StagedClosure
    if staging is not None and isinstance(fun, staging.StagedClosure):  # a nested def or lambda in staged code
        return                                                           # (note [closures])
    if not callable(fun):
        raise PullbackError(f"{what} needs a function, got {short_repr(fun)} of type {type(fun).__name__}",
                            hint=f"pass the function itself: pb.{what}(f), then call the result with the arguments")
    if isinstance(fun, type):
        raise PullbackError(f"{what} needs a function, got the class {fun.__name__}",
                            hint="pass a function (or a method of an instance) that computes with NumPy")


def _argnums(argnums, what, single=False):
    """`argnums` validated: an int, or (unless `single`) a non-empty tuple/list of distinct ints."""
    def bad(msg):
        return PullbackError(f"{what}: {msg}",
                             hint="argnums is the position of the argument to differentiate (an int), "
                                  + ("" if single else "or a tuple of distinct positions, ") + "e.g. argnums=0")

    if isinstance(argnums, (int, np.integer)) and not isinstance(argnums, (bool, np.bool_)):
        return int(argnums)
    if single:
        raise bad(f"argnums must be an int, got {short_repr(argnums)}")
    if not isinstance(argnums, (tuple, list)):
        raise bad(f"argnums must be an int or a tuple of ints, got {short_repr(argnums)}")
    if not argnums:
        raise bad("argnums is empty")
    out = []
    for n in argnums:
        if not isinstance(n, (int, np.integer)) or isinstance(n, (bool, np.bool_)):
            raise bad(f"argnums must contain ints, got {short_repr(n)}")
        out.append(int(n))
    if len(set(out)) != len(out):
        raise bad(f"argnums {tuple(out)} repeats a position")
    return tuple(out)


def _static_argnums(static_argnums):
    if isinstance(static_argnums, (int, np.integer)) and not isinstance(static_argnums, (bool, np.bool_)):
        return (int(static_argnums),)
    if isinstance(static_argnums, (tuple, list)) and all(
            isinstance(n, (int, np.integer)) and not isinstance(n, (bool, np.bool_)) for n in static_argnums):
        return tuple(int(n) for n in static_argnums)
    raise PullbackError(f"static_argnums must be an int or a tuple of ints, got {short_repr(static_argnums)}",
                        hint="static_argnums lists the positions of arguments whose values are fixed when staging")


def _check_backend(backend):
    if backend is not None and backend not in BACKENDS:
        raise PullbackError(f"unknown backend {short_repr(backend)}", hint="use backend='numba', 'pysource' or 'interp'")
    return backend


class _Boundary:
    """Public callables: turn anything leaving `_call` into a located PullbackError."""

    def __call__(self, *args, **kwargs):
        try:
            return self._call(args, kwargs)
        except Exception as e:
            if debugging() and not isinstance(e, PullbackError):
                raise
            raise _boundary_error(e) from None


def _site():
    from .errors import call_site

    return call_site()


def _boundary_error(e):
    """`e` as the located PullbackError a public entry point raises; its traceback
    through pullback's internals is dropped unless $PULLBACK_DEBUG is set."""
    err = user_error(e)
    if not debugging():
        err.__cause__ = None
        err.__suppress_context__ = True
        err = err.with_traceback(None)
    return err


def _api(fn):
    """Decorator for public functions: the same boundary as `_Boundary`."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            if debugging() and not isinstance(e, PullbackError):
                raise
            raise _boundary_error(e) from None
    return wrapper


class jit(_Boundary):
    """`pb.jit(f)`: stage `f` per argument signature and run the staged program."""

    def __init__(self, fun, backend: str | None = None, static_argnums=(), parallel: bool | None = None):
        try:
            _check_callable(fun, "jit")
            self.static_argnums = _static_argnums(static_argnums)
            self.backend = _check_backend(backend) or default_backend()
            self.parallel = _check_parallel(parallel, "jit")
        except PullbackError as e:
            raise _boundary_error(e) from None
        self.fun = fun
        self._cache = {}
        self._fast = {}   # _fast_key -> (runner, out_tree, out dtypes), for calls without pytrees or static args
        self._warm = {}   # signature -> (runner, out_tree, out dtypes) loaded from the warm cache
        self.__name__ = getattr(fun, "__name__", "jitted")
        self.__doc__ = getattr(fun, "__doc__", None)

    def _static_for(self, n):
        for i in self.static_argnums:
            if not -n <= i < n:
                raise PullbackError(f"static_argnums={self.static_argnums} but the function got {n} arguments",
                                    hint="static_argnums are positions of the arguments passed")
        return tuple(sorted(i % n for i in self.static_argnums))

    def staged(self, *args):
        from .frontend import signature_key, stage

        static = self._static_for(len(args)) if self.static_argnums else ()
        key = signature_key(args, static)
        hit = self._cache.get(key)
        if hit is None:
            with STAGING_LOCK:
                hit = self._cache.get(key)
                if hit is None:
                    from .passes.const_args import const_args
                    from .passes.dead_results import dead_results

                    hit = stage(self.fun, args, static_argnums=static)
                    hit.prog = dead_results(const_args(hit.prog))
                    hit.out_dtypes = _out_dtypes(hit.prog)
                    self._cache[key] = hit
        return hit

    def _call(self, args, kwargs):
        if kwargs:
            args = _positional(self.fun, args, kwargs)
        fast = None if self.static_argnums else _fast_key(args)
        hit = self._fast.get(fast) if fast is not None else None
        if hit is not None:
            run, out_tree, dts = hit
            leaves = args
        else:
            static = self._static_for(len(args)) if self.static_argnums else ()
            run, out_tree, dts = self._resolve(args, static, fast)
            dyn = tuple(a for i, a in enumerate(args) if i not in static)
            leaves, _ = flatten(dyn)
        return unflatten(out_tree, [_to_output(o, dt) for o, dt in zip(run(*leaves), dts)])

    def _resolve(self, args, static, fast):
        """(runner, out_tree, out dtypes) for a signature not in `_fast`: from this
        process's caches, from the warm cache (a new process: no staging, note
        [warm-start]) or by staging and compiling."""
        wkey = None
        warm = self.backend == "numba" and _warm_enabled()
        if warm:
            if fast is not None:
                skey = fast
            else:
                from .frontend import signature_key

                skey = signature_key(args, static)
            hit = self._warm.get(skey)
            if hit is None and skey not in self._cache:
                from .backends import warm_cache

                hit, wkey = warm_cache.lookup(self, args, static)
                if hit is not None:
                    self._warm[skey] = hit
            if hit is not None:
                if fast is not None:
                    self._fast[fast] = hit
                return hit
        st = self.staged(*args)  # locks only on a miss: a warm pytree call never waits for staging
        if st.runner is None:
            with STAGING_LOCK:
                if st.runner is None:
                    st.runner = (_runner(self.backend, st.prog) if self.parallel is None else
                                 _runner(self.backend, st.prog, parallel=self.parallel))
                    if wkey is not None:
                        from .backends import warm_cache

                        warm_cache.store(wkey, st)
        out = (st.runner, st.out_tree, st.out_dtypes)
        if fast is not None:
            self._fast[fast] = out
        return out

    def __pullback_stage__(self, ctx, args, kwargs):
        fname, leaves, in_tree, out_tree, ret_types = transforms.stage_fn(ctx, self.fun, args)
        return ctx.from_atoms(list(ctx.apply(fname, leaves, ret_types)), out_tree)


class _Transformed(_Boundary):
    """A derived function (grad, jacobian, ...) of `fun`."""

    def __init__(self, stage_impl, fun, backend, name, parallel=None):
        self._impl = stage_impl  # (ctx, fun, args) -> staged result
        self.fun = fun
        self.backend = backend
        self.parallel = parallel
        self.__name__ = name
        self._jit = jit(self, backend=backend, parallel=parallel)

    def __pullback_with_fun__(self, fun):
        """The same transformation of another function (closure conversion, note [closures])."""
        return _Transformed(self._impl, fun, self.backend, self.__name__, self.parallel)

    def _call(self, args, kwargs):
        if kwargs:
            args = _positional(self.fun, args, kwargs)
        return self._jit._call(args, {})

    def __pullback_stage__(self, ctx, args, kwargs):
        if kwargs:
            raise PullbackError("keyword arguments to a transformed function are not supported", loc=ctx.loc,
                                hint="pass them positionally")
        return self._impl(ctx, self.fun, tuple(args))


def _cached(fun, key, make):
    """One transformed object per (function, transformation), so `pb.grad(f)(x)`
    in a Python loop stages once, as `jax.jit` caches per function. The cache
    lives in the function's `__dict__`, so it goes away with the function. As
    with jit, values a function reads from globals or closures are fixed when
    it is staged. Only plain functions and pullback's own callables cache: a
    bound method shares its function's `__dict__` with every instance, and
    other callables' `__dict__` belongs to the user (pullback's own callable
    classes opt in with `__pullback_cacheable__`: `pb.custom_jvp` objects). Lock-free when warm."""
    if not isinstance(fun, (types.FunctionType, _Boundary)) and not getattr(type(fun), "__pullback_cacheable__", False):
        return _described(make(), key)
    per_fun = fun.__dict__
    cache = per_fun.get("__pullback_transforms__")
    hit = cache.get(key) if cache is not None else None
    if hit is not None:
        return hit
    with _CACHED_LOCK:  # make() only builds the object: it never stages or takes STAGING_LOCK
        cache = per_fun.setdefault("__pullback_transforms__", {})
        hit = cache.get(key)
        if hit is None:
            hit = cache[key] = _described(make(), key)
    return hit


def _described(obj, key):
    """`obj` with its `_cached` key, which names the transformation in the warm
    cache's key (note [warm-start])."""
    if isinstance(obj, _Transformed):
        obj._warm_desc = key
    return obj


def _warm_enabled():
    return os.environ.get("PULLBACK_WARM_CACHE", "1") != "0"


def _name(fun, what):
    return f"{what}({getattr(fun, '__name__', 'f')})"


def _check_parallel(parallel, what):
    if parallel is None:
        return None
    from .backends.numba_parallel import check_parallel

    return check_parallel(parallel, what)


def _prepare(fun, what, backend, argnums=None, single=False, parallel=None):
    _check_callable(fun, what)
    _check_backend(backend)
    _check_parallel(parallel, what)
    return None if argnums is None else _argnums(argnums, what, single)


@_api
def grad(fun, argnums=0, backend: str | None = None, checkpoint="store", parallel: bool | None = None):
    """Gradient of a scalar-valued `fun` with respect to argument(s) `argnums`.

    `checkpoint` picks the reverse-mode strategy: "store" (the default: calls
    of recursive functions in split mode, linear time) or `pb.Joint()`
    (re-execute callees: least memory). See `pullback.checkpointing`. `parallel`: the module docstring's."""
    argnums = _prepare(fun, "grad", backend, argnums, parallel=parallel)
    cp = checkpointing.parse(checkpoint, "grad")
    return _cached(fun, ("grad", argnums, backend, cp, parallel), lambda: _Transformed(
        lambda ctx, f, a: transforms.grad(ctx, f, a, argnums, checkpoint=cp), fun, backend, _name(fun, "grad"),
        parallel))


@_api
def value_and_grad(fun, argnums=0, backend: str | None = None, checkpoint="store", parallel: bool | None = None):
    """`(fun(*args), grad(fun)(*args))` in one pass."""
    argnums = _prepare(fun, "value_and_grad", backend, argnums, parallel=parallel)
    cp = checkpointing.parse(checkpoint, "value_and_grad")
    return _cached(fun, ("value_and_grad", argnums, backend, cp, parallel), lambda: _Transformed(
        lambda ctx, f, a: transforms.grad(ctx, f, a, argnums, with_value=True, checkpoint=cp), fun, backend,
        _name(fun, "value_and_grad"), parallel))


@_api
def jacobian(fun, argnums=0, mode: str = "rev", backend: str | None = None, checkpoint="store",
             parallel: bool | None = None, sparsity=None):
    """Jacobian of `fun` w.r.t. one argument, shape `out.shape + x.shape`; with a
    tuple of argnums, a tuple of Jacobians (as JAX). `checkpoint` applies to
    mode="rev" (see `grad`). `sparsity` (a boolean pattern, a scipy.sparse
    matrix, or "auto"): a `scipy.sparse.csr_array` computed with one jvp/vjp per
    colour (`pullback.sparsity`)."""
    argnums = _prepare(fun, "jacobian", backend, argnums, parallel=parallel)
    if mode not in ("rev", "fwd"):
        raise PullbackError(f"jacobian mode must be 'rev' or 'fwd', got {short_repr(mode)}",
                            hint="mode='rev' (one vjp per output element) or mode='fwd' (one jvp per input element)")
    cp = checkpointing.parse(checkpoint, "jacobian")
    if sparsity is not None:
        from .sparsity import sparse_jacobian

        return sparse_jacobian(fun, argnums, mode, backend, cp, parallel, sparsity)
    return _cached(fun, ("jacobian", argnums, mode, backend, cp, parallel), lambda: _Transformed(
        lambda ctx, f, a: transforms.jacobian(ctx, f, a, argnums, mode, checkpoint=cp), fun, backend,
        _name(fun, "jacobian"), parallel))


def jacrev(fun, argnums=0, backend=None, checkpoint="store", parallel=None, sparsity=None):
    """`jacobian(fun, argnums, mode="rev")`."""
    return jacobian(fun, argnums, "rev", backend, checkpoint, parallel=parallel, sparsity=sparsity)


def jacfwd(fun, argnums=0, backend=None, parallel=None, sparsity=None):
    """`jacobian(fun, argnums, mode="fwd")`."""
    return jacobian(fun, argnums, "fwd", backend, parallel=parallel, sparsity=sparsity)


@_api
def hessian(fun, argnums=0, backend: str | None = None, checkpoint="store", parallel: bool | None = None):
    """Hessian by forward-over-reverse: `jacobian(grad(fun), mode="fwd")`;
    `checkpoint` is the inner gradient's strategy. With a tuple of argnums, the
    nested tuple of blocks `H[i][j]` = d2 f / d x_i d x_j, as JAX."""
    argnums = _prepare(fun, "hessian", backend, argnums, parallel=parallel)
    if isinstance(argnums, tuple):
        blocks = [[jacobian(grad(fun, i, backend, checkpoint, parallel), j, "fwd", backend, parallel=parallel)
                   for j in argnums] for i in argnums]

        @_api
        def hess(*args, **kwargs):
            return tuple(tuple(b(*args, **kwargs) for b in row) for row in blocks)

        return hess
    return jacobian(grad(fun, argnums, backend, checkpoint, parallel), argnums, "fwd", backend, parallel=parallel)


def _tuple_arg(v, what, name):
    if not isinstance(v, (tuple, list)):
        raise PullbackError(f"{what}: {name} must be a tuple (or list) with one entry per argument, "
                            f"got {type(v).__name__}", hint=f"write pb.{what}(f, (x,), (t,)) for one argument")
    return tuple(v)


class _JvpOp:
    """`pb.jvp(f, primals, tangents) -> (out, tangent_out)`."""

    def __call__(self, fun, primals, tangents, backend: str | None = None, parallel: bool | None = None):
        try:
            _prepare(fun, "jvp", backend, parallel=parallel)
            primals = _tuple_arg(primals, "jvp", "primals")
            tangents = _tuple_arg(tangents, "jvp", "tangents")
            t = _cached(fun, ("jvp", backend, parallel), lambda: _Transformed(
                lambda ctx, f, a: transforms.jvp(ctx, f, a[0], a[1]), fun, backend, _name(fun, "jvp"), parallel))
            return t._call((primals, tangents), {})
        except Exception as e:
            if debugging() and not isinstance(e, PullbackError):
                raise
            raise _boundary_error(e) from None

    def __pullback_stage__(self, ctx, args, kwargs):
        fun, primals, tangents = args
        return transforms.jvp(ctx, fun, primals, tangents)


class _VjpOp:
    """`pb.vjp(f, *primals) -> (out, vjp_fn)`; `vjp_fn(ct)` returns one cotangent per primal."""

    def __call__(self, fun, *primals, backend: str | None = None, checkpoint="store", parallel: bool | None = None):
        try:
            _prepare(fun, "vjp", backend, parallel=parallel)
            cp = checkpointing.parse(checkpoint, "vjp")
            out = _cached(fun, ("jit", backend, parallel),
                          lambda: jit(fun, backend=backend, parallel=parallel))._call(primals, {})
            t = _cached(fun, ("vjp", backend, cp, parallel), lambda: _Transformed(
                lambda ctx, f, a: _apply_vjp(ctx, f, a[0], a[1], cp), fun, backend, _name(fun, "vjp"), parallel))
        except Exception as e:
            if debugging() and not isinstance(e, PullbackError):
                raise
            raise _boundary_error(e) from None

        @_api
        def vjp_fn(ct):
            return t._call((tuple(primals), ct), {})

        return out, vjp_fn

    def __pullback_stage__(self, ctx, args, kwargs):
        fun, *primals = args
        cp = checkpointing.parse(kwargs.get("checkpoint"), "vjp")
        return transforms.vjp(ctx, fun, primals, cp)


def _apply_vjp(ctx, fun, primals, ct, cp=None):
    _, vfn = transforms.vjp(ctx, fun, primals, cp)
    return vfn.__pullback_stage__(ctx, (ct,), {})


jvp = _JvpOp()
vjp = _VjpOp()


@_api
def derivative_source(fun, *args, mode: str = "rev", argnums=None, checkpoint="store") -> str:
    """The readable Python source of `fun`'s derivative for these arguments.

    mode="rev" shows the vjp (forward sweep, then the return sweep with
    provenance comments); mode="fwd" shows the jvp (tangent statements next to
    primal ones).
    """
    from .backends.pysource import emit_prog
    from .frontend import stage

    _check_callable(fun, "derivative_source")
    if mode not in ("rev", "fwd"):
        raise PullbackError(f"mode must be 'rev' or 'fwd', got {short_repr(mode)}",
                            hint="mode='rev' shows the vjp, mode='fwd' the jvp")
    cp = checkpointing.parse(checkpoint, "derivative_source")
    return emit_prog(derived_prog(stage(fun, args).prog, mode, cp))


def derived_prog(prog, mode: str, cp=None):
    """The derivative program (`mode` "rev": the vjp, "fwd": the jvp) of a staged
    program, pruned to what its entry uses, as `derivative_source` and the CLI's
    ``--ir`` show it: custom functions (note [custom-rules]) call their rules."""
    from .ir.traverse import prune_prog
    from .passes.jvp import jvp_prog
    from .passes.vjp import vjp_prog
    from .passes.vjp.custom import opaque

    base = opaque(prog)  # custom functions: their rules are called, their bodies not read
    out, name = vjp_prog(base, checkpoint=cp) if mode == "rev" else jvp_prog(base)
    real = {f.name: f for f in prog.funcs}
    return prune_prog(out.with_funcs([real.get(f.name, f) for f in out.funcs], entry=name))


@dataclass
class MemoryReport:
    """What the return sweep held and recomputed, in one gradient evaluation:

    - `peak_bytes`: the peak of bytes in stores (saved loop values, undo logs,
      the residuals split-mode calls keep, and checkpointed loops' snapshots);
    - `recompute_factor`: the work of the user's statements the gradient
      executes (its forward sweep and every re-execution, not adjoint code),
      divided by the primal's own work, both by the primitives' cost rules;
    - `schedule`: the checkpoint strategy used."""

    peak_bytes: int
    final_bytes: int
    recompute_factor: float | None = 1.0
    schedule: str = '"store"'

    def __str__(self):
        rf = "None" if self.recompute_factor is None else f"{self.recompute_factor:.2f}"
        return f"MemoryReport(peak_bytes={self.peak_bytes}, recompute_factor={rf}, schedule={self.schedule})"


@_api
def memory_report(fun, *args, checkpoint="store", backend: str = "interp") -> MemoryReport:
    """Run `fun`'s reverse pass (a vjp with an all-ones cotangent) under the
    `checkpoint` strategy and report the bytes its stores held. On the
    interpreter (the default) it also counts the work (`recompute_factor`); on
    `backend="numba"` a metered build counts store bytes only (fast enough for
    long runs: t = 10**6 loop iterations, determinants of order hundreds), and
    `recompute_factor` is None."""
    from .backends.interp import Meter, OpCount, run
    from .frontend import stage

    _check_callable(fun, "memory_report")
    cp = checkpointing.parse(checkpoint, "memory_report")
    if backend not in ("interp", "numba"):
        raise PullbackError(f"memory_report: backend={short_repr(backend)} is not supported",
                            hint='use backend="interp" (bytes and work) or backend="numba" (bytes)')
    st = stage(_Transformed(lambda ctx, f, a: _ones_vjp(ctx, f, a, cp), fun, backend, "vjp"), args)
    meter = Meter()
    leaves, _ = flatten(tuple(args))
    if backend == "numba":
        from .backends import numba_backend

        numba_backend.run(st.prog, *leaves, meter=meter)
        return MemoryReport(meter.peak, meter.live, None, repr(cp))
    ops = OpCount()
    run(st.prog, *leaves, meter=meter, ops=ops)
    primal, pops = stage(fun, args), OpCount()
    run(primal.prog, *leaves, ops=pops)
    factor = ops.primal_work / pops.primal_work if pops.primal_work else 1.0
    return MemoryReport(meter.peak, meter.live, factor, repr(cp))


def _ones_vjp(ctx, fun, args, cp=None):
    from .ir.core import Const

    out, vfn = transforms.vjp(ctx, fun, args, cp)
    atoms, tree = ctx.to_atoms(out)
    ones = [ctx.builder.emit("full", Const(1.0, a.type.with_shape(())), shape=tuple(a.type.shape), name="ones")
            for a in atoms]
    return vfn.__pullback_stage__(ctx, (ctx.from_atoms(ones, tree),), {})
