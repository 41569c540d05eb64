"""pullback.frontend: stage a Python function into IR, specialised per argument signature.

Public API (used by `pullback.api`):

    staged = stage(fn, args, static_argnums=())
    staged.prog      # ir.core.Prog; entry params = one Var per leaf of the non-static args
    staged.in_tree   # pytree.TreeDef of the non-static args tuple
    staged.out_tree  # TreeDef of the return value
    staged.in_types  # list[TensorType] of the argument leaves
    signature_key(args, static_argnums)  # hashable cache key

`fn` is a Python function (read from its source with `inspect`/`ast`) or an
object with a `__pullback_stage__(ctx, args, kwargs)` method (see
`calls.StagingContext`). Every error is a `PullbackError` carrying the user's
file and line.

Staging is serialised by one re-entrant lock, `STAGING_LOCK` (staging re-enters
itself through nested transformations): `stage` holds it, and so does
`pullback.api` around a first call (staging plus creating the runner), so the
frontend's caches (`source._CACHE`, ...) need no locks of their own.

Modules: `values` (Traced, weak scalars), `source`/`rewrite` (AST and
control-flow rewrites), `staging` (statements and expressions), `assign`
(assignments), `control`/`iterables` (if, for, while), `calls` (call dispatch,
closures, hooks), `funcs` (helpers as IR functions, recursion), `alias`
(in-place updates and aliasing), `ops`/`numpy_api` (NumPy).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from ..errors import in_staging
from ..ir.core import Prog
from ..pytree import TreeDef, flatten
from .calls import StagingContext, stage_entry
from .values import Traced, leaf_type


STAGING_LOCK = threading.RLock()


@dataclass
class Staged:
    prog: Prog
    in_tree: TreeDef
    out_tree: TreeDef
    in_types: list
    runner: object = None  # set by `pb.jit`: the backend's compiled entry for `prog`
    out_dtypes: tuple = ()  # set by `pb.jit`: NumPy dtypes of the entry's results


def stage(fn, args, static_argnums=()) -> Staged:
    """Stage `fn` applied to `args` (a tuple of actual argument values)."""
    if not isinstance(args, tuple):
        args = tuple(args)
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    with STAGING_LOCK, in_staging():
        prog, in_tree, out_tree, in_types = stage_entry(fn, args, tuple(static_argnums))
    return Staged(prog, in_tree, out_tree, in_types)


def _hashable_static(v):
    if isinstance(v, np.ndarray):
        return ("ndarray", v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, (list, tuple)):
        return (type(v).__name__,) + tuple(_hashable_static(x) for x in v)
    if isinstance(v, dict):
        return ("dict",) + tuple((k, _hashable_static(v[k])) for k in sorted(v))
    try:
        hash(v)
        return (type(v).__name__, v)
    except TypeError:
        return ("id", id(v))


def signature_key(args, static_argnums=()):
    """A hashable key: treedef of the non-static args, their leaf types, and the static values."""
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    args = tuple(args)
    static = set(i % len(args) if args else i for i in static_argnums)
    nonstatic = tuple(a for i, a in enumerate(args) if i not in static)
    leaves, tree = flatten(nonstatic)
    return (tree, tuple(leaf_type(x) for x in leaves),
            tuple((i, _hashable_static(args[i])) for i in sorted(static)))


__all__ = ["stage", "Staged", "Traced", "StagingContext", "signature_key", "STAGING_LOCK"]
