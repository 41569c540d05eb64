"""numba form of the `callback` primitive (`pb.pure_callback`): an njit helper whose
object-mode block (`numba.objmode`) calls `ir.prims.callback.invoke` with the registry key
and the argument values, and converts the results to the declared types.

Only the integer key and type names reach the text (note [generated-code-injection]); the
callable is looked up at run time in the running process (note [callbacks]). One helper
per (key, argument and result types). pysource prints a call of the table
implementation, which does the same lookup.
"""
from __future__ import annotations

import zlib

from ...ir.types import TensorType
from . import register

_NB = {"f64": "float64", "f32": "float32", "i64": "int64", "bool": "boolean"}
_NP = {"f64": "np.float64", "f32": "np.float32", "i64": "np.int64", "bool": "np.bool_"}


def _nb_type(t: TensorType) -> str:
    if not t.shape:
        return _NB[t.dtype]
    return f"{_NB[t.dtype]}[{', '.join([':'] * (len(t.shape) - 1) + ['::1'])}]"


def _numba(dialect, fe, e, pat):
    key = int(e.p["key"])
    outs = tuple(e.p["outs"])
    n = len(e.args)
    args = ", ".join(f"a{i}" for i in range(n))
    res = ", ".join(f"o{j}" for j in range(len(outs)))
    decl = ", ".join(f"o{j}={_nb_type(t)!r}" for j, t in enumerate(outs))
    conv = ", ".join(
        f"_pb_cb_conv({key}, r[{j}], {_NP[t.dtype]}, {tuple(int(d) for d in t.shape)!r})"
        for j, t in enumerate(outs))
    body = (f"({args}):\n"
            f"    with _pb_objmode({decl}):\n"
            f"        r = _pb_cb_invoke({key}{', ' if n else ''}{args})\n"
            f"        {res}{',' if len(outs) == 1 else ''} = ({conv}{',' if len(outs) == 1 else ''})\n"
            f"    return {res}")
    sig = "|".join(str(a.type) for a in e.args) + "->" + "|".join(str(t) for t in outs)
    name = f"_pb_callback_{key}_{zlib.crc32((sig + body).encode()):08x}"
    head = ("from numba import objmode as _pb_objmode\n"
            "from pullback.ir.prims.callback import invoke as _pb_cb_invoke, convert as _pb_cb_conv\n")
    dialect.helper(name, f"{head}{dialect.deco}\ndef {name}{body}")
    return f"{name}({', '.join(fe.a(a) for a in e.args)})"


def _py(fe, e, pat):
    """The table implementation (a tuple), unpacked for one result."""
    from ..pysource.text import _py_value

    fe.mod.uses_rt = True
    fe.mod.uses_types = True
    args = "".join(f"{fe.a(a)}, " for a in e.args)
    call = f"_rt.impl('callback')({args}key={int(e.p['key'])}, outs={_py_value(tuple(e.p['outs']))})"
    return call + "[0]" if len(pat) == 1 else call


register("callback", _numba, _py)
