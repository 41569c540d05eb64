"""Checkpoint schedules as primitives (note [loop-checkpointing]).

`revolve_split(t, s) -> m`: the number of steps to advance before placing the
next snapshot when reversing `t` steps with `s` snapshots (the state at the
start of the range included) by Griewank's binomial schedule. With r the least
integer such that beta(s, r) = C(s + r, s) >= t, an optimal choice is
``m = max(1, min(beta(s, r - 1), t - beta(s - 1, r - 1)))``; with s = 1 it is
t - 1 (recompute from the start for every step). Checked exhaustively against
the dynamic programme in tests/passes/test_checkpoint_schedule.py.
"""
from __future__ import annotations

from ..types import I64
from . import TABLE, Row, check


def beta(s: int, r: int) -> int:
    """C(s + r, s), computed incrementally (0 for r < 0)."""
    if r < 0:
        return 0
    out = 1
    for k in range(1, r + 1):
        out = out * (s + k) // k
    return out


def revolve_split(t: int, s: int) -> int:
    t, s = int(t), int(s)
    if t <= 1:
        return 0
    if s <= 1:
        return t - 1
    r, b = 0, 1          # b = beta(s, r)
    prev, prev1 = 0, 0   # beta(s, r - 1), beta(s - 1, r - 1)
    b1 = 1               # beta(s - 1, r)
    while b < t:
        prev, prev1 = b, b1
        r += 1
        b = b * (s + r) // r
        b1 = b1 * (s - 1 + r) // r
    return max(1, min(prev, t - prev1))


def _type(ts):
    t, s = ts
    check(t == I64 and s == I64, f"revolve_split takes two i64 scalars, got {t}, {s}")
    return (I64,)


TABLE.add(Row("revolve_split", _type, revolve_split, cost=lambda ts, outs: 16, zero_deriv=True,
              doc="Griewank's binomial split: steps to advance before the next snapshot"))
