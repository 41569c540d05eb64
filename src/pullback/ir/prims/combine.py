"""Primitives of the reducers (`pb.scatter`; note [reducers]).

Contract:
- ``unique_indices(idx, n=n) -> idx``: the identity on the i64 index vector
  `idx`, after checking that no index in ``[0, n)`` occurs twice (indices
  outside that range, negatives included, are ignored). The check sorts the
  in-range indices: O(m log m) for m indices, never a table of size `n`. A
  duplicate raises `DuplicateIndex` (an `IndexError`, so the backends
  locate it at the user's line like an out-of-bounds index). `pb.scatter`
  puts it in front of its write loop, whose input it is, so it runs before
  any write and is never dead code. Integer result: no derivative.
- ``cumsum(x) -> y``, ``rcumsum(x) -> y``: inclusive prefix sums along the
  leading axis of a vector, forward (``y[i] = x[0] + ... + x[i]``) and
  backward (``y[i] = x[i] + ... + x[n-1]``). `pb.associative_scan` with `+`
  (the paper's special rule): each is the other's transpose, so the adjoint of
  a `+`-scan is the backward scan of its cotangent, O(n), and nothing is saved.
"""
from __future__ import annotations

import numpy as np

from ..types import TensorType
from . import TABLE, Row, check


class DuplicateIndex(IndexError):
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
        raise DuplicateIndex(d, n)
    return np.array(idx, dtype=np.int64, copy=True)


def _unique_cost(ts, outs, n):
    m = ts[0].size
    return int(m * max(1, int(np.log2(max(m, 2)))))


TABLE.add(Row("unique_indices", _unique_type, _unique_impl, cost=_unique_cost, zero_deriv=True,
              doc="identity on indices that are unique in [0, n); a duplicate is a located error"))


def _scan_type(ts):
    (t,) = ts
    check(isinstance(t, TensorType) and t.ndim == 1 and t.dtype in ("f64", "f32", "i64"),
          f"cumsum: a vector of numbers is required, got {t}")
    return (t,)


def _cumsum(x):
    return np.cumsum(x, axis=0, dtype=np.asarray(x).dtype)


def _rcumsum(x):
    return np.ascontiguousarray(np.cumsum(np.asarray(x)[::-1], axis=0, dtype=np.asarray(x).dtype)[::-1])


def _scan_cost(ts, outs):
    return ts[0].size


TABLE.add(Row("cumsum", _scan_type, _cumsum, cost=_scan_cost,
              jvp=lambda b, a, t, o: [b.emit("cumsum", t[0], name="scan_tan")],
              vjp=lambda b, a, o, ct, need: [b.emit("rcumsum", ct[0], name="x_adj")],
              doc="inclusive prefix sums of a vector"))
TABLE.add(Row("rcumsum", _scan_type, _rcumsum, cost=_scan_cost,
              jvp=lambda b, a, t, o: [b.emit("rcumsum", t[0], name="scan_tan")],
              vjp=lambda b, a, o, ct, need: [b.emit("cumsum", ct[0], name="x_adj")],
              doc="inclusive suffix sums of a vector (the transpose of cumsum)"))
