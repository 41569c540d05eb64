"""numba form of `revolve_split` (ir/prims/schedule.py): the same integer loop
as the table impl, as an njit helper. See `libcalls` for the contract."""
from __future__ import annotations

from . import register

_SRC = '''{deco}
def _revolve_split(t, s):
    if t <= 1:
        return 0
    if s <= 1:
        return t - 1
    r = 0
    b = 1
    b1 = 1
    prev = 0
    prev1 = 0
    while b < t:
        prev = b
        prev1 = b1
        r += 1
        b = b * (s + r) // r
        b1 = b1 * (s - 1 + r) // r
    return max(1, min(prev, t - prev1))'''


def _numba(dialect, fe, e, pat):
    h = dialect.helper("_revolve_split", _SRC.format(deco=dialect.deco))
    return f"{h}({fe.a(e.args[0])}, {fe.a(e.args[1])})"


register("revolve_split", _numba)
