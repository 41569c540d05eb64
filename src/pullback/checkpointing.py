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

Loop strategies (note [loop-checkpointing]): the return sweep of a loop
brings back the state at the start of each iteration by recomputing it from
snapshots instead of saving every iteration (`passes/vjp/checkpoint.py`):

- `Binomial(snapshots=s)`: Griewank's binomial schedule (Revolve), the least
  number of forward steps for s snapshots;
- `Bisection()`: split every range in halves: O(log t) snapshots, O(t log t) time;
- `StripMine(levels=k)`: Futhark's strip-mining: k levels of chunks, about
  k * t**(1/k) snapshots and k + 1 executions of each iteration;
- `Online(snapshots=s)`: for `while` loops: the binomial schedule on the trip
  count the forward sweep counted (it runs the loop anyway, so counting costs
  nothing and the offline optimum applies);
- `Budget(bytes=B)` and `"auto"`: store every iteration when that fits in B
  bytes (a static trip count), else the binomial schedule with as many
  snapshots of the loop's state as fit in B bytes (per loop); `"auto"` is
  `Budget` with a quarter of the machine's memory.
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import PullbackError, call_site, short_repr


class Strategy:
    """Base class of the `checkpoint=` values."""

    #: reverse calls of recursive functions in split mode (store residuals)
    split_calls = True
    #: loops are reversed by recomputation from snapshots (note [loop-checkpointing])
    loops = False


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


def _set_count(obj, field: str, value, hint: str, what: str = "an int >= 1") -> None:
    """Set a strategy's count field (an int >= 1), or raise an error at the user's line."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PullbackError(f"pb.{type(obj).__name__}({field}={short_repr(value)}): {field} must be {what}",
                            loc=call_site(), hint=hint)
    object.__setattr__(obj, field, value)


@dataclass(frozen=True, init=False)
class Binomial(Strategy):
    """`checkpoint=pb.Binomial(snapshots=s)`: Griewank's binomial schedule for each loop.

    At most `s` states of a loop are kept at once, the state at the start of the
    loop included; the number of forward steps the return sweep recomputes is
    Griewank's optimum r*t - C(s+r, s-1) for t iterations, r the least integer with
    C(s+r, s) >= t (note [loop-checkpointing] states the counting convention)."""

    snapshots: int

    loops = True

    def __init__(self, snapshots: int):
        # a hand-written __init__, so that errors point at the user's line (not dataclass's <string>)
        _set_count(self, "snapshots", snapshots, hint="the state at the start of the loop is one snapshot: "
                                     "snapshots=1 recomputes from it alone (quadratic time)")

    def __repr__(self):
        return f"pb.Binomial(snapshots={self.snapshots})"


@dataclass(frozen=True)
class Bisection(Strategy):
    """`checkpoint=pb.Bisection()`: each loop's iterations are reversed by
    divide and conquer: O(log t) snapshots, O(t log t) recomputed steps."""

    loops = True

    def __repr__(self):
        return "pb.Bisection()"


@dataclass(frozen=True, init=False)
class Budget(Strategy):
    """`checkpoint=pb.Budget(bytes=B)`: each loop keeps at most B bytes of
    snapshots of its state (the binomial schedule with B // state-bytes
    snapshots). A budget that cannot hold one state is an error naming the loop."""

    bytes: int

    loops = True

    def __init__(self, bytes: int):
        _set_count(self, "bytes", bytes, hint="e.g. pb.Budget(bytes=64 * 2**20) for 64 MiB", what="a positive int")

    def __repr__(self):
        return f"pb.Budget(bytes={self.bytes})"


@dataclass(frozen=True, init=False)
class StripMine(Strategy):
    """`checkpoint=pb.StripMine(levels=k)`: each loop's iterations are split
    into about t**(1/k) chunks, each chunk into as many, k levels deep
    (Futhark's strip-mining); the last level stores every iteration."""

    levels: int

    loops = True

    def __init__(self, levels: int = 2):
        _set_count(self, "levels", levels, hint="levels=1 stores every iteration; 2 or 3 are typical")

    def __repr__(self):
        return f"pb.StripMine(levels={self.levels})"


@dataclass(frozen=True, init=False)
class Online(Binomial):
    """`checkpoint=pb.Online(snapshots=s)`: for `while` loops of unknown length.
    pullback's forward sweep runs the loop once and counts its iterations as it
    goes, so the return sweep knows the trip count and uses the binomial
    schedule with s snapshots, which is optimal offline (no online schedule
    does better)."""

    def __repr__(self):
        return f"pb.Online(snapshots={self.snapshots})"


def _auto_budget() -> int:
    import os

    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")) // 4
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 1 << 30


@dataclass(frozen=True, init=False)
class Auto(Budget):
    """`checkpoint="auto"`: `Budget` with a quarter of the machine's memory."""

    def __init__(self):
        super().__init__(_auto_budget())

    def __repr__(self):
        return '"auto"'


DEFAULT = Store()


def parse(value, what: str) -> Strategy:
    """The `Strategy` for a user's `checkpoint=` value."""
    if value is None or (isinstance(value, str) and value == "store"):
        return DEFAULT
    if isinstance(value, str) and value == "auto":
        return Auto()
    if isinstance(value, Strategy):
        return value
    if isinstance(value, type) and issubclass(value, Strategy):
        raise PullbackError(f"{what}: checkpoint={value.__name__} is a class; pass an instance",
                            hint=f"write checkpoint=pb.{value.__name__}()")
    raise PullbackError(f"{what}: unknown checkpoint strategy {short_repr(value)}",
                        hint='use checkpoint="store" (the default), "auto", pb.Joint(), pb.Binomial(snapshots=s), '
                             "pb.Bisection(), pb.StripMine(levels=k), pb.Online(snapshots=s) or pb.Budget(bytes=n)")
