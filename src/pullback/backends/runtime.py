"""Run-time support for code emitted by `backends.pysource`.

Contract: stores are the interpreter's own `StoreValue`s, so they report their
bytes to the meter the interpreter uses (`ir.prims.stores.CURRENT_METER`).
`impl(name)` gives a primitive's NumPy implementation, for primitives the
emitter has no hand-written form for.
"""
from __future__ import annotations

from ..ir.prims import TABLE
from ..ir.prims import stores as _stores
from ..ir.prims.stores import StoreValue


def new_store(elem_bytes: int) -> StoreValue:
    """An empty store whose elements are `elem_bytes` bytes each."""
    return StoreValue(elem_bytes, _stores.CURRENT_METER[0])


def store_zeros_like(s: StoreValue) -> StoreValue:
    return _stores._zeros_like_impl(s)


def impl(name: str):
    return TABLE.get(name).impl
