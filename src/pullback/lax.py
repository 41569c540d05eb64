"""Small functions with JAX's names and meanings (issue 10).

Contract: `stop_gradient(x)` returns `x`; inside staged code its derivative
is zero in every mode and order (the `stop_gradient` primitive). Called on
concrete values outside pullback it is the identity. Pytrees of arrays are
handled leaf by leaf.
"""
from __future__ import annotations


def stop_gradient(x):
    """The value of `x`, treated as a constant by every derivative."""
    return x


def _stage_stop_gradient(st, x):
    from .frontend import ops
    from .frontend.values import Traced
    from .pytree import flatten, unflatten

    leaves, tree = flatten(x)
    out = [ops.emit(st, "stop_gradient", leaf.atom) if isinstance(leaf, Traced) else leaf for leaf in leaves]
    return unflatten(tree, out)


def _register():
    from .frontend.numpy_api import FUNCS

    FUNCS[stop_gradient] = _stage_stop_gradient


_register()
