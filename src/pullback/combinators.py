"""Parallel combinators and batching: `pb.map`, `pb.vmap` (note [combinators]).

Contract: inside staged code each is one IR construct (`Map`) whose derivative
rules keep it parallel; outside staged code `map` runs eagerly with NumPy
semantics and `vmap(f)` compiles like `pb.jit`. `vmap` lowers to `map`, so
batching reuses its rules: it composes with `grad`, `jvp`, `jit` and itself
in any order.
"""
from __future__ import annotations

import builtins

from .errors import PullbackError

_map = builtins.map


def map(f, *xs):  # noqa: A001 - the combinator's name, as in Futhark and JAX's lax.map
    """`[f(*[x[i] for x in xs]) for i in range(n)]`, stacked: applies `f` to the
    elements along the leading axis of the arrays (or pytrees of arrays) `xs`.
    `f` may return a tuple or any pytree, and may read free variables,
    including whole arrays. Inside staged code the iterations are independent
    and run in parallel on the numba backend (`parallel=`)."""
    from .api import _boundary_error
    from .frontend.combinators import eager_map

    if not callable(f):
        raise _boundary_error(PullbackError(f"pb.map: the function argument is {type(f).__name__}, not a function",
                                            hint="write pb.map(f, xs) with f taking one element of each array"))
    try:
        return eager_map(f, *xs)
    except PullbackError as e:   # pullback's own errors name the caller's line; f's errors are f's
        raise _boundary_error(e) from None


map.__pullback_stages_functions__ = True  # staged whenever `f` reads traced values (frontend.calls)


def _axes(in_axes, n, loc):
    if isinstance(in_axes, (list, tuple)):
        if len(in_axes) != n:
            raise PullbackError(f"pb.vmap: in_axes has {len(in_axes)} entries but the function got {n} arguments",
                                loc=loc, hint="give one axis (or None) per positional argument")
        axes = list(in_axes)
    else:
        axes = [in_axes] * n
    for a in axes:
        if a is not None and not isinstance(a, int):
            raise PullbackError(f"pb.vmap: in_axes entries must be ints or None, got {a!r}", loc=loc)
    return axes


def _move(ctx, tree, src, dst):
    import numpy as np

    from .frontend.numpy_api import FUNCS
    from .pytree import flatten, unflatten

    if src == dst:
        return tree
    leaves, td = flatten(tree)
    return unflatten(td, [FUNCS[np.moveaxis](ctx._st, x, src, dst) for x in leaves])


def _stage_vmap(ctx, fun, args, in_axes, out_axes):
    from .frontend.combinators import stage_map

    loc = ctx.loc
    axes = _axes(in_axes, len(args), loc)
    if all(a is None for a in axes):
        raise PullbackError("pb.vmap: in_axes maps no argument", loc=loc,
                            hint="map at least one argument (in_axes=0 maps every argument's leading axis)")
    mapped = [(_move(ctx, x, a, 0) if a is not None else x, a is not None) for x, a in zip(args, axes)]
    out = stage_map(ctx, fun, mapped, loc, what="pb.vmap")
    if out_axes == 0:
        return out
    from .pytree import flatten

    for leaf in flatten(out)[0]:
        if not -leaf.ndim <= out_axes < leaf.ndim:
            raise PullbackError(f"pb.vmap: out_axes={out_axes} is out of range for a result of rank {leaf.ndim} "
                                "(the mapped axis included)", loc=loc,
                                hint=f"give an axis from {-leaf.ndim} to {leaf.ndim - 1}")
    return _move(ctx, out, 0, out_axes)


def vmap(fun, in_axes=0, out_axes=0, backend=None, parallel=None):
    """JAX's batching transformation: `vmap(f)(xs)` is `f` applied to each slice of
    `xs` along axis `in_axes` (an int, None for an argument passed whole, or a
    tuple with one entry per argument), stacked along `out_axes`. It lowers to
    `pb.map`, so it composes with `grad`, `jvp`, `jit` and itself. `parallel`:
    as every transformation's (`pullback.api`). Errors name the caller's line."""
    from .api import _api

    return _api(_vmap)(fun, in_axes, out_axes, backend, parallel)


def _vmap(fun, in_axes, out_axes, backend, parallel):
    from . import api

    api._prepare(fun, "vmap", backend, parallel=parallel)
    if not isinstance(out_axes, int):
        raise PullbackError(f"pb.vmap: out_axes must be an int, got {out_axes!r}",
                            hint="give the axis of the outputs the mapped axis becomes (default 0)")
    key = ("vmap", in_axes if not isinstance(in_axes, list) else tuple(in_axes), out_axes, backend, parallel)
    return api._cached(fun, key, lambda: api._Transformed(
        lambda ctx, f, a: _stage_vmap(ctx, f, a, in_axes, out_axes), fun, backend, api._name(fun, "vmap"),
        parallel))


def _stage_map_call(st, f, *xs):
    from .frontend.calls import StagingContext
    from .frontend.combinators import stage_map

    return stage_map(StagingContext(st), f, [(x, True) for x in xs], st.loc)


def _register():
    from .frontend.numpy_api import _TAKE_SEQUENCES, FUNCS

    FUNCS[map] = _stage_map_call
    _TAKE_SEQUENCES.add(map)   # a list or tuple is a pytree of mapped values, not one array


_register()
