"""The numba form of `smul`, the strong product (`passes/strong_mul.py`, note
[strong-mul]): `libcalls` contract. A scalar (also inside fused loops) is a
call of the intrinsic `numba_smul._pb_smul_s` (one product, one compare and a
rarely taken branch), or, in a loop that does not change one factor
(`fe.loop_invariant`), of `_pb_smul_sc`/`_pb_smul_cs`; an array goes through a
small helper that computes the plain product and applies the guard only when
the product has a NaN. pysource prints the table implementation (the pass runs
on numba only).

The scalar form is a call, not a conditional expression at each site (note
[compile-time]): numba turns every conditional expression into branches and a
variable defined on two paths, which its SSA reconstruction then rewrites over
the whole function; a call is one statement, typed once per signature."""
from __future__ import annotations

from . import register

_ARRAY = """{deco}
def _pb_smul(x, y):
    r = x * y
    for v in r.flat:
        if v != v:
            return np.where(np.isnan(r) & ((x == 0) | (y == 0)), 0.0, r)
    return r
"""


def _numba(dialect, fe, e, pat):
    x, y = (fe.a(a) for a in e.args)
    if not pat[0].type.shape:
        # a factor the loop printing the product does not change (note [strong-mul], "Invariant factors")
        fixed = [fe.loop_invariant(a) for a in e.args]
        name = "_pb_smul_sc" if fixed == [False, True] else "_pb_smul_cs" if fixed == [True, False] else "_pb_smul_s"
        dialect.helper(f"{name}_import", f"from pullback.backends.numba_smul import {name}")
        return f"{name}({x}, {y})"
    h = dialect.helper("_pb_smul", _ARRAY.format(deco=dialect.deco))
    return f"{h}({x}, {y})"


register("smul", _numba, elementwise=True)

_MASK = """{deco}
def _pb_smask(y, a, d):
    r = a * d
    for v in np.asarray(r).flat:
        if v != v:
            return np.where(np.isnan(r) & ((a == 0) | (d == 0)), 0.0, y)
    return y.copy()
"""


def _numba_mask(dialect, fe, e, pat):
    y, a, d = (fe.a(x) for x in e.args)
    if not pat[0].type.shape:
        dialect.helper("_pb_smask_import", "from pullback.backends.numba_smul import _pb_smask_s")
        return f"_pb_smask_s({y}, {a}, {d})"
    h = dialect.helper("_pb_smask", _MASK.format(deco=dialect.deco))
    return f"{h}({y}, {a}, {d})"


register("smask", _numba_mask, elementwise=True)   # note [strong-mul], "Masks"
