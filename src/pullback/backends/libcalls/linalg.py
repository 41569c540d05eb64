"""numba forms of the dense linear-algebra primitives (LAPACK through numba's
`np.linalg`, which takes contiguous 2-D operands): see `libcalls` for the contract."""
from __future__ import annotations

from . import register


def _lapack(name):
    def numba(dialect, fe, e, pat):
        ops_ = ", ".join(f"np.ascontiguousarray({fe.a(a)})" for a in e.args)
        return f"np.linalg.{name}({ops_})"
    return numba


def _py(name):
    def py(fe, e, pat):
        return f"np.linalg.{name}({', '.join(fe.a(a) for a in e.args)})"
    return py


for _op in ("solve", "slogdet"):
    register(_op, _lapack(_op), _py(_op))
