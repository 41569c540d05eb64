"""Staging-time values.

Contract: during staging every Python-level value is either *concrete* (an
ordinary Python object: numbers, tuples, lists, dicts, NumPy arrays used as
constants, functions, modules, ...) or a `Traced` wrapping an IR atom with its
`TensorType`. Two sentinels live in the environment as well: `UNSET` (the
initial value of the return slot of a loop that contains `return`; merges with
any value) and `Poisoned` (a variable whose value is not usable after a traced
`if` or an IR loop; reading it raises its error).

Python scalars (bool/int/float) are *weak*: combined with a traced value they
take its dtype, as Python literals do in NumPy (NEP 50). NumPy scalars and
arrays are strong.
"""
from __future__ import annotations

import numpy as np

from ..errors import StagingError, short_repr
from ..ir.core import Const, Var
from ..ir.types import TensorType, dtype_of_np, np_dtype, promote


class Traced:
    """A staged value: an IR atom (`Var` or `Const`) of a `TensorType`."""

    __slots__ = ("atom",)

    def __init__(self, atom):
        self.atom = atom

    @property
    def type(self) -> TensorType:
        return self.atom.type

    @property
    def shape(self):
        return self.atom.type.shape

    @property
    def dtype(self):
        return np.dtype(np_dtype(self.atom.type.dtype))

    @property
    def ndim(self):
        return len(self.atom.type.shape)

    @property
    def size(self):
        return self.atom.type.size

    def __repr__(self):
        return f"Traced({self.atom}: {self.atom.type})"

    def __bool__(self):
        raise ConcreteNeeded(
            f"the truth value of a traced value ({self.type}) is only known at run time",
            hint="use an `if`/`while` statement directly on it, np.where, or pass the value as a static argument",
        )

    def __index__(self):
        raise ConcreteNeeded(
            f"a traced value ({self.type}) is used where a Python integer is needed",
            hint="pass it as a static argument (static_argnums) or compute it from shapes",
        )

    def __array__(self, *a, **k):
        raise ConcreteNeeded(
            f"a traced value ({self.type}) was passed to a function that needs a concrete NumPy array",
            hint="use the supported NumPy functions on traced values, or pass the value as a static argument",
        )

    def __iter__(self):
        raise ConcreteNeeded("cannot iterate over a traced value here",
                             hint="use a `for` statement over it, or index it")

    __hash__ = object.__hash__


class ConcreteNeeded(StagingError):
    """A traced value was used where staging needs a concrete Python value."""


class NeedUnroll(Exception):
    """Internal: a loop body cannot be staged as an IR loop (retry by unrolling)."""

    def __init__(self, msg, hint=None):
        super().__init__(msg)
        self.msg, self.hint = msg, hint


class _Unset:
    def __repr__(self):
        return "UNSET"


UNSET = _Unset()


class Poisoned:
    """A variable that may not be read: reading it raises `error`."""

    __slots__ = ("name", "msg", "hint")

    def __init__(self, name, msg, hint=None):
        self.name, self.msg, self.hint = name, msg, hint

    def error(self):
        return StagingError(self.msg, hint=self.hint)

    def __repr__(self):
        return f"Poisoned({self.name})"


WEAK = (bool, int, float)


def is_weak(v) -> bool:
    return type(v) in WEAK


def is_numeric_concrete(v) -> bool:
    return type(v) in WEAK or isinstance(v, (np.ndarray, np.generic)) and _np_ok(np.asarray(v).dtype)


def _np_ok(dt) -> bool:
    try:
        dtype_of_np(dt)
        return True
    except TypeError:
        return False


def leaf_type(v) -> TensorType:
    """The IR type of a traced or numeric concrete leaf (weak scalars: i64/f64/bool)."""
    if isinstance(v, Traced):
        return v.type
    if type(v) is bool:
        return TensorType("bool")
    if type(v) is int:
        if not _I64_MIN <= v <= _I64_MAX:
            raise StagingError(f"the integer {short_repr(v)} does not fit in 64 bits",
                               hint="integers must lie in [-2**63, 2**63); use a float for larger values")
        return TensorType("i64")
    if type(v) is float:
        return TensorType("f64")
    if isinstance(v, (np.ndarray, np.generic)):
        if isinstance(v, np.matrix):
            raise StagingError("np.matrix arguments are not supported ('*' multiplies matrices there, "
                               "elementwise in pullback)", hint="pass np.asarray(x) and write x @ y for products")
        if isinstance(v, np.ma.MaskedArray):
            raise StagingError("masked arrays are not supported (pullback would ignore the mask)",
                               hint="decide what the masked entries should be and pass x.filled(value)")
        a = np.asarray(v)
        if a.ndim > 32:
            raise StagingError(f"an array with {a.ndim} dimensions; at most 32 are supported",
                               hint="reshape it to fewer dimensions")
        try:
            dt = dtype_of_np(a.dtype)
        except TypeError:
            raise StagingError(f"arrays of dtype {a.dtype} are not supported",
                               hint="use float64, float32, int64 (other integer types are converted) or bool "
                                    "arrays; complex numbers are not supported") from None
        if a.dtype.kind == "u" and a.dtype.itemsize == 8 and a.size and int(a.max()) > _I64_MAX:
            raise StagingError(f"a uint64 value {int(a.max())} does not fit in int64",
                               hint="integers must lie in [-2**63, 2**63); convert to float first")
        return TensorType(dt, tuple(a.shape))
    what = "complex numbers are not supported" if isinstance(v, complex) else \
        "only numbers, booleans and NumPy arrays can become IR values"
    raise StagingError(f"value {short_repr(v)} of type {type(v).__name__} has no IR type", hint=what)


_I64_MIN, _I64_MAX = -2 ** 63, 2 ** 63 - 1


def join_dtype(a, b) -> str:
    """The dtype of an operation between leaves a and b, honouring weak scalars."""
    ta, tb = leaf_type(a).dtype, leaf_type(b).dtype
    wa, wb = is_weak(a), is_weak(b)
    if wa and not wb:
        return _weak_into(ta, tb)
    if wb and not wa:
        return _weak_into(tb, ta)
    return promote(ta, tb)


def _weak_into(weak: str, strong: str) -> str:
    # a Python scalar adopts the other operand's dtype unless it is of a higher kind
    if weak == "f64" and strong in ("i64", "bool"):
        return "f64"
    if weak == "i64" and strong == "bool":
        return "i64"
    return strong


def const_atom(v, dtype: str | None = None) -> Const:
    t = leaf_type(v)
    if dtype is not None:
        t = t.with_dtype(dtype)
    val = np.asarray(v).astype(np_dtype(t.dtype)) if t.shape else v
    if not t.shape and isinstance(val, np.generic):
        val = val.item()
    return Const(val, t)


def to_atom(b, v, dtype: str | None = None):
    """An atom for leaf `v`, converted to `dtype` if given (emits a cast through builder `b`)."""
    if isinstance(v, Traced):
        a = v.atom
        if dtype is not None and a.type.dtype != dtype:
            if isinstance(a, Const):
                return Const(np.asarray(a.value).astype(np_dtype(dtype)) if a.type.shape else a.value,
                             a.type.with_dtype(dtype))
            return b.emit("cast", a, dtype=dtype)
        return a
    if isinstance(v, (Poisoned, _Unset)):
        raise StagingError(f"variable is not usable here ({v!r})")
    return const_atom(v, dtype)


def same_concrete(a, c) -> bool:
    if a is c:
        return True
    if type(a) is not type(c):
        return False
    if isinstance(a, np.ndarray):
        return a.shape == c.shape and a.dtype == c.dtype and bool(np.array_equal(a, c))
    if isinstance(a, (bool, int, float, str, np.generic, type(None))):
        try:
            return bool(a == c)
        except Exception:
            return False
    return False


def copy_containers(v):
    """Copy lists and dicts (recursively) so staging a trial body cannot mutate the originals."""
    if isinstance(v, list):
        return [copy_containers(x) for x in v]
    if isinstance(v, dict) and type(v) is dict:
        return {k: copy_containers(x) for k, x in v.items()}
    if isinstance(v, tuple) and type(v) is tuple:
        return tuple(copy_containers(x) for x in v)
    return v


def is_leaf_container(v) -> bool:
    return isinstance(v, (tuple, list, dict)) or v is None


def contains_traced(tree) -> bool:
    from ..pytree import flatten

    leaves, _ = flatten(tree)
    return any(isinstance(x, Traced) for x in leaves)


def atom_of(v):
    return v.atom if isinstance(v, Traced) else None


__all__ = ["Traced", "UNSET", "Poisoned", "ConcreteNeeded", "NeedUnroll", "leaf_type", "join_dtype",
           "to_atom", "const_atom", "same_concrete", "copy_containers", "is_weak", "contains_traced", "Var"]
