"""BLAS operands without copies, and matrix products without numba's wrappers,
in numba code (note [blas-operands]; note [compile-time], "Products in place").

Contract:
- `_pb_blas(a)`, callable from numba-compiled code (the numba dialect prints
  it around both operands of a 2-D `matmul` it cannot print as `_pb_matmul`):
  `a` itself when its numba type is a C- or F-contiguous array, else
  `np.ascontiguousarray(a)`, which checks at run time and copies only an
  array that is not contiguous. Numba's `@` passes C and F operands to BLAS as
  they are (an F operand with a transpose flag); it copies every array of
  layout 'A'. So a transposed fresh matrix (`x.T`, layout F) reaches BLAS
  with no copy, where `np.ascontiguousarray(x.T)` made a transposing copy.
  The value is the same array either way, so results are unchanged.
- Called from Python (the interpreter never does), it is
  `np.ascontiguousarray(a)`.
- `_pb_matmul(x, y)` and `_pb_matmul_out(x, y, out)`: numba intrinsics, the values
  of ``_pb_blas(x) @ _pb_blas(y)`` (a matrix or vector times a matrix, or a
  matrix times a vector) and ``np.dot(_pb_blas(x), _pb_blas(y), out)`` (2-D,
  `out` C-ordered of shape (m, n)), for arrays of one dtype, float64 or
  float32. The same BLAS calls as numba's (``xxdot`` when a matrix product is
  1 x 1, ``xxgemv`` when it or a vector's product is one row or column, else
  ``xxgemm``; zeros when an extent is 0), so the same bits; a layout-'A' operand goes through
  ``np.ascontiguousarray`` first, as with `_pb_blas`. Lowered in the caller:
  numba's `@` compiles its overload, an internal `np.dot(x, y, out)` call,
  that call's overload, its size check and `np.empty`/`np.zeros` as separate
  functions (about 0.4 s per signature and process). Sizes that disagree raise
  ValueError; an extent past a C int raises OverflowError, as numba's.
- Only code printed by the numba dialect imports this module (it imports
  numba); the cache key is the generated source, so a change to these
  functions' typing or code generation needs a new `numba_backend._VERSION`.
"""
from __future__ import annotations

import numpy as np
from numba.core import cgutils, types
from numba.core.imputils import impl_ret_borrowed
from numba.core.typing import signature
from numba.extending import intrinsic, overload
from numba.np.arrayobj import _empty_nd_impl, make_array
from numba.np.linalg import call_xxdot, call_xxgemm, call_xxgemv, ensure_blas


def _pb_blas(a):
    """The array `a` as a BLAS operand (C- or F-contiguous)."""
    return np.ascontiguousarray(a)


@overload(_pb_blas, inline="always")
def _pb_blas_numba(a):
    if isinstance(a, types.Array) and a.layout in "CF":
        return lambda a: a
    return lambda a: np.ascontiguousarray(a)


def _contiguous(a):
    return np.ascontiguousarray(a)


def _operands(context, builder, tys, vals):
    """The operands as C- or F-contiguous arrays (type, struct, copy or None)."""
    out = []
    for ty, val in zip(tys, vals):
        if ty.layout in "CF":
            out.append((ty, make_array(ty)(context, builder, val), None))
        else:
            cty = ty.copy(layout="C")
            new = context.compile_internal(builder, _contiguous, signature(cty, ty), (val,))
            out.append((cty, make_array(cty)(context, builder, new), new))
    return out


def _raise_if(context, builder, cond, exc, msg):
    with builder.if_then(cond, likely=False):
        context.call_conv.return_user_exc(builder, exc, (msg,))


def _checked(context, builder, cond, msg, dims):
    """Raise ValueError(msg) where `cond`, OverflowError where a BLAS extent of
    `dims` does not fit a C int (numba's checks)."""
    _raise_if(context, builder, cond, ValueError, msg)
    big = context.get_constant(types.intp, 2 ** 31 - 1)
    for d in dims:
        _raise_if(context, builder, builder.icmp_signed(">", d, big), OverflowError,
                  "array size too large to fit in C int")


def _product(context, builder, tys, args, out=None, outty=None):
    """Lower `x @ y` (matrix or vector times matrix, matrix times vector) into
    `out` (a new C array when None); returns the out struct."""
    ensure_blas()
    (xty, x, xc), (yty, y, yc) = _operands(context, builder, tys, args)
    xs, ys = cgutils.unpack_tuple(builder, x.shape), cgutils.unpack_tuple(builder, y.shape)
    zero, one = context.get_constant(types.intp, 0), context.get_constant(types.intp, 1)
    ne = lambda a, b: builder.icmp_signed("!=", a, b)   # noqa: E731
    eq = lambda a, b: builder.icmp_signed("==", a, b)   # noqa: E731
    if out is None:
        shape = ([xs[0]] if xty.ndim == 2 else []) + ([ys[1]] if yty.ndim == 2 else [])
        outty = types.Array(xty.dtype, len(shape), "C")
        out = _empty_nd_impl(context, builder, outty, shape)
        bad_out = cgutils.false_bit
    else:
        om, on = cgutils.unpack_tuple(builder, out.shape)
        bad_out = builder.or_(ne(om, xs[0]), ne(on, ys[1]))
    if xty.ndim == yty.ndim == 2:   # numba's dot_3_mm
        (m, k), (k2, n) = xs, ys
        _checked(context, builder, builder.or_(ne(k, k2), bad_out), "incompatible sizes for a matrix product",
                 (m, k, n))
        empty = builder.or_(eq(k, zero), builder.or_(eq(m, zero), eq(n, zero)))
    elif xty.ndim == 1:   # numba's dot_3_vm: a vector times a matrix is y.T x
        mty, ms, md, vd, trans, k, lda = yty, ys, y.data, x.data, yty.layout == "F", xs[0], ys[1]
        _checked(context, builder, ne(k, ys[0]), "incompatible sizes for a matrix product", ms)
        empty = builder.or_(eq(k, zero), eq(lda, zero))
    else:   # numba's dot_3_mv
        mty, ms, md, vd, trans, k, lda = xty, xs, x.data, y.data, xty.layout == "C", ys[0], xs[0]
        _checked(context, builder, ne(k, xs[1]), "incompatible sizes for a matrix product", ms)
        empty = builder.or_(eq(k, zero), eq(lda, zero))
    with builder.if_else(empty, likely=False) as (then, otherwise):
        with then:
            cgutils.memset(builder, out.data, builder.mul(out.itemsize, out.nitems), 0)
        with otherwise:
            if xty.ndim != yty.ndim:
                call_xxgemv(context, builder, trans, mty, ms, md, vd, out.data)
            else:   # numba's dispatch: the same BLAS routine, so the same bits
                os_ = cgutils.unpack_tuple(builder, out.shape)
                with builder.if_else(eq(n, one)) as (r_vec, r_mat):
                    with r_vec:
                        with builder.if_else(eq(m, one)) as (v_v, m_v):
                            with v_v:
                                call_xxdot(context, builder, False, xty.dtype, k, x.data, y.data, out.data)
                            with m_v:
                                call_xxgemv(context, builder, xty.layout == outty.layout, xty, xs, x.data,
                                            y.data, out.data)
                    with r_mat:
                        with builder.if_else(eq(m, one)) as (v_m, m_m):
                            with v_m:
                                call_xxgemv(context, builder, yty.layout != outty.layout, yty, ys, y.data,
                                            x.data, out.data)
                            with m_m:
                                call_xxgemm(context, builder, xty, xs, x.data, yty, ys, y.data, outty, os_,
                                            out.data)
    for ty, copy in ((xty, xc), (yty, yc)):
        if copy is not None:
            context.nrt.decref(builder, ty, copy)
    return out


def _operand_types(*tys):
    return (all(isinstance(t, types.Array) and t.ndim in (1, 2) for t in tys)
            and len({t.dtype for t in tys}) == 1 and tys[0].dtype in (types.float64, types.float32))


@intrinsic
def _pb_matmul(typingctx, x, y):
    if not (_operand_types(x, y) and x.ndim + y.ndim >= 3):
        return None

    def codegen(context, builder, sig, args):
        return _product(context, builder, sig.args, args)._getvalue()

    return types.Array(x.dtype, x.ndim + y.ndim - 2, "C")(x, y), codegen


@intrinsic
def _pb_matmul_out(typingctx, x, y, out):
    if not (_operand_types(x, y, out) and x.ndim == y.ndim == out.ndim == 2 and out.layout == "C"
            and out.mutable):
        return None

    def codegen(context, builder, sig, args):
        o = make_array(sig.args[2])(context, builder, args[2])
        _product(context, builder, sig.args[:2], args[:2], o, sig.args[2])
        return impl_ret_borrowed(context, builder, sig.return_type, args[2])

    return out(x, y, out), codegen
