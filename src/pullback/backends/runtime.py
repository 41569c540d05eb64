"""Run-time support for the Python runners (`backends.interp`, code emitted by
`backends.pysource`).

Contract:
- Stores are the interpreter's own `StoreValue`s, so they report their bytes
  to the meter of the run in progress on this thread
  (`ir.prims.stores.metering`).
- `impl(name)` gives a primitive's NumPy implementation, for primitives the
  emitter has no hand-written form for.
- `deep_recursion()`: a context manager that raises Python's recursion limit
  to at least `RECURSION_LIMIT` while any run is active on any thread, and
  restores the limit found before the first of them when the last one ends
  (a lock-protected count: one thread can never lower the limit under
  another that is deep in recursion).
"""
from __future__ import annotations

import sys
import threading
from contextlib import contextmanager

from ..ir.prims import TABLE
from ..ir.prims import stores as _stores
from ..ir.prims.stores import StoreValue

RECURSION_LIMIT = 20000

_REC_LOCK = threading.Lock()
_REC = {"active": 0, "saved": None, "set": None}


def new_store(elem_bytes: int) -> StoreValue:
    """An empty store whose elements are `elem_bytes` bytes each."""
    return StoreValue(elem_bytes, _stores.current_meter())


def store_copy(s: StoreValue) -> StoreValue:
    """A copy of a store (a snapshot of a machine's call stack, note [loop-checkpointing])."""
    from ..ir.prims.stores import _copy_impl

    return _copy_impl(s)


def store_zeros_like(s: StoreValue) -> StoreValue:
    return _stores._zeros_like_impl(s)


def impl(name: str):
    return TABLE.get(name).impl


@contextmanager
def deep_recursion(limit: int = RECURSION_LIMIT):
    """Python's recursion limit is at least `limit` inside the block (see the
    module docstring). A limit someone else set meanwhile is left alone."""
    with _REC_LOCK:
        cur = sys.getrecursionlimit()
        if _REC["active"] == 0:
            _REC["saved"] = cur
        if cur < limit:
            sys.setrecursionlimit(limit)
            _REC["set"] = limit
        _REC["active"] += 1
    try:
        yield
    finally:
        with _REC_LOCK:
            _REC["active"] -= 1
            if _REC["active"] == 0:
                saved, mine = _REC["saved"], _REC["set"]
                _REC["saved"] = _REC["set"] = None
                if mine is not None and saved is not None and sys.getrecursionlimit() == mine:
                    try:
                        sys.setrecursionlimit(saved)
                    except RecursionError:  # this thread is deeper than the old limit: keep ours
                        pass
