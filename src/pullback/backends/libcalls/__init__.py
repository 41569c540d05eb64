"""Library-call forms of primitives: how a primitive that is computed by an
external library (LAPACK through NumPy/numba, `scipy.special`) is printed.

Contract: `LIBCALLS[op]` is a `LibCall`, registered by one sibling module per
library family (`linalg`, `special`, ...), one entry per primitive:

- ``numba(dialect, fe, e, pat) -> str``: the right-hand side that computes the
  `Prim` `e` (bound to the pattern `pat`) in numba code. ``fe.a(atom)`` gives an
  argument's text; ``dialect.helper(name, src)`` adds a module-level helper
  (`dialect.deco` is the njit decorator line) and returns its name. An
  ``elementwise`` primitive is also called inside fused loops, where its
  arguments and `pat` are scalars (rank 0): it must print a scalar form then.
- ``py(fe, e, pat) -> str | None``: the NumPy form for pysource; None (the
  default) prints a call of the table implementation (`runtime.impl`).
- ``elementwise``: the primitive maps scalars to scalars elementwise with
  broadcasting; numba's fusion may put it in a fused loop.

The emitters consult this table before their own forms, so adding a
primitive with a library form touches its `ir/prims` row and one module here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class LibCall:
    numba: Callable
    py: Callable | None = None
    elementwise: bool = False


LIBCALLS: dict[str, LibCall] = {}


def register(op: str, numba: Callable, py: Callable | None = None, elementwise: bool = False) -> None:
    assert op not in LIBCALLS, op
    LIBCALLS[op] = LibCall(numba, py, elementwise)


def elementwise_ops() -> set:
    return {op for op, lc in LIBCALLS.items() if lc.elementwise}


from . import linalg, special, callback, schedule, combine, vecmath, smul, transpose  # noqa: E402,F401  (registers entries)
