"""numba and NumPy forms of the reducers' primitives (ir/prims/combine.py):
`cumsum`/`rcumsum` (`pb.associative_scan` with `+`), and `unique_indices`
(`pb.scatter`'s duplicate check), an njit helper that sorts the in-range indices and compares neighbours,
O(m log m). See `libcalls` for the contract.

A duplicate raises ``IndexError`` with a constant message (numba cannot format
one). `backends.checks.translate` has no site kind for it, so on numba the
error is not located at the user's line and the API reports it as an
internal error carrying that message (interp and pysource locate it; a strict
xfail in tests/combinators/test_reducers.py tracks this).
"""
from __future__ import annotations

from . import register

_SRC = '''{deco}
def _unique_indices(idx, n):
    m = idx.shape[0]
    v = np.empty(m, np.int64)
    k = 0
    for j in range(m):
        i = idx[j]
        if i >= 0 and i < n:
            v[k] = i
            k += 1
    s = np.sort(v[:k])
    for j in range(1, k):
        if s[j] == s[j - 1]:
            raise IndexError("pb.scatter: an index occurs more than once (a scatter writes each position at most once; use pb.hist to combine values that share an index)")
    return idx.copy()'''


def _numba(dialect, fe, e, pat):
    h = dialect.helper("_unique_indices", _SRC.format(deco=dialect.deco))
    return f"{h}({fe.a(e.args[0])}, {int(e.p['n'])})"


register("unique_indices", _numba)


def _cumsum_numba(dialect, fe, e, pat):
    return f"np.cumsum({fe.a(e.args[0])})"


def _rcumsum_numba(dialect, fe, e, pat):
    return f"np.ascontiguousarray(np.cumsum({fe.a(e.args[0])}[::-1])[::-1])"


def _cumsum_py(fe, e, pat):
    return f"np.cumsum({fe.a(e.args[0])})"


def _rcumsum_py(fe, e, pat):
    return f"np.cumsum({fe.a(e.args[0])}[::-1])[::-1].copy()"


register("cumsum", _cumsum_numba, _cumsum_py)
register("rcumsum", _rcumsum_numba, _rcumsum_py)
