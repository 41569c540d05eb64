"""The numba dialect's forms of primitive expressions (`NumbaDialect.expr`).

Contract: `expr(d, fe, e, pat)` is the numba text of the primitive `e`
(results `pat`) for the function emitter `fe` and the dialect `d` (whose
`helper` registers module-level njit helpers), or None where pysource's
NumPy form works in numba as it is. Library calls (`backends/libcalls`)
answer first. Text only: nothing here compiles.
"""
from __future__ import annotations

import numpy as np

from ..ir.core import Prim
from ..ir.types import TensorType
from . import pysource as ps
from .libcalls import LIBCALLS

_ND = ps._NP_DTYPE


def _ndim(a) -> int:
    return ps._ndim(a)


def shape_tuple(shape) -> str:
    shape = tuple(int(d) for d in shape)
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def scalar_cast(dtype: str, text: str) -> str:
    return f"bool({text})" if dtype == "bool" else f"{_ND[dtype]}({text})"


def one_dtype(e: Prim, pat) -> bool:
    """Concatenation `e`'s pieces all have its result's dtype (`_pb_concat` copies them)."""
    return all(x.type.dtype == pat[0].type.dtype for x in e.args)


def row_sum(e, pat) -> bool:
    """A float64 sum over the last axis alone of an array of rank 2 or more whose rows have at
    least 8 elements: each row is summed by `numba_reduce._pb_sum_vec`, NumPy's order and
    speed, where a loop adding into one local waits for each addition (2.8x NumPy's time);
    alone, it is no fusion group (`numba_fusion._partial_sum`; note [pairwise-sums])."""
    if not (isinstance(e, Prim) and e.op == "sum" and len(pat) == 1):
        return False
    x = e.args[0]
    shape = tuple(x.type.shape) if isinstance(x.type, TensorType) else ()
    return (len(shape) >= 2 and tuple(int(a) for a in e.p["axes"]) == (len(shape) - 1,)
            and x.type.dtype == "f64" and pat[0].type.dtype == "f64" and int(shape[-1]) >= 8)


def expr(d, fe, e: Prim, pat):
    """The numba form of `e` in the dialect `d`, or None where pysource's NumPy form
    works as is."""
    op, p, args = e.op, e.p, e.args
    A = fe.a
    out_t = pat[0].type if pat else None
    out_nd = len(out_t.shape) if isinstance(out_t, TensorType) else 0
    lib = LIBCALLS.get(op)
    if lib is not None:  # a library call (backends/libcalls)
        return lib.numba(d, fe, e, pat)
    if op == "argsort":  # numba's np.argsort takes 1-D arrays: one row at a time
        x = args[0]
        if len(x.type.shape) == 1:
            return f"np.argsort({A(x)}, kind=\"mergesort\")"
        h = d.helper("_argsort_rows", (
            f"{d.deco}\ndef _argsort_rows(x):\n"
            f"    rows = np.ascontiguousarray(x).reshape(-1, x.shape[-1])\n"
            f"    out = np.empty(rows.shape, dtype=np.int64)\n"
            f"    for r in range(rows.shape[0]):\n"
            f"        out[r] = np.argsort(rows[r], kind=\"mergesort\")\n"
            f"    return out.reshape(x.shape)"))
        return f"{h}({A(x)})"
    if op in ps._BIN_FN and len(args) == 2:
        x, y = args
        if op == "add" and out_nd == 0 and pat[0] in fe.sums:   # an adjoint sum: note [adjoint-reassoc]
            d.helper("_pb_radd_import", "from pullback.backends.numba_radd import _pb_radd")
            return f"_pb_radd({A(x)}, {A(y)})"
        if op == "matmul":  # numba's BLAS path wants contiguous operands (transposes are views)
            text = f"np.ascontiguousarray({A(x)}) @ np.ascontiguousarray({A(y)})"
        elif op in ps._BIN_OP:
            text = f"{fe.op_a(x)} {ps._BIN_OP[op]} {fe.op_a(y)}"
        else:
            text = f"{ps._BIN_FN[op]}({A(x)}, {A(y)})"
        want = out_t.dtype
        dts = {x.type.dtype, y.type.dtype}
        logical = op in ("lt", "le", "gt", "ge", "eq", "ne", "and", "or", "xor")
        if not logical and (want == "f32" or "bool" in dts or want not in dts):
            text = f"({text}).astype({_ND[want]})" if out_nd else scalar_cast(want, text)
        return text
    if op == "where":
        c, x, y = args
        if out_nd == 0:   # one select, not a conditional expression: note [compile-time], "Scalar selects"
            d.helper("_pb_sel_import", "from pullback.backends.numba_select import _pb_sel")
            return f"_pb_sel({A(c)}, {scalar_cast(out_t.dtype, A(x))}, {scalar_cast(out_t.dtype, A(y))})"
        shp = shape_tuple(out_t.shape)
        parts = [A(a) if tuple(a.type.shape) == tuple(out_t.shape) else
                 (f"np.full({shp}, {A(a)})" if _ndim(a) == 0 else
                  f"np.ascontiguousarray(np.broadcast_to({A(a)}, {shp}))") for a in (c, x, y)]
        return f"np.where({', '.join(parts)})"
    if op == "cast":
        (x,) = args
        if _ndim(x) == 0:
            return scalar_cast(p["dtype"], A(x))
        return f"{A(x)}.astype({_ND[p['dtype']]})"
    if op == "index" and not p["spec"]:
        (x,) = args
        return f"{A(x)}.copy()" if _ndim(x) > 0 else A(x)
    if op == "take":
        x, idx = args
        if _ndim(idx) > 1:
            pre = ":, " * p["axis"]
            flat = d.reshaped(A(idx), (int(np.prod(idx.type.shape)),))
            return d.reshaped(f"{A(x)}[{pre}{flat}]", out_t.shape)
        return None
    if op == "reshape":
        (x,) = args
        if _ndim(x) == 0:
            return f"np.full({shape_tuple(p['shape'])}, {A(x)})" if p["shape"] else A(x)
        if not p["shape"]:
            return f"np.ascontiguousarray({A(x)}).reshape(-1)[0]"
        return d.reshaped(A(x), p["shape"])
    if op == "transpose":
        (x,) = args
        if _ndim(x) <= 1:
            return A(x)
        return f"np.transpose({A(x)}, {tuple(int(a) for a in p['perm'])!r})"
    if op == "broadcast_to":
        (x,) = args
        if not p["shape"]:
            return A(x)
        shp = shape_tuple(p["shape"])
        if _ndim(x) == 0:
            return f"np.full({shp}, {A(x)})"
        return d.broadcast(A(x), p["shape"])
    if op == "concatenate":
        xs = ", ".join(A(x) for x in args) + ("," if len(args) == 1 else "")
        if one_dtype(e, pat):   # note [compile-time], "Concatenations in place"
            from .numba_alloc import CONCAT_IMPORT

            d.helper("_pb_concat_import", CONCAT_IMPORT)
            return f"_pb_concat(({xs}), {int(p['axis'])})"
        return f"np.concatenate(({xs}), axis={p['axis']})"
    if op == "iota":
        dt = p["dtype"]
        return f"np.arange({p['n']})" + ("" if dt == "i64" else f".astype({_ND[dt]})")
    if op == "full":
        (v,) = args
        if not p["shape"]:
            return scalar_cast(out_t.dtype, A(v))
        if pat[0] in d.unset:
            return f"np.empty({shape_tuple(p['shape'])}, dtype={_ND[out_t.dtype]})"
        return f"np.full({shape_tuple(p['shape'])}, {scalar_cast(out_t.dtype, A(v))})"
    if op in ("argmax", "argmin") and args[0].type.dtype in ("f64", "f32") and _ndim(args[0]) >= 1 \
            and int(args[0].type.shape[-1]) >= 1:
        x = args[0]
        nd = _ndim(x)
        if nd == 1 or int(p["axis"]) % nd == nd - 1:   # a vector (one row), or along the last axis
            K, R = int(np.prod(x.type.shape[:-1])), int(x.type.shape[-1])
            rows = f"{d._arg_extremum_rows_helper(op, x.type.dtype)}({d.reshaped(A(x), (K, R))})"
            return f"{rows}[0]" if nd == 1 else d.reshaped(rows, out_t.shape)
    if op in ps._REDUCE:
        (x,) = args
        axes = tuple(int(a) for a in p["axes"])
        nd = _ndim(x)
        if not axes:
            return f"{A(x)}.copy()" if nd > 0 else A(x)
        if (len(axes) == nd == 1 and op in ("min", "max") and out_t.dtype == x.type.dtype
                and x.type.dtype in ("f64", "f32") and int(x.type.shape[0]) >= 1):
            # a loop, not numba's np.max/np.min (which compile np.take and an
            # iterator: about 0.5 s per process, note [compile-time])
            return f"{d._reduce_all_helper(op, out_t.dtype)}({A(x)})"
        if op == "sum" and len(axes) == nd and x.type.dtype == out_t.dtype == "f64":
            from .numba_reduce import IMPORT

            d.helper("_pb_sum_vec_import", IMPORT)    # NumPy's pairwise order (note [pairwise-sums])
            return f"_pb_sum_vec({A(x)})" if nd == 1 else f"_pb_sum_vec(_pb_memory_vector({A(x)}))"
        if len(axes) == nd:
            r = f"{ps._REDUCE[op]}({A(x)})"
            return scalar_cast(out_t.dtype, r) if out_t.dtype != x.type.dtype else r
        if op == "sum" and row_sum(e, pat):
            from .numba_reduce import IMPORT

            d.helper("_pb_sum_vec_import", IMPORT)   # each row in NumPy's pairwise order (note [pairwise-sums])
            K, R = int(np.prod(x.type.shape[:-1])), int(x.type.shape[-1])
            return d.reshaped(f"{d._sum_rows_helper()}({d.reshaped(A(x), (K, R))})", out_t.shape)
        if op == "sum" and len(axes) == 1 and x.type.dtype != "bool":
            return f"np.sum({A(x)}, axis={axes[0]})"
        keep = [a for a in range(nd) if a not in axes]
        shape = tuple(x.type.shape)
        K = int(np.prod([shape[a] for a in keep]))
        R = int(np.prod([shape[a] for a in axes]))
        if op in ("min", "max") and axes == tuple(range(len(axes))) and R >= 1 and out_t.dtype == x.type.dtype:
            # leading axes (a transposed layout's, note [transposed-layout]): rows at a time
            h = d._reduce_lead_helper(op, out_t.dtype)
            return d.reshaped(f"{h}({d.reshaped(A(x), (R, K))})", out_t.shape)
        h = d._reduce_helper(op, out_t.dtype, nonempty=R >= 1 and out_t.dtype == x.type.dtype)
        xt = A(x) if keep + list(axes) == list(range(nd)) else f"np.transpose({A(x)}, {tuple(keep + list(axes))!r})"
        return d.reshaped(f"{h}({d.reshaped(xt, (K, R))})", out_t.shape)
    return None
