"""The public API, with JAX's names and conventions.

Contract: every transformation returns a callable that takes and returns
NumPy arrays and floats (pytrees of them). Calling it stages the function for
the argument signature (cached, as `jax.jit` does), derives IR, and runs it on
a backend: `"numba"` (the default; `$PULLBACK_BACKEND` changes it) compiles
the emitted code with Numba, `"interp"` is the reference semantics and
`"pysource"` runs the readable emitted NumPy Python. Each transformation object also has
`__pullback_stage__`, so it may be called inside code that pullback itself
stages and differentiates (grad of grad, grad of a function that calls grad).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from . import transforms
from .errors import PullbackError
from .passes.const_args import const_args
from .passes.dead_results import dead_results
from .pytree import flatten, unflatten

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


def _runner(name, prog):
    """A callable running `prog`'s entry on leaf values (compiled once, for numba)."""
    if name == "numba":
        from .backends.numba_backend import compiled

        return compiled(prog)
    run = _backend_run(name)
    return lambda *leaves: run(prog, *leaves)


_SIMPLE = (float, int, bool)


def _fast_key(args):
    """A cheap signature key when every argument is an array or a number (no
    pytrees); None otherwise, and the general key is used."""
    key = []
    for a in args:
        if isinstance(a, (np.ndarray, np.generic)):
            key.append((a.dtype, a.shape))
        elif type(a) in _SIMPLE:
            key.append(type(a))
        else:
            return None
    return tuple(key)


def _to_output(v):
    if isinstance(v, np.ndarray):
        return v if v.ndim else v[()]
    return v


def _positional(fun, args, kwargs) -> tuple:
    """Keyword arguments bound to `fun`'s positional parameters (as Python would)."""
    import inspect

    target = getattr(fun, "fun", fun)
    try:
        bound = inspect.signature(target).bind(*args, **kwargs)
        bound.apply_defaults()
    except (TypeError, ValueError) as e:
        raise PullbackError(f"cannot pass these arguments to {getattr(target, '__name__', 'the function')}: {e}",
                            hint="pass arguments positionally") from None
    if bound.kwargs:
        raise PullbackError(f"keyword-only arguments {sorted(bound.kwargs)} are not supported by transformations",
                            hint="make them positional parameters")
    return tuple(bound.args)


class jit:
    """`pb.jit(f)`: stage `f` per argument signature and run the staged program."""

    def __init__(self, fun, backend: str | None = None, static_argnums=()):
        self.fun = fun
        self.backend = backend or default_backend()
        self.static_argnums = tuple((static_argnums,) if isinstance(static_argnums, int) else static_argnums)
        self._cache = {}
        self._fast = {}   # _fast_key -> (runner, out_tree), for calls without pytrees or static args
        self.__name__ = getattr(fun, "__name__", "jitted")
        self.__doc__ = getattr(fun, "__doc__", None)

    def staged(self, *args):
        from .frontend import signature_key, stage

        key = signature_key(args, self.static_argnums)
        hit = self._cache.get(key)
        if hit is None:
            hit = stage(self.fun, args, static_argnums=self.static_argnums)
            hit.prog = dead_results(const_args(hit.prog))
            self._cache[key] = hit
        return hit

    def __call__(self, *args, **kwargs):
        if kwargs:
            args = _positional(self.fun, args, kwargs)
        fast = None if self.static_argnums else _fast_key(args)
        hit = self._fast.get(fast) if fast is not None else None
        if hit is not None:
            run, out_tree = hit
            leaves = args
        else:
            st = self.staged(*args)
            if st.runner is None:
                st.runner = _runner(self.backend, st.prog)
            run, out_tree = st.runner, st.out_tree
            dyn = tuple(a for i, a in enumerate(args) if i not in self.static_argnums)
            leaves, _ = flatten(dyn)
            if fast is not None:
                self._fast[fast] = (run, out_tree)
        return unflatten(out_tree, [_to_output(o) for o in run(*leaves)])

    def __pullback_stage__(self, ctx, args, kwargs):
        fname, leaves, in_tree, out_tree, ret_types = transforms.stage_fn(ctx, self.fun, args)
        return ctx.from_atoms(list(ctx.apply(fname, leaves, ret_types)), out_tree)


class _Transformed:
    """A derived function (grad, jacobian, ...) of `fun`."""

    def __init__(self, stage_impl, fun, backend, name):
        self._impl = stage_impl
        self.fun = fun
        self.__name__ = name
        self._jit = jit(self, backend=backend)

    def __call__(self, *args, **kwargs):
        if kwargs:
            args = _positional(self.fun, args, kwargs)
        return self._jit(*args)

    def __pullback_stage__(self, ctx, args, kwargs):
        if kwargs:
            raise PullbackError("keyword arguments to a transformed function are not supported", loc=ctx.loc,
                                hint="pass them positionally")
        return self._impl(ctx, tuple(args))


def _cached(fun, key, make):
    """One transformed object per (function, transformation), so `pb.grad(f)(x)`
    in a Python loop stages once, as `jax.jit` caches per function. The cache
    lives in the function's `__dict__`, so it goes away with the function. As
    with jit, values a function reads from globals or closures are fixed when
    it is staged."""
    per_fun = getattr(fun, "__dict__", None)
    if per_fun is None:
        return make()
    cache = per_fun.setdefault("__pullback_transforms__", {})
    try:
        hit = cache.get(key)
    except TypeError:  # unhashable argnums
        return make()
    if hit is None:
        hit = cache[key] = make()
    return hit


def _name(fun, what):
    return f"{what}({getattr(fun, '__name__', 'f')})"


def grad(fun, argnums=0, backend: str | None = None):
    """Gradient of a scalar-valued `fun` with respect to argument(s) `argnums`."""
    return _cached(fun, ("grad", argnums, backend), lambda: _Transformed(
        lambda ctx, a: transforms.grad(ctx, fun, a, argnums), fun, backend, _name(fun, "grad")))


def value_and_grad(fun, argnums=0, backend: str | None = None):
    """`(fun(*args), grad(fun)(*args))` in one pass."""
    return _cached(fun, ("value_and_grad", argnums, backend), lambda: _Transformed(
        lambda ctx, a: transforms.grad(ctx, fun, a, argnums, with_value=True), fun, backend,
        _name(fun, "value_and_grad")))


def jacobian(fun, argnums=0, mode: str = "rev", backend: str | None = None):
    """Jacobian of `fun` w.r.t. one argument, shape `out.shape + x.shape`."""
    if mode not in ("rev", "fwd"):
        raise PullbackError(f"jacobian mode must be 'rev' or 'fwd', got {mode!r}")
    return _cached(fun, ("jacobian", argnums, mode, backend), lambda: _Transformed(
        lambda ctx, a: transforms.jacobian(ctx, fun, a, argnums, mode), fun, backend, _name(fun, "jacobian")))


jacrev = lambda fun, argnums=0, backend=None: jacobian(fun, argnums, "rev", backend)  # noqa: E731
jacfwd = lambda fun, argnums=0, backend=None: jacobian(fun, argnums, "fwd", backend)  # noqa: E731


def hessian(fun, argnums=0, backend: str | None = None):
    """Hessian by forward-over-reverse: `jacobian(grad(fun), mode="fwd")`."""
    return jacobian(grad(fun, argnums, backend), argnums, "fwd", backend)


class _JvpOp:
    """`pb.jvp(f, primals, tangents) -> (out, tangent_out)`."""

    def __call__(self, fun, primals, tangents, backend: str | None = None):
        t = _cached(fun, ("jvp", backend), lambda: _Transformed(
            lambda ctx, a: transforms.jvp(ctx, fun, a[0], a[1]), fun, backend, _name(fun, "jvp")))
        return t(tuple(primals), tuple(tangents))

    def __pullback_stage__(self, ctx, args, kwargs):
        fun, primals, tangents = args
        return transforms.jvp(ctx, fun, primals, tangents)


class _VjpOp:
    """`pb.vjp(f, *primals) -> (out, vjp_fn)`; `vjp_fn(ct)` returns one cotangent per primal."""

    def __call__(self, fun, *primals, backend: str | None = None):
        out = _cached(fun, ("jit", backend), lambda: jit(fun, backend=backend))(*primals)
        t = _cached(fun, ("vjp", backend), lambda: _Transformed(
            lambda ctx, a: _apply_vjp(ctx, fun, a[0], a[1]), fun, backend, _name(fun, "vjp")))

        def vjp_fn(ct):
            return t(tuple(primals), ct)

        return out, vjp_fn

    def __pullback_stage__(self, ctx, args, kwargs):
        fun, *primals = args
        return transforms.vjp(ctx, fun, primals)


def _apply_vjp(ctx, fun, primals, ct):
    _, vfn = transforms.vjp(ctx, fun, primals)
    return vfn.__pullback_stage__(ctx, (ct,), {})


jvp = _JvpOp()
vjp = _VjpOp()


def derivative_source(fun, *args, mode: str = "rev", argnums=None) -> str:
    """The readable Python source of `fun`'s derivative for these arguments.

    mode="rev" shows the vjp (forward sweep, then the return sweep with
    provenance comments); mode="fwd" shows the jvp (tangent statements next to
    primal ones).
    """
    from .backends.pysource import emit_prog
    from .frontend import stage
    from .ir.traverse import prune_prog
    from .passes.jvp import jvp_prog
    from .passes.vjp import vjp_prog

    if mode not in ("rev", "fwd"):
        raise PullbackError(f"mode must be 'rev' or 'fwd', got {mode!r}")
    st = stage(fun, args)
    prog, name = (vjp_prog if mode == "rev" else jvp_prog)(st.prog)
    prog = prune_prog(prog.with_funcs(prog.funcs, entry=name))
    return emit_prog(prog)


@dataclass
class MemoryReport:
    """What the return sweep held: `peak_bytes` is the peak of bytes in stores
    (saved loop values and undo logs) during one gradient evaluation."""

    peak_bytes: int
    final_bytes: int

    def __str__(self):
        return f"MemoryReport(peak_bytes={self.peak_bytes})"


def memory_report(fun, *args) -> MemoryReport:
    """Run `fun`'s reverse pass (a vjp with an all-ones cotangent) on the
    reference interpreter and report the bytes its stores held."""
    from .backends.interp import Meter, run
    from .frontend import stage

    st = stage(_Transformed(lambda ctx, a: _ones_vjp(ctx, fun, a), fun, "interp", "vjp"), args)
    meter = Meter()
    leaves, _ = flatten(tuple(args))
    run(st.prog, *leaves, meter=meter)
    return MemoryReport(meter.peak, meter.live)


def _ones_vjp(ctx, fun, args):
    from .ir.core import Const

    out, vfn = transforms.vjp(ctx, fun, args)
    atoms, tree = ctx.to_atoms(out)
    ones = [ctx.builder.emit("full", Const(1.0, a.type.with_shape(())), shape=tuple(a.type.shape), name="ones")
            for a in atoms]
    return vfn.__pullback_stage__(ctx, (ctx.from_atoms(ones, tree),), {})
