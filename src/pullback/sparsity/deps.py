"""Dependency sets as sparse boolean matrices (note [sparse-jacobian]).

Contract: the dependency set of an IR value of `size` elements is a
`scipy.sparse.csr_array` of dtype bool and shape ``(size, ncols)``: row i holds
the input elements (columns) that element i of the value (flattened in C
order) may depend on. ``None`` stands for "depends on nothing" (a constant, an
integer). Every helper returns canonical matrices (sorted column indices, no
duplicates, only True entries) or None, so two sets compare by their number
of stored entries when one is known to contain the other.

A matrix that would hold more than `MAX_NNZ` entries raises `TooDense`: the
pattern is then too dense for a sparse Jacobian to pay, and the caller says so.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

MAX_NNZ = 2 * 10 ** 8


class TooDense(Exception):
    """A dependency set would hold more than `MAX_NNZ` entries."""


def make(indptr, indices, shape):
    """The csr matrix with the given structure (every stored entry True)."""
    indices = np.asarray(indices, dtype=np.int64)
    return sp.csr_array((np.ones(len(indices), dtype=bool), indices, np.asarray(indptr, dtype=np.int64)),
                        shape=tuple(int(s) for s in shape))


def canonical(m):
    """`m` (any sparse matrix or array) as a canonical bool csr_array."""
    m = sp.csr_array(m)
    if m.dtype != bool:
        m = m.astype(bool)
    m.sum_duplicates()
    m.eliminate_zeros()
    m.sort_indices()
    return m


def empty(rows: int, ncols: int):
    return make(np.zeros(rows + 1, dtype=np.int64), [], (rows, ncols))


def identity_cols(rows: int, ncols: int, start: int):
    """Row j depends on column `start + j` alone."""
    return make(np.arange(rows + 1), start + np.arange(rows), (rows, ncols))


def pad(d, ncols: int):
    """`d` with more (empty) columns: a set over a wider column space."""
    if d is None or d.shape[1] == ncols:
        return d
    return make(d.indptr, d.indices, (d.shape[0], ncols))


def _check(n):
    if n > MAX_NNZ:
        raise TooDense(n)


def take_rows(d, src):
    """Rows `src` of `d` (an index array; -1 gives an empty row)."""
    src = np.asarray(src, dtype=np.int64).ravel()
    valid = src >= 0
    s = np.where(valid, src, 0)
    if d.shape[0] == 0:
        return empty(len(src), d.shape[1])
    starts = d.indptr[s]
    counts = np.where(valid, d.indptr[s + 1] - starts, 0)
    ptr = np.zeros(len(src) + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    total = int(ptr[-1])
    _check(total)
    idx = np.arange(total, dtype=np.int64) + np.repeat(starts - ptr[:-1], counts)
    return make(ptr, d.indices[idx], (len(src), d.shape[1]))


def union(ds):
    """The element-wise union of same-shaped sets (None entries are empty); None if all are."""
    ds = [d for d in ds if d is not None]
    if not ds:
        return None
    out = ds[0]
    for d in ds[1:]:
        if d.nnz == 0:
            continue
        out = d if out.nnz == 0 else canonical(out + d)
        _check(out.nnz)
    return out


def columns(ds) -> np.ndarray:
    """Every column any of the sets `ds` holds (sorted, unique)."""
    parts = [d.indices for d in ds if d is not None and d.nnz]
    if not parts:
        return np.zeros(0, dtype=np.int64)
    return np.unique(np.concatenate(parts))


def whole(ds, rows: int, ncols: int):
    """The conservative set: each of `rows` elements depends on every column of `ds`."""
    if all(d is None for d in ds):
        return None
    u = columns(ds)
    _check(rows * len(u))
    return make(np.arange(rows + 1, dtype=np.int64) * len(u), np.tile(u, rows), (rows, ncols))


def apply(m, d):
    """The set of ``m @ values``: row i depends on the union of rows j of `d` with m[i, j]."""
    if d is None:
        return None
    r = sp.csr_array(m) @ d
    return canonical(r)


def structure(rows, cols, shape):
    """A 0/1 matrix of `shape` with ones at (rows, cols) (duplicates allowed)."""
    rows = np.asarray(rows, dtype=np.int64).ravel()
    cols = np.asarray(cols, dtype=np.int64).ravel()
    _check(len(rows))
    return sp.csr_array((np.ones(len(rows), dtype=bool), (rows, cols)), shape=shape)


def stack(ds, sizes, ncols):
    """The sets `ds` (None: `sizes[k]` empty rows) one above the other."""
    if all(d is None for d in ds):
        return None
    if len(ds) == 1:
        return ds[0]
    ptrs, idxs, base = [np.zeros(1, dtype=np.int64)], [], 0
    for d, s in zip(ds, sizes):
        if d is None:
            ptrs.append(np.full(s, base, dtype=np.int64))
        else:
            ptrs.append(d.indptr[1:].astype(np.int64) + base)
            idxs.append(d.indices)
            base += d.nnz
    idx = np.concatenate(idxs) if idxs else np.zeros(0, dtype=np.int64)
    return make(np.concatenate(ptrs), idx, (int(sum(sizes)), ncols))


def same(a, b) -> bool:
    """Whether `b`, a superset of `a`, equals it."""
    if a is None or b is None:
        return (a is None or a.nnz == 0) and (b is None or b.nnz == 0)
    return a.nnz == b.nnz
