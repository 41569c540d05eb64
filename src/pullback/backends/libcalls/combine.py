"""numba and NumPy forms of the reducers' primitives (ir/prims/combine.py):
`cumsum`/`rcumsum` (`pb.associative_scan` with `+`), and `unique_indices`
(`pb.scatter`'s duplicate check), an njit helper that sorts the in-range indices and compares neighbours,
O(m log m). See `libcalls` for the contract.

A duplicate raises ``IndexError(site, index)`` for the check site "duplicate"
(`backends.checks`), which the numba backend turns into the located error.
"""
from __future__ import annotations

from . import register

_SRC = '''{deco}
def _unique_indices(idx, n, site):
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
            raise IndexError(site, s[j])
    return idx.copy()'''


def _numba(dialect, fe, e, pat):
    from .. import checks

    h = dialect.helper("_unique_indices", _SRC.format(deco=dialect.deco))
    n = int(e.p["n"])
    k = fe.mod.sites.add(checks.Site("duplicate", fe.cur_loc, size=n))
    return f"{h}({fe.a(e.args[0])}, {n}, {k})"


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
