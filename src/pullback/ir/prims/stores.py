"""Stores: growable last-in-first-out stacks that hold what a return sweep needs.

A store is used linearly: each store value is consumed by exactly one push or
pop, so backends may mutate it in place. Derivatives (see note [store-adjoints]
in docs/design.md): the tangent of a store is the store of tangents; the
adjoint of a push is a pop of the adjoint store and vice versa, so reverse
mode over code that already uses stores (grad of grad) works.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager

from ..types import StoreType
from . import TABLE, Row, check


class StoreValue:
    """Runtime value of a store in the interpreter; reports its bytes to a meter."""

    __slots__ = ("items", "meter", "elem_bytes")

    def __init__(self, elem_bytes: int, meter=None):
        self.items = []
        self.meter = meter
        self.elem_bytes = elem_bytes

    def push(self, v):
        self.items.append(v)
        if self.meter is not None:
            self.meter.alloc(self.elem_bytes)
        return self

    def pop(self):
        v = self.items.pop()
        if self.meter is not None:
            self.meter.free(self.elem_bytes)
        return self, v

    def __del__(self):
        # a store dropped with values in it (a snapshot's copy of a call stack, or a
        # store nobody emptied) no longer holds them
        if self.meter is not None and self.items:
            self.meter.free(self.elem_bytes * len(self.items))


class _MeterSlot(threading.local):
    meter = None


# The meter new stores report to: set per thread by the runners (backends.interp,
# backends.pysource) while they run, so concurrent runs never mix their bytes.
_SLOT = _MeterSlot()


def current_meter():
    """The meter of the run in progress on this thread (None: no metering)."""
    return _SLOT.meter


@contextmanager
def metering(meter):
    """Stores made on this thread inside the block report to `meter`."""
    old = _SLOT.meter
    _SLOT.meter = meter
    try:
        yield
    finally:
        _SLOT.meter = old


def _new_type(ts, elem, cap=None):
    # cap: how many pushes the store will get, when known (a loop's static trip
    # count); a backend may allocate that many slots at once (note [numba-stores])
    return (StoreType(elem),)


def _push_type(ts):
    s, v = ts
    check(isinstance(s, StoreType) and s.elem == v, f"store_push: {v} into {s}")
    return (s,)


def _pop_type(ts):
    (s,) = ts
    check(isinstance(s, StoreType), f"store_pop from {s}")
    return (s, s.elem)


def _copy_impl(s):
    """A copy of store `s` (stores of stores copied deeply): a snapshot of a
    machine state, which the run from it then mutates (note [loop-checkpointing])."""
    out = StoreValue(s.elem_bytes, _SLOT.meter)
    for v in s.items:
        out.push(_copy_impl(v) if isinstance(v, StoreValue) else v)
    return out


def _copy_jvp(b, a, t, o):
    return [None if t[0] is None else b.emit("store_copy", t[0], name="copy_tan")]


def _zeros_like_impl(s):
    import numpy as np

    out = StoreValue(s.elem_bytes, _SLOT.meter)
    for v in s.items:
        out.push(_zeros_like_impl(v) if isinstance(v, StoreValue) else np.zeros_like(v))
    return out


def _zero(b, v):
    from ...passes._common import zero_of

    return zero_of(b, v, "zeros")


def _push_jvp(b, a, t, o):
    s, v = a
    ts, tv = t
    if ts is None and tv is None:
        return [None]
    if ts is None:
        ts = b.store_zeros_like(s)
    if tv is None:
        tv = _zero(b, v)
    return [b.store_push(ts, tv)]


def _pop_jvp(b, a, t, o):
    if t[0] is None:
        return [None, None]
    s2, v = b.emit_multi("store_pop", t[0], name="popped_tan")
    return [s2, v]


def _push_vjp(b, a, o, cts, need):
    s, v = a
    (ct,) = cts
    cs, cv = b.emit_multi("store_pop", ct, name="popped_adj")
    return [cs, cv if need[1] else None]


def _pop_vjp(b, a, o, cts, need):
    s2, v = o
    cs, cv = cts
    if cs is None:
        cs = b.store_zeros_like(s2)
    if cv is None:
        cv = _zero(b, v)
    return [b.store_push(cs, cv)]


def _store_cost(ts, outs, **p):
    return 0


TABLE.add(Row("store_new", _new_type, lambda elem, cap=None: StoreValue(elem.nbytes, _SLOT.meter),
              cost=_store_cost, zero_deriv=True))
TABLE.add(Row("store_push", _push_type, lambda s, v: s.push(v), _push_jvp, _push_vjp, _store_cost))
TABLE.add(Row("store_pop", _pop_type, lambda s: s.pop(), _pop_jvp, _pop_vjp, _store_cost, multi=True))
def _copy_vjp(b, a, o, cts, need):
    # a copy is the identity on the values: its adjoint store is the copy's (a store
    # used again after it is copied gets a second adjoint, which `Adjoints` refuses)
    return [cts[0]]


TABLE.add(Row("store_copy", lambda ts: (ts[0],), _copy_impl, _copy_jvp, _copy_vjp, _store_cost))
TABLE.add(Row("store_zeros_like", lambda ts: (ts[0],), _zeros_like_impl, cost=_store_cost, zero_deriv=True))
