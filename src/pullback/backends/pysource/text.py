r"""Text of generated source: identifiers, literals, slices, comments.

Contract: every string that goes into generated source is made here, from
values the compiler controls (numbers, shapes, dtypes) or from user-controlled
text (file paths, source lines, function, parameter and variable names, which
may be any string) passed through one of two functions:
- `_sanitize(name)`: a valid ASCII identifier that is no keyword, builtin or
  module-level name of generated code (``np``, ``njit``, ``List``), and never
  starts with ``_`` (names the emitter makes up do);
- `safe_text(s)`: text for a comment or inside a triple-quoted docstring:
  printable ASCII except backslash and quotes is kept, everything else
  (newlines, ``\r``, form feeds, ``\x1c``-``\x1e``, ``\x85``, ``\u2028``,
  quotes, backslashes, non-ASCII) is written as a ``\xNN`` / ``\uNNNN`` /
  ``\UNNNNNNNN`` escape, so it can neither end the comment or string nor
  start a line (note [generated-code-injection]).
Parameter values printed as Python literals (`_py_value`) are numbers,
strings (``repr``), None, tuples and types only.
"""
from __future__ import annotations

import builtins
import keyword

import numpy as np

from ...ir.types import StoreType, TensorType

_NP_DTYPE = {"f64": "np.float64", "f32": "np.float32", "i64": "np.int64", "bool": "np.bool_"}

# names generated code uses at module level (the numba dialect imports njit and List)
_RESERVED = (set(keyword.kwlist) | set(keyword.softkwlist) | set(dir(builtins))
             | {"np", "njit", "List", "_pb_const"})


def safe_text(s) -> str:
    """`s` as comment or docstring text that cannot break out (see the module docstring)."""
    out = []
    for ch in str(s):
        o = ord(ch)
        if 0x20 <= o < 0x7F and ch not in "\\\"'":
            out.append(ch)
        elif o < 0x100:
            out.append(f"\\x{o:02x}")
        elif o < 0x10000:
            out.append(f"\\u{o:04x}")
        else:
            out.append(f"\\U{o:08x}")
    return "".join(out)


def _sanitize(name: str) -> str:
    out = "".join(ch if (ch.isalnum() or ch == "_") and ch.isascii() else "_" for ch in str(name)) or "v"
    if out[0].isdigit():
        out = "v" + out
    if out.startswith("_"):
        out = "v" + out
    if out in _RESERVED:
        out += "_"
    return out


def _float_lit(v: float) -> str:
    if v != v:
        return "np.nan"
    if v in (float("inf"), float("-inf")):
        return "np.inf" if v > 0 else "-np.inf"
    return repr(float(v))


def _scalar_lit(v, dtype: str) -> str:
    if dtype == "bool":
        return "True" if v else "False"
    if dtype == "i64":
        return str(int(v))
    return _float_lit(float(v))


def _nested(a: np.ndarray, dtype: str) -> str:
    if a.ndim == 0:
        return _scalar_lit(a.item(), dtype)
    return "[" + ", ".join(_nested(x, dtype) for x in a) + "]"


def _shape_lit(shape) -> str:
    shape = tuple(int(d) for d in shape)
    if len(shape) == 1:
        return str(shape[0])
    return repr(shape)


def _axes_lit(axes) -> str:
    axes = tuple(int(a) for a in axes)
    return str(axes[0]) if len(axes) == 1 else repr(axes)


def _py_value(v) -> str:
    """A Python expression for a param value (fallback primitive calls)."""
    if isinstance(v, TensorType):
        return f"_TensorType({v.dtype!r}, {tuple(v.shape)!r})"
    if isinstance(v, StoreType):
        return f"_StoreType({_py_value(v.elem)})"
    if isinstance(v, tuple):
        items = [_py_value(x) for x in v]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(v, float):
        return _float_lit(v)
    if isinstance(v, (np.integer, np.bool_)):
        v = v.item()
    if isinstance(v, np.floating):
        return _float_lit(float(v))
    if v is None or isinstance(v, (bool, int, str)):
        return repr(v)  # a valid literal for any str (never a newline or a bare quote)
    raise TypeError(f"pysource: cannot print a parameter value of type {type(v).__name__}")



def _slice_text(start, stop, step, d) -> str:
    if step in (1, None):
        a = "" if start in (0, None) else str(start)
        b = "" if stop is None or (isinstance(stop, int) and stop >= d and (start is None or start >= 0)) else str(stop)
        return f"{a}:{b}"
    if isinstance(step, int) and step > 0:
        a = "" if start in (0, None) else str(start)
        b = "" if stop is None or (isinstance(stop, int) and stop >= d and (start is None or start >= 0)) else str(stop)
        return f"{a}:{b}:{step}"
    a = "" if start is None else str(start)
    b = "" if stop is None else str(stop)
    return f"{a}:{b}:{step}"
