"""The `callback` primitive: opaque Python code called from staged and compiled code
(`pb.pure_callback`, note [callbacks] in docs/design.md).

Contract:
- ``callback(args...) {key=K, outs=(T1, ...)}`` calls the Python function registered
  under the integer `K` (`register`) on the argument values (rebuilt into the pytree the
  user passed) and returns its results, checked and converted to the declared types
  `outs`. It is a multi-result row (always a tuple).
- The callable itself is never a parameter: only the integer key reaches the IR, the
  printed text and generated code (note [generated-code-injection]). The registry lives
  for the process and holds its callables strongly (a staged program may call one at any
  time); it is safe for concurrent use (one lock around registration; lookups are dict
  reads). Registering the same callable with the same structures gives the same key, so
  staging the same program twice prints the same text.
- Keys are process-local. Generated code holds only the key and looks the callable up at
  run time, in the process running it, so a compiled module reused from numba's disk cache
  by another process calls that process's callable for that key: the one that process's
  own staged program (whose text includes the key) registered.
- No derivative rules: differentiating through a callback is a located error that points
  to `pb.custom_vjp` / `pb.custom_jvp`.
"""
from __future__ import annotations

import threading

import numpy as np

from ...errors import NonDifferentiableError, ShapeError
from ..types import np_dtype
from . import TABLE, Row

_LOCK = threading.Lock()
_BY_KEY: dict = {}   # key -> (callable, in_tree, out_tree, name)
_KEYS: dict = {}     # (id(callable), in_tree, out_tree) -> key


def register(fn, in_tree, out_tree) -> int:
    """The key of `fn` called with arguments of structure `in_tree` (a (args, kwargs) tree)
    returning `out_tree`."""
    k = (id(fn), in_tree, out_tree)
    with _LOCK:
        key = _KEYS.get(k)
        if key is None or _BY_KEY[key][0] is not fn:
            key = len(_BY_KEY) + 1
            _BY_KEY[key] = (fn, in_tree, out_tree, _describe(fn))
            _KEYS[k] = key
    return key


def name_of(key: int) -> str:
    entry = _BY_KEY.get(key)
    return entry[3] if entry else f"callback {key}"


def _describe(fn) -> str:
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    mod = getattr(fn, "__module__", None)
    return f"{mod}.{name}" if mod and mod != "builtins" else str(name)


def invoke(key, *vals):
    """Run callback `key` on argument values `vals`; returns a tuple of results of the
    declared types (numba's object-mode blocks and the table implementation call this)."""
    from ...pytree import flatten, unflatten
    from ..types import TensorType

    fn, in_tree, out_tree, name = _BY_KEY[int(key)]
    args, kwargs = unflatten(in_tree, list(vals))
    r = fn(*args, **kwargs)
    leaves, tree = flatten(r)
    if tree != out_tree:
        raise ShapeError(f"pure_callback: '{name}' returned {tree}, but result_shape_dtypes says {out_tree}",
                         hint="return values with the structure of result_shape_dtypes")
    return tuple(leaves)


def convert(key, v, dtype, shape):
    """Result `v` of callback `key` as a contiguous array of `dtype` and `shape` (a NumPy
    scalar for shape ()); a different shape is a `ShapeError`."""
    a = np.asarray(v)
    if tuple(a.shape) != tuple(shape):
        raise ShapeError(f"pure_callback: '{name_of(key)}' returned shape {a.shape} where result_shape_dtypes "
                         f"says {tuple(shape)}", hint="make result_shape_dtypes match what the function returns")
    if not a.ndim:
        return np.asarray(a, dtype=dtype)[()]
    return np.ascontiguousarray(a, dtype=dtype)


def _impl(*vals, key, outs):
    res = invoke(key, *vals)
    return tuple(convert(key, v, np_dtype(t.dtype), t.shape) for v, t in zip(res, outs))


def _type(arg_types, key, outs):
    return tuple(outs)


def _no_rule(*args, **kw):  # pragma: no cover - `_CallbackRow.rule` raises first
    raise AssertionError


class _CallbackRow(Row):
    """Differentiating a callback is a located error (the passes locate it at the call)."""

    def rule(self, which):
        if which in ("jvp", "vjp"):
            raise NonDifferentiableError(
                "pb.pure_callback has no derivative: pullback cannot differentiate the Python code it calls",
                hint="wrap the function that calls pb.pure_callback in pb.custom_vjp (or pb.custom_jvp) and "
                     "give its derivative there, e.g. with another pure_callback; or use pb.stop_gradient "
                     "on its result")
        return super().rule(which)


def _cost(arg_types, out_types, **params):
    return sum(max(1, t.size) for t in out_types)


TABLE.add(_CallbackRow("callback", _type, _impl, _no_rule, _no_rule, _cost, multi=True,
                       doc="opaque Python callable (pb.pure_callback), by registry key"))
