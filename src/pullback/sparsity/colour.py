"""Greedy distance-2 colouring of a sparsity pattern's columns or rows
(note [sparse-jacobian]).

Contract: `colour_columns(P)` (P a canonical boolean csr_array, m x n) returns
an int64 array of n colours, 0 .. K-1, such that no two columns holding a
nonzero in the same row share a colour: the sum of the columns of one colour,
as a jvp seed, gives each of their nonzeros alone in its row (Curtis, Powell
and Reid). `colour_rows(P)` colours rows the same way, for vjp seeds. Greedy in
the natural order: each column takes the smallest colour none of its
distance-2 neighbours has. Costs the sum over rows of (row count)^2; a pattern
for which that exceeds `DENSE_WORK` gets one colour per column (a row that
full needs about as many colours as columns anyway).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

DENSE_WORK = 50_000_000


def colour_rows(p):
    return colour_columns(sp.csr_array(p.T))


def colour_columns(p):
    n = p.shape[1]
    p = sp.csr_array(p)
    counts = np.diff(p.indptr)
    if int(np.sum(counts.astype(np.int64) ** 2)) > DENSE_WORK:
        return np.arange(n, dtype=np.int64)
    # column j's neighbours: the columns of every row j is in (the pattern P^T P)
    conflict = sp.csr_array(p.T.astype(np.int32) @ p.astype(np.int32))
    conflict.sort_indices()
    ptr, idx = conflict.indptr.tolist(), conflict.indices.tolist()
    colours = [-1] * n
    for j in range(n):
        used = {colours[k] for k in idx[ptr[j]:ptr[j + 1]]}
        c = 0
        while c in used:
            c += 1
        colours[j] = c
    return np.asarray(colours, dtype=np.int64)


def check(p, colours, axis: int) -> bool:
    """Whether `colours` (of columns: axis=1, of rows: axis=0) is a valid distance-2 colouring."""
    p = sp.csr_array(p if axis == 1 else p.T)
    for r in range(p.shape[0]):
        cs = colours[p.indices[p.indptr[r]:p.indptr[r + 1]]]
        if len(np.unique(cs)) != len(cs):
            return False
    return True
