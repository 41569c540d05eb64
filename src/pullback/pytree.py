"""Pytrees: nested tuples, lists and dicts (and None) of leaves.

Contract: `flatten(x) -> (leaves, treedef)` and `unflatten(treedef, leaves)`
are inverse. Dict keys are sorted, as in JAX. A treedef is hashable, so it can
key the staging cache.
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


def flatten(x, is_leaf=None) -> tuple[list, TreeDef]:
    leaves: list = []

    def go(v):
        if is_leaf is not None and is_leaf(v):
            leaves.append(v)
            return LEAF
        if isinstance(v, tuple):
            return TreeDef("tuple", tuple(go(c) for c in v))
        if isinstance(v, list):
            return TreeDef("list", tuple(go(c) for c in v))
        if isinstance(v, dict):
            keys = tuple(sorted(v))
            return TreeDef("dict", tuple(go(v[k]) for k in keys), keys)
        if v is None:
            return TreeDef("none")
        leaves.append(v)
        return LEAF

    tree = go(x)
    return leaves, tree


def unflatten(tree: TreeDef, leaves) -> Any:
    it = iter(leaves)

    def go(t):
        if t.kind == "leaf":
            return next(it)
        if t.kind == "none":
            return None
        kids = [go(c) for c in t.children]
        if t.kind == "tuple":
            return tuple(kids)
        if t.kind == "list":
            return kids
        return dict(zip(t.keys, kids))

    out = go(tree)
    return out


def tree_map(fn, x, *rest):
    leaves, tree = flatten(x)
    others = [flatten(r)[0] for r in rest]
    return unflatten(tree, [fn(*vs) for vs in zip(leaves, *others)])
