"""Reverse-mode memory/time strategies: the values of the `checkpoint=` keyword.

Contract: every reverse-mode transformation (`grad`, `value_and_grad`, `vjp`,
`jacobian(mode="rev")`, `jacrev`, `hessian`, `memory_report`) takes
`checkpoint=`; `parse(value, what)` turns it into a `Strategy` or raises a
`PullbackError` that names the call. Strategies are hashable values: the
derived program is cached per strategy.

- `"store"` (the default, `Store()`): calls are reversed in split mode, so
  recursion costs linear time and memory (note [split-calls]); loops save
  their loop-carried state per iteration (note [loop-reversal]).
- `Joint()`: a call's return sweep re-executes the callee (Futhark's redundant
  execution at function granularity). Memory stays at one frame's worth per
  call level, time grows with the call depth (quadratic for recursion).

Issue 11's loop strategies (binomial, bisection, strip-mining, online,
budgets) extend this module.
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import PullbackError, short_repr


class Strategy:
    """Base class of the `checkpoint=` values."""

    #: reverse calls of recursive functions in split mode (store residuals)
    split_calls = True


@dataclass(frozen=True)
class Store(Strategy):
    """`checkpoint="store"`: split-mode calls, per-iteration loop saves."""

    split_calls = True

    def __repr__(self):
        return '"store"'


@dataclass(frozen=True)
class Joint(Strategy):
    """`checkpoint=pb.Joint()`: each call's return sweep re-executes the callee.

    Cheapest in memory; time grows with the depth of nested calls (a recursion
    of depth d costs O(d^2) primal steps)."""

    split_calls = False

    def __repr__(self):
        return "pb.Joint()"


DEFAULT = Store()


def parse(value, what: str) -> Strategy:
    """The `Strategy` for a user's `checkpoint=` value."""
    if value is None or (isinstance(value, str) and value == "store"):
        return DEFAULT
    if isinstance(value, Strategy):
        return value
    if isinstance(value, type) and issubclass(value, Strategy):
        raise PullbackError(f"{what}: checkpoint={value.__name__} is a class; pass an instance",
                            hint=f"write checkpoint=pb.{value.__name__}()")
    raise PullbackError(f"{what}: unknown checkpoint strategy {short_repr(value)}",
                        hint='use checkpoint="store" (the default: linear-time calls) or '
                             "checkpoint=pb.Joint() (re-execute callees, least memory)")
