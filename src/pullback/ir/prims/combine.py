"""Primitives of the reducers (`pb.scatter`; note [reducers]).

Contract:
- ``unique_indices(idx, n=n) -> idx``: the identity on the i64 index vector
  `idx`, after checking that no index in ``[0, n)`` occurs twice (indices
  outside that range, negatives included, are ignored). The check sorts the
  in-range indices: O(m log m) for m indices, never a table of size `n`. A
  duplicate raises `DuplicateIndexError` (an `IndexError`, so the backends
  locate it at the user's line like an out-of-bounds index). `pb.scatter`
  puts it in front of its write loop, whose input it is, so it runs before
  any write and is never dead code. Integer result: no derivative.
"""
from __future__ import annotations

import numpy as np

from ..types import TensorType
from . import TABLE, Row, check


class DuplicateIndexError(IndexError):
    """An index that `pb.scatter` would write twice."""

    def __init__(self, index, n):
        super().__init__(f"pb.scatter: index {index} occurs more than once among the indices in [0, {n}) "
                         "(a scatter writes each position at most once; use pb.hist to combine "
                         "values that share an index)")
        self.index, self.n = index, n


def first_duplicate(idx, n: int):
    """The smallest index in [0, n) that occurs twice in `idx`, or None."""
    idx = np.asarray(idx).reshape(-1)
    inr = np.sort(idx[(idx >= 0) & (idx < n)], kind="stable")
    dup = np.nonzero(inr[1:] == inr[:-1])[0]
    return int(inr[dup[0]]) if dup.size else None


def _unique_type(ts, n):
    (t,) = ts
    check(isinstance(t, TensorType) and t.dtype == "i64" and t.ndim == 1,
          f"unique_indices: the indices must be a vector of i64, got {t}")
    check(isinstance(n, int) and n >= 0, f"unique_indices: bad size {n!r}")
    return (t,)


def _unique_impl(idx, n):
    d = first_duplicate(idx, n)
    if d is not None:
        raise DuplicateIndexError(d, n)
    return np.array(idx, dtype=np.int64, copy=True)


def _unique_cost(ts, outs, n):
    m = ts[0].size
    return int(m * max(1, int(np.log2(max(m, 2)))))


TABLE.add(Row("unique_indices", _unique_type, _unique_impl, cost=_unique_cost, zero_deriv=True,
              doc="identity on indices that are unique in [0, n); a duplicate is a located error"))
