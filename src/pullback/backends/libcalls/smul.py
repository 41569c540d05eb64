"""The numba form of `smul`, the strong product (`passes/strong_mul.py`, note
[strong-mul]): `libcalls` contract. A scalar (also inside fused loops) is a
call of the small njit helper `_pb_smul_s`, an array a call of `_pb_smul`.
pysource prints the table implementation (the pass runs on numba only).

The scalar form is a call, not a conditional expression at each site (note
[compile-time]): numba turns every conditional expression into branches and a
variable defined on two paths, which its SSA reconstruction then rewrites over
the whole function; a call is one statement, typed once per signature, and
LLVM inlines the helper, so the machine code is the same."""
from __future__ import annotations

from . import register

_ARRAY = """{deco}
def _pb_smul(x, y):
    r = x * y
    return np.where(np.isnan(r) & ((x == 0) | (y == 0)), 0.0, r)
"""

_SCALAR = '''{deco}
def _pb_smul_s(x, y):
    """The strong product of two scalars: 0 where a factor is 0, whatever the other."""
    return (0.0 if ((x * y) != (x * y)) & ((x == 0) | (y == 0)) else (x * y))
'''


def _numba(dialect, fe, e, pat):
    x, y = (fe.a(a) for a in e.args)
    if not pat[0].type.shape:
        h = dialect.helper("_pb_smul_s", _SCALAR.format(deco=dialect.deco))
        return f"{h}({x}, {y})"
    h = dialect.helper("_pb_smul", _ARRAY.format(deco=dialect.deco))
    return f"{h}({x}, {y})"


register("smul", _numba, elementwise=True)
