"""The numba form of `smul`, the strong product (`passes/strong_mul.py`, note
[strong-mul]): `libcalls` contract. A scalar (also inside fused loops) is one
conditional expression; an array goes through a small helper. pysource prints
the table implementation (the pass runs on numba only)."""
from __future__ import annotations

from . import register

_ARRAY = """{deco}
def _pb_smul(x, y):
    r = x * y
    return np.where(np.isnan(r) & ((x == 0) | (y == 0)), 0.0, r)
"""


def _numba(dialect, fe, e, pat):
    x, y = (fe.a(a) for a in e.args)
    if not pat[0].type.shape:
        r = f"({x} * {y})"
        return f"(0.0 if ({r} != {r}) & (({x} == 0) | ({y} == 0)) else {r})"
    h = dialect.helper("_pb_smul", _ARRAY.format(deco=dialect.deco))
    return f"{h}({x}, {y})"


register("smul", _numba, elementwise=True)
