"""The one place where generated names are decided.

Conventions (see DESIGN.md): tangents are ``x_tan``, adjoints ``x_adj``,
derived functions ``f_jvp`` and ``f_vjp`` (split mode: ``f_fwd`` and ``f_bwd``). `NameSupply` makes names unique
within a function by adding ``_2``, ``_3``, ... to a base name.
"""
from __future__ import annotations

import re

_SUFFIX = re.compile(r"_(\d+)$")


def base(name: str) -> str:
    """The user-facing stem of a name: ``x_3`` -> ``x``."""
    return _SUFFIX.sub("", name) or name


def tangent(name: str) -> str:
    return base(name) + "_tan"


def adjoint(name: str) -> str:
    return base(name) + "_adj"


def result_adjoint(name: str) -> str:
    """The cotangent parameter of a function result: ``y_adj``, or ``out_adj`` for a temporary."""
    stem = base(name)
    return adjoint(stem) if stem and stem not in ("t", "r") else "out_adj"


def saved(name: str) -> str:
    return base(name) + "_saved"


def undo(name: str) -> str:
    return base(name) + "_undo"


def jvp_func(fname: str) -> str:
    return fname + "_jvp"


def vjp_func(fname: str) -> str:
    return fname + "_vjp"


def grad_func(fname: str) -> str:
    return fname + "_grad"


def fwd_func(fname: str) -> str:
    """Split mode's forward sweep of `fname` (note [split-calls])."""
    return fname + "_fwd"


def bwd_func(fname: str) -> str:
    """Split mode's return sweep of `fname`."""
    return fname + "_bwd"


def segment_func(key: str) -> str:
    """The segment function of a checkpointed loop (note [loop-checkpointing]):
    ``loop1_ckpt``."""
    return key + "_ckpt"


def step_func(fname: str) -> str:
    """One step of `fname`'s step machine (whole-program checkpointing)."""
    return fname + "_step"


def tape(t) -> str:
    """The residual store of split mode for values of type `t`: ``tape_f64``,
    ``tape_f64_arr3x4``, ``tape_store``."""
    from .types import StoreType

    if isinstance(t, StoreType):
        return "tape_store"
    if not t.shape:
        return f"tape_{t.dtype}"
    return f"tape_{t.dtype}_arr" + "x".join(map(str, t.shape))


class NameSupply:
    """Hands out names that are unique among those it has seen."""

    def __init__(self, used=()):
        self.used: set[str] = set(used)
        self.counters: dict[str, int] = {}

    def fresh(self, hint: str = "t") -> str:
        hint = hint if hint.isidentifier() else "t"
        stem = base(hint)
        if stem not in self.used:
            self.used.add(stem)
            return stem
        n = self.counters.get(stem, 1)
        while True:
            n += 1
            cand = f"{stem}_{n}"
            if cand not in self.used:
                self.counters[stem] = n
                self.used.add(cand)
                return cand

    def reserve(self, name: str) -> None:
        self.used.add(name)
