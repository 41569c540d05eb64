"""Staging of `pb.map` and `pb.vmap` into the IR's `Map` (note [combinators]).

Contract:
- `stage_map(ctx, fun, mapped, loc)`: `mapped` is a list of (staged value,
  mapped?) pairs, a value being a pytree; the leaves of a mapped value are
  arrays sharing their leading dimension n, the others are passed whole.
  `fun` is staged once on the elements (a Python `lambda`, a local or global
  `def`, or a pullback transformation such as `pb.grad(f)`), closure-converted
  when it reads traced values, and its body is copied into one `Map` whose
  lambda reads the whole values and captured values as free variables. The
  result is `fun`'s output pytree with every leaf stacked along a new leading
  axis of length n.
- Errors (no mapped value, leading dimensions that differ, a mapped scalar)
  are located `PullbackError`s at the user's line.
"""
from __future__ import annotations

from ..errors import PullbackError, ShapeError
from ..ir.core import Const, Lambda, Let, Map
from ..ir.traverse import rename_body
from ..ir.types import I64, TensorType
from ..pytree import flatten, unflatten
from .values import Traced


def _fname(fun) -> str:
    return getattr(fun, "__name__", None) or type(fun).__name__


def stage_map(ctx, fun, mapped, loc, what="pb.map"):
    from .. import transforms

    if not callable(fun):
        raise PullbackError(f"{what}: the function argument is {type(fun).__name__}, not a function", loc=loc,
                            hint=f"write {what}(f, xs) with f a lambda or def taking one element of each array")
    b = ctx.builder
    width = None
    args, arrays, elems = [], [], []
    for val, is_mapped in mapped:
        if not is_mapped:
            args.append(val)
            continue
        atoms, tree = ctx.to_atoms(val)
        if not atoms:
            raise PullbackError(f"{what}: a mapped argument has no arrays in it", loc=loc,
                                hint="pass arrays whose leading axis is the one to map over")
        ph = []
        for a in atoms:
            t = a.type
            if not isinstance(t, TensorType) or t.ndim == 0:
                raise ShapeError(f"{what}: cannot map over a scalar ({t})", loc=loc,
                                 hint="map over arrays (a Python list is a pytree of its items: pass np.array(...)); "
                                      "pass scalars as arguments that are not mapped (in_axes=None in "
                                      "pb.vmap) or read them from the enclosing code")
            if width is None:
                width = t.shape[0]
            elif t.shape[0] != width:
                raise ShapeError(f"{what}: the mapped arrays have leading dimensions {width} and {t.shape[0]}",
                                 loc=loc, hint="every mapped array needs the same length along the mapped axis")
            arrays.append(a)
            elems.append(b.fresh("x", TensorType(t.dtype, t.shape[1:])))
            ph.append(Traced(elems[-1]))
        args.append(unflatten(tree, ph))
    if width is None:
        raise PullbackError(f"{what}: nothing to map over", loc=loc,
                            hint="pass at least one array whose leading axis is mapped")
    fname, leaves, _, out_tree, ret_types = transforms.stage_fn(ctx, fun, tuple(args))
    if not ret_types:
        raise PullbackError(f"{what}: '{_fname(fun)}' returns no arrays or numbers to stack", loc=loc,
                            hint="return the per-element result (a number, an array or a tuple of them)")
    func = ctx.state.funcs[fname]
    mapping = dict(zip(func.params, leaves))
    index = b.fresh("i", I64)
    body = rename_body(func.body, b.supply, mapping)
    loc_of = getattr(ctx, "loc", None)
    body = type(body)(tuple(Let(s.pat, s.exp, s.loc or loc_of) for s in body.stmts), body.result)
    outs = tuple(b.fresh(f"{_fname(fun)}_out" if _fname(fun) != "<lambda>" else "ys",
                         TensorType(t.dtype, (width,) + tuple(t.shape))) for t in ret_types)
    b.let(outs, Map(Const(width, I64), tuple(arrays), (), Lambda((index,) + tuple(elems), body)), loc)
    return ctx.from_atoms(list(outs), out_tree)


def eager_map(fun, *xs):
    """`pb.map` on concrete values (outside staged code): NumPy semantics, one call per element."""
    import numpy as np

    leaves_xs = [flatten(x) for x in xs]
    if any(np.ndim(leaf) == 0 for leaves, _ in leaves_xs for leaf in leaves):
        raise ShapeError("pb.map: cannot map over a scalar",
                         hint="map over arrays (a Python list is a pytree of its items: pass np.array(list))")
    ns = {np.shape(leaf)[0] for leaves, _ in leaves_xs for leaf in leaves}
    if len(ns) != 1:
        raise ShapeError("pb.map: the mapped arrays need one common leading dimension"
                         + (f", got {sorted(ns)}" if ns else ""),
                         hint="every mapped array needs the same length along the mapped axis")
    (n,) = ns
    outs = []
    for i in range(n):
        args = [unflatten(tree, [np.asarray(leaf)[i] for leaf in leaves]) for leaves, tree in leaves_xs]
        outs.append(fun(*args))
    if not outs:
        raise ShapeError("pb.map over empty arrays outside staged code cannot infer the result shape",
                         hint="call it inside a pb.jit/pb.grad function, where shapes are known")
    first, tree = flatten(outs[0])
    cols = [[flatten(o)[0][j] for o in outs] for j in range(len(first))]
    return unflatten(tree, [np.stack([np.asarray(c) for c in col]) for col in cols])

