"""Readable Python/NumPy source from IR programs.

Contract:
- `emit_prog(prog, name_hints=True) -> str`: a Python module (``import numpy
  as np``) with one function per IR function. A function returns its single
  result, a tuple of several, or ``()`` for none. Statements read like
  hand-written NumPy (``t = np.sin(x)``, ``c = a @ b``, ``y = x[i, 1:3]``,
  ``a[i] = v``); control flow is ``if``/``for``/``while``; names come from the
  IR (made valid and clash-free; ``name_hints=False`` uses ``v0, v1, ...``).
  Statements with a `SrcLoc` get a provenance comment the first time their
  source line is reached (``# adjoint of f.py:12: ...`` for adjoint code).
- Results equal the interpreter's (`backends.interp`), value for value and
  dtype for dtype: each primitive is written as the expression its table
  `impl` evaluates.
- The IR is functional; the emitted code updates an array in place only when
  it owns it: it was made fresh by this function (never a parameter, constant
  or view), nothing aliases it, and it is dead after the update. Otherwise
  it copies first.
- Stores are the interpreter's `StoreValue`s (see `backends.runtime`), so they
  report to the same meter.
- `compile_prog(prog) -> callable`: the entry function, taking leaf values
  positionally and returning a list of results (the interpreter's convention).
  `run(prog, *args, fname=None, meter=None) -> list` compiles (cached) and runs.

Layout: `tables` (primitive forms), `text` (identifiers, literals),
`ownership` (which updates run in place), `prims` (printing primitive
statements), `emitter` (`emit_prog`), `runner` (`compile_prog`, `run`). This
package re-exports the names other modules use (``from . import pysource as
ps; ps._NP_DTYPE``).
"""
from __future__ import annotations

from .emitter import _FuncEmitter, _Module, _annotate_later, emit_func, emit_module, emit_prog
from .ownership import _aliasing_args, _fresh_result, _Ownership
from .prims import _dtype_name, _np_dtype, _PrimEmitter, _promote_rt
from .runner import _coerce, _param_dtype, compile_prog, derivative_source, run
from .tables import (_BIN_FN, _BIN_OP, _CASTING, _REDUCE, _STORE_OPS, _UNARY_FN, _VIEW_OPS, KNOWN_PRIMS,
                     _ndim)
from .text import (_NP_DTYPE, _RESERVED, _axes_lit, _float_lit, _nested, _py_value, _sanitize, _scalar_lit,
                   _shape_lit, _slice_text, safe_text)

__all__ = [
    "KNOWN_PRIMS", "compile_prog", "derivative_source", "emit_func", "emit_module", "emit_prog", "run",
    "_BIN_FN", "_BIN_OP", "_CASTING", "_FuncEmitter", "_Module", "_NP_DTYPE", "_Ownership", "_PrimEmitter",
    "_REDUCE", "_RESERVED", "_STORE_OPS", "_UNARY_FN", "_VIEW_OPS", "_aliasing_args", "_annotate_later",
    "_axes_lit", "_coerce", "_dtype_name", "_float_lit", "_fresh_result", "_ndim", "_nested", "_np_dtype",
    "_param_dtype", "_promote_rt", "_py_value", "_sanitize", "_scalar_lit", "_shape_lit", "_slice_text", "safe_text",
]
