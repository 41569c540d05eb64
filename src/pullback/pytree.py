"""Pytrees: nested tuples, lists and dicts (and None) of leaves.

Contract: `flatten(x) -> (leaves, treedef)` and `unflatten(treedef, leaves)`
are inverse; `builder(treedef)` is `lambda leaves: unflatten(treedef, leaves)`
made once for a tree that is built again and again (a flat tuple of leaves
needs no walk). Dict keys are sorted, as in JAX (keys that cannot be ordered
among themselves raise a `PullbackError`, as does a container that contains
itself). A treedef is hashable, so it can key the staging cache.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TreeDef:
    kind: str  # "leaf", "tuple", "list", "dict", "none"
    children: tuple["TreeDef", ...] = ()
    keys: tuple[Any, ...] = ()

    @property
    def num_leaves(self) -> int:
        if self.kind == "leaf":
            return 1
        return sum(c.num_leaves for c in self.children)

    def __str__(self):
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        inner = ", ".join(map(str, self.children))
        if self.kind == "tuple":
            return f"({inner}{',' if len(self.children) == 1 else ''})"
        if self.kind == "list":
            return f"[{inner}]"
        return "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(self.keys, self.children)) + "}"


LEAF = TreeDef("leaf")
MAX_DEPTH = 200  # containers nested deeper than this are refused (Python's stack would not hold them)


def flatten(x, is_leaf=None) -> tuple[list, TreeDef]:
    leaves: list = []
    # `active`: ids of the containers on the current path (cycle check). Module-level
    # recursion, not a closure calling itself: that is a reference cycle holding the leaves.
    tree = _walk(x, is_leaf, leaves, set())
    return leaves, tree


def _enter(v, active: set) -> None:
    if len(active) >= MAX_DEPTH:
        from .errors import PullbackError

        raise PullbackError(f"an argument or result is nested more than {MAX_DEPTH} containers deep",
                            hint="flatten the data into arrays (np.stack) or shallower tuples/lists/dicts")
    if id(v) in active:
        from .errors import PullbackError

        raise PullbackError(f"a {type(v).__name__} that contains itself cannot be an argument or a result",
                            hint="pass nested tuples, lists and dicts without cycles")
    active.add(id(v))


def _walk(v, is_leaf, leaves: list, active: set) -> TreeDef:
    if is_leaf is not None and is_leaf(v):
        leaves.append(v)
        return LEAF
    if isinstance(v, (tuple, list, dict)):
        _enter(v, active)
        try:
            if isinstance(v, tuple):
                return TreeDef("tuple", tuple(_walk(c, is_leaf, leaves, active) for c in v))
            if isinstance(v, list):
                return TreeDef("list", tuple(_walk(c, is_leaf, leaves, active) for c in v))
            keys = _sorted_keys(v)
            return TreeDef("dict", tuple(_walk(v[k], is_leaf, leaves, active) for k in keys), keys)
        finally:
            active.discard(id(v))
    if v is None:
        return TreeDef("none")
    leaves.append(v)
    return LEAF


def _sorted_keys(d) -> tuple:
    try:
        return tuple(sorted(d))
    except TypeError:
        from .errors import PullbackError

        kinds = sorted({type(k).__name__ for k in d})
        raise PullbackError(f"the keys of a dict argument or result cannot be ordered (keys of types {kinds})",
                            hint="use keys of one type (e.g. all strings); pullback sorts dict keys, as JAX does") from None


def unflatten(tree: TreeDef, leaves) -> Any:
    return _build(tree, iter(leaves))


def _build(t: TreeDef, it) -> Any:
    # a module-level function: a closure calling itself is a reference cycle, which kept
    # every call's result arrays alive until the garbage collector ran
    if t.kind == "leaf":
        return next(it)
    if t.kind == "none":
        return None
    kids = [_build(c, it) for c in t.children]
    if t.kind == "tuple":
        return tuple(kids)
    if t.kind == "list":
        return kids
    return dict(zip(t.keys, kids))


def builder(tree: TreeDef):
    """`lambda leaves: unflatten(tree, leaves)` (`leaves` a sequence), without the walk
    where `tree` is a tuple of leaves (a warm call's result conversion, note
    [call-overhead])."""
    if tree.kind == "tuple" and all(c.kind == "leaf" for c in tree.children):
        return tuple
    return lambda leaves: _build(tree, iter(leaves))


def tree_map(fn, x, *rest):
    leaves, tree = flatten(x)
    others = [flatten(r)[0] for r in rest]
    return unflatten(tree, [fn(*vs) for vs in zip(leaves, *others)])
