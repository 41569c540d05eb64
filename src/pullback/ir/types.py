"""IR types: tensors of a scalar dtype and a concrete shape, and stores.

Contract: every IR value has exactly one of these types. Shapes are concrete
(the frontend specialises per argument signature, as ``jax.jit`` does); only
loop trip counts, while conditions and the length of a `Store` are dynamic.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DTYPES = ("f64", "f32", "i64", "bool")
FLOAT_DTYPES = ("f64", "f32")
_NP = {"f64": np.float64, "f32": np.float32, "i64": np.int64, "bool": np.bool_}
_RANK = {"bool": 0, "i64": 1, "f32": 2, "f64": 3}


@dataclass(frozen=True)
class TensorType:
    """A scalar (shape ``()``) or an array with element type ``dtype``."""

    dtype: str
    shape: tuple[int, ...] = ()

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise ValueError(f"unknown dtype {self.dtype!r}")

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def is_float(self) -> bool:
        return self.dtype in FLOAT_DTYPES

    @property
    def nbytes(self) -> int:
        return self.size * np.dtype(_NP[self.dtype]).itemsize

    def with_shape(self, shape) -> "TensorType":
        return TensorType(self.dtype, tuple(int(d) for d in shape))

    def with_dtype(self, dtype) -> "TensorType":
        return TensorType(dtype, self.shape)

    def __str__(self) -> str:
        if not self.shape:
            return self.dtype
        return f"{self.dtype}[{','.join(map(str, self.shape))}]"


@dataclass(frozen=True)
class StoreType:
    """A growable last-in-first-out store of values of type ``elem``.

    Stores hold the values a return sweep needs (saved loop state, undo logs).
    Their length is only known at run time. See note [stores] in docs/design.md.
    """

    elem: "TensorType | StoreType"

    @property
    def is_float(self) -> bool:
        return self.elem.is_float

    @property
    def nbytes(self) -> int:
        """What a store of stores counts per element: one reference (the inner
        store's contents report their own bytes)."""
        return 8

    def __str__(self) -> str:
        return f"store<{self.elem}>"


Type = TensorType | StoreType


def np_dtype(dtype: str):
    return _NP[dtype]


def dtype_of_np(dt) -> str:
    dt = np.dtype(dt)
    if dt == np.float64:
        return "f64"
    if dt == np.float32:
        return "f32"
    if dt == np.bool_:
        return "bool"
    if np.issubdtype(dt, np.integer):
        return "i64"
    if np.issubdtype(dt, np.floating):
        return "f64"
    raise TypeError(f"unsupported dtype {dt}")


def promote(a: str, b: str) -> str:
    """The result dtype of a binary arithmetic op (NumPy-like, bool < i64 < f32 < f64)."""
    return a if _RANK[a] >= _RANK[b] else b


def scalar(dtype: str) -> TensorType:
    return TensorType(dtype, ())


F64 = scalar("f64")
I64 = scalar("i64")
BOOL = scalar("bool")
