"""The numba form of `transpose` (`libcalls` contract; note [compile-time]): a
permutation that reverses the axes (every 2-D transpose) is ``x.T``, a view
numba builds inline. numba's ``np.transpose(x, perm)`` and ``x.transpose(perm)``
permute the shape through a slice assignment whose error path formats the
shapes into its message, and compiling that string formatting cost about 1 s
of every process's first compile of a module that transposes (gmm). Other
permutations keep ``np.transpose``. pysource prints its own form."""
from __future__ import annotations

from . import register


def _numba(dialect, fe, e, pat):
    (x,) = e.args
    nd = len(x.type.shape)
    perm = tuple(int(a) for a in e.p["perm"])
    if nd <= 1:
        return fe.a(x)
    if perm == tuple(range(nd))[::-1]:
        return f"{fe.a(x)}.T"
    return f"np.transpose({fe.a(x)}, {perm!r})"


register("transpose", _numba)
