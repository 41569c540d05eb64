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
Argument checks, output coercion and the boundary itself are in `boundary`;
`derivative_source`, `derived_prog` and `memory_report` in `reports`; this
module re-exports them.
Outputs have the dtypes of the staged program's results on every backend (a
gradient has its argument's dtype, as in JAX). Threads: a first call (staging
and creating the runner) holds `frontend.STAGING_LOCK`; a warm call takes no
lock (note [staging-threads]).
"""
from __future__ import annotations

import os
import threading
import types

import numpy as np

from . import checkpointing
from .boundary import (  # noqa: F401 (BACKENDS, DEFAULT_BACKEND: re-exported)
    BACKENDS,
    DEFAULT_BACKEND,
    StaticTokens,
    _api,
    _Boundary,
    _boundary_error,
    _check_backend,
    _check_callable,
    _check_parallel,
    _fast_key,
    _name,
    _out_dtypes,
    _positional,
    _prepare,
    _static_argnums,
    _to_output,
    _tuple_arg,
    default_backend,
)
from .errors import PullbackError, debugging, short_repr
from .pytree import builder, flatten, unflatten
from .reports import MemoryReport, derivative_source, derived_prog, memory_report  # noqa: F401 (re-exported)


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
        self._fast = {}   # _fast_key -> (runner, out_tree, out dtypes): flat arguments, simple static ones
        self._direct = {}   # _fast_key -> a direct caller, or False: none (note [call-overhead])
        self._hot_for = [self]   # the callables whose `_hot` is `_direct` once it has a direct caller
        self._warm = {}   # signature -> (runner, out_tree, out dtypes) loaded from the warm cache
        self._static_n = {}   # number of arguments -> the static positions among them
        self._statics = StaticTokens()   # the static arguments' stand-ins in fast keys
        self.__name__ = getattr(fun, "__name__", "jitted")
        self.__doc__ = getattr(fun, "__doc__", None)

    def _static_for(self, n):
        hit = self._static_n.get(n)
        if hit is not None:
            return hit
        for i in self.static_argnums:
            if not -n <= i < n:
                raise PullbackError(f"static_argnums={self.static_argnums} but the function got {n} arguments",
                                    hint="static_argnums are positions of the arguments passed")
        return self._static_n.setdefault(n, tuple(sorted(i % n for i in self.static_argnums)))

    def staged(self, *args):
        from .frontend import signature_key, stage

        static = self._static_for(len(args)) if self.static_argnums else ()
        key = signature_key(args, static)
        hit = self._cache.get(key)
        if hit is None:
            with STAGING_LOCK:
                hit = self._cache.get(key)
                if hit is None:
                    from .gcpause import paused
                    from .passes.const_args import const_args
                    from .passes.dead_results import dead_results

                    with paused():   # note [compile-time], "The collector"
                        hit = stage(self.fun, args, static_argnums=static)
                        hit.prog = dead_results(const_args(hit.prog))
                    hit.out_dtypes = _out_dtypes(hit.prog)
                    self._cache[key] = hit
        return hit

    def _call(self, args, kwargs):
        if kwargs:
            args = _positional(self.fun, args, kwargs)
        static = self._static_for(len(args)) if self.static_argnums else ()
        fk = _fast_key(args, static, self._statics)
        direct = False
        if fk is not None:
            fast, leaves = fk
            direct = self._direct.get(fast)
            if direct:
                return direct(*leaves)
            hit = self._fast.get(fast)
            run, out_tree, dts = hit if hit is not None else self._resolve(args, static, fast)
        else:
            run, out_tree, dts = self._resolve(args, static, None)
            dyn = tuple(a for i, a in enumerate(args) if i not in static)
            leaves, _ = flatten(dyn)
        out = unflatten(out_tree, [_to_output(o, dt) for o, dt in zip(run(*leaves), dts)])
        if direct is None:   # not decided yet: after this call, a direct caller if the runner has one
            self._make_direct(fast, leaves, run, out_tree, dts)
        return out

    def _make_direct(self, fast, leaves, run, out_tree, dts):
        """Record a direct caller for calls with key `fast` (the runner's `direct`, with
        this function's result conversion), False where there is none, nothing where
        the runner cannot say yet (a tiered entry still running pysource). Called after
        a call with `leaves` ran, so numba's code for their types is compiled and
        verified (note [call-overhead])."""
        make = getattr(run, "direct", None)
        call = make(list(leaves)) if make is not None else False
        if call is None:
            return
        if not call:
            self._direct[fast] = False
            return
        if len(dts) == 1 and out_tree.kind == "leaf":
            # the entry's one result is already the output: an array of its dtype (rank >= 1)
            # or the NumPy scalar of it, which `_to_output` keeps as it is
            self._direct[fast] = call
        elif len(dts) == 1:   # one result in a tree (a gradient's 1-tuple): `call` gives the value
            build = builder(out_tree)
            self._direct[fast] = lambda *lv: build((call(*lv),))
        else:   # `call` gives the results, each already what `_to_output` would make of it
            build = builder(out_tree)
            self._direct[fast] = lambda *lv: build(call(*lv))
        if not self.static_argnums and all(k is float or k is bool or type(k) is tuple and len(k) == 3
                                           for k in fast):
            # arrays (`_leaf_key`'s triples), floats and bools alone: later such calls look their
            # key up first (`_Boundary.__call__`)
            for f in self._hot_for:
                f._hot = self._direct

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
                    from .gcpause import paused

                    with paused():   # the backend's passes and emission (numba compiles at the first call)
                        st.runner = (_runner(self.backend, st.prog) if self.parallel is None else
                                     _runner(self.backend, st.prog, parallel=self.parallel))
                    if wkey is not None:
                        from .backends import warm_cache

                        later = getattr(st.runner, "when_compiled", None)   # note [tiered-compile]
                        if later is not None:
                            later(lambda: warm_cache.store(wkey, st))
                        else:
                            warm_cache.store(wkey, st)
        out = (st.runner, st.out_tree, st.out_dtypes)
        if fast is not None:
            self._fast[fast] = out
        return out

    def __pullback_stage__(self, ctx, args, kwargs):
        fname, leaves, _, out_tree, ret_types = transforms.stage_fn(ctx, self.fun, args)
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
        self._jit._hot_for.append(self)   # this object's calls are its jit's (note [call-overhead])

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


# ufunc -> its transformations (`_cached`)
_UFUNC_TRANSFORMS: dict = {}


def _cached(fun, key, make):
    """One transformed object per (function, transformation), so `pb.grad(f)(x)`
    in a Python loop stages once, as `jax.jit` caches per function. The cache
    lives in the function's `__dict__`, so it goes away with the function. As
    with jit, values a function reads from globals or closures are fixed when
    it is staged. Only plain functions and pullback's own callables cache: a
    bound method shares its function's `__dict__` with every instance, and
    other callables' `__dict__` belongs to the user (pullback's own callable
    classes opt in with `__pullback_cacheable__`: `pb.custom_jvp` objects). A NumPy ufunc
    (`pb.jvp(np.sin, ...)`) has no `__dict__`: its cache is kept in `_UFUNC_TRANSFORMS`, since
    NumPy's ufuncs live as long as the process (uncached, every call staged again: 225 µs
    for a jvp). Lock-free when warm."""
    if isinstance(fun, np.ufunc):
        per_fun = _UFUNC_TRANSFORMS.get(fun)
        if per_fun is None:
            per_fun = _UFUNC_TRANSFORMS.setdefault(fun, {})
    elif not isinstance(fun, (types.FunctionType, _Boundary)) and not getattr(type(fun), "__pullback_cacheable__", False):
        return _described(make(), key)
    else:
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


def wait_for_compiles(timeout: float | None = None) -> bool:
    """Wait until numba's background compiles of this process are done and
    their functions run numba's code; False if `timeout` seconds passed first.

    On the numba backend a cold compile of a large module runs in a worker
    process while calls run the same program through the pysource backend
    (note [tiered-compile]); a benchmark calls this before timing. A compile
    error is raised here (or at the function's next call)."""
    from .backends.numba_tiered import wait_for_compiles as wait

    return wait(timeout)


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
        return out, _VjpFn(t, tuple(primals))

    def __pullback_stage__(self, ctx, args, kwargs):
        fun, *primals = args
        cp = checkpointing.parse(kwargs.get("checkpoint"), "vjp")
        return transforms.vjp(ctx, fun, primals, cp)


class _VjpFn(_Boundary):
    """The pullback `pb.vjp` returns: `vjp_fn(ct)` gives one cotangent per primal. Called in
    code that pullback stages, it stages the vjp with the primals as constants (note
    [call-overhead], "Session 28": an object, where a decorated closure per call cost 1 µs
    and, staged, ran into the boundary's own try/except)."""

    def __init__(self, t, primals):
        self._t = t
        self._primals = primals
        self.__name__ = "vjp_fn"

    @staticmethod
    def _one(args, kwargs, loc=None):
        if kwargs or len(args) != 1:
            raise PullbackError(f"vjp_fn takes one cotangent, got {len(args)} argument(s)"
                                + (f" and keywords {sorted(kwargs)}" if kwargs else ""), loc=loc,
                                hint="call vjp_fn(ct) with one value shaped like the function's output")
        return args[0]

    def _call(self, args, kwargs):
        return self._t._call((self._primals, self._one(args, kwargs)), {})

    def __pullback_stage__(self, ctx, args, kwargs):
        return self._t.__pullback_stage__(ctx, (self._primals, self._one(args, kwargs, ctx.loc)), {})


def _apply_vjp(ctx, fun, primals, ct, cp=None):
    _, vfn = transforms.vjp(ctx, fun, primals, cp)
    return vfn.__pullback_stage__(ctx, (ct,), {})


jvp = _JvpOp()
vjp = _VjpOp()

