"""The full sum of a float64 array in numba code, in NumPy's order (note
[compile-time], "Sums in place"; note [pairwise-sums]).

Contract:
- `_pb_memory_vector(x)`: numba intrinsic, for a float64 array `x` of any rank
  and layout: a C-ordered vector of x's elements, in memory order where x is
  C- or F-contiguous (a view: x's memory, a new reference to its meminfo; a
  layout-A array is tested at run time), else a C-ordered copy of x
  (`numba_alloc.concatenated`), whose reference the result takes over. The
  numba dialect prints ``_reduce_all_sum_f64(_pb_memory_vector(x))`` for the
  sum of every axis of an array of rank 2 or more: NumPy's `np.sum` of a
  contiguous array adds its elements in memory order by pairwise summation
  (its iterator makes one axis of them), which `_reduce_all_sum_f64`
  (`numba_loop_helpers.PAIRWISE_SUM`) does, so the value is NumPy's bit for
  bit for C- and F-contiguous arrays. numba's own ``np.sum`` adds one element
  at a time (4 cycles each, 3x NumPy's time) and compiles `check_axis_bounds`
  and `check_duplicates` with its `array_sum` once per signature and process.
- Only code printed by the numba dialect uses it (`numba_exprs`); a change to
  its code generation needs a new `numba_backend._VERSION`.
"""
from __future__ import annotations

from numba.core import cgutils, types
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic

from .numba_views import _new_view, fields, items

IMPORT = "from pullback.backends.numba_reduce import _pb_memory_vector"


def _contiguous(builder, shape, strides, itemsize, order):
    """An i1: the array (LLVM shape and strides) has the strides of a contiguous array
    whose axes, in `order` from the fastest, are laid out one after another (an axis of
    extent 1 may have any stride)."""
    ok = cgutils.true_bit
    step = itemsize
    for a in order:
        one = builder.icmp_signed("==", shape[a], shape[a].type(1))
        ok = builder.and_(ok, builder.or_(one, builder.icmp_signed("==", strides[a], step)))
        step = builder.mul(step, shape[a])
    return ok


@intrinsic
def _pb_memory_vector(typingctx, x):
    if not (isinstance(x, types.Array) and x.ndim >= 1 and x.dtype == types.float64):
        return None
    ret = x.copy(ndim=1, layout="C", readonly=not x.mutable)

    def codegen(context, builder, sig, args):
        from .numba_alloc import concatenated

        xty, x = sig.args[0], args[0]
        meminfo, parent, itemsize, data, nitems, shape, strides = fields(
            context, builder, xty, x, "meminfo", "parent", "itemsize", "data", "nitems", "shape", "strides")

        def view(meminfo, parent, data):
            return _new_view(context, builder, ret, [nitems], [itemsize], meminfo=meminfo, parent=parent,
                             itemsize=itemsize, data=data)

        if xty.layout in ("C", "F"):
            return impl_ret_borrowed(context, builder, ret, view(meminfo, parent, data))
        shape, strides = items(builder, shape), items(builder, strides)
        rev = list(reversed(range(xty.ndim)))
        contiguous = builder.or_(_contiguous(builder, shape, strides, itemsize, rev),
                                 _contiguous(builder, shape, strides, itemsize, list(range(xty.ndim))))
        with builder.if_else(contiguous, likely=True) as (then, otherwise):
            with then:
                out_view = view(meminfo, parent, data)
                context.nrt.incref(builder, ret, out_view)   # a new reference, as the copy's
                from_view = builder.block
            with otherwise:
                cty = xty.copy(layout="C", readonly=False)
                c = concatenated(context, builder, cty, (xty,), (x,), 0)._getvalue()
                cm, cd = fields(context, builder, cty, c, "meminfo", "data")
                out_copy = view(cm, cgutils.get_null_value(parent.type), cd)
                from_copy = builder.block
        out = builder.phi(out_view.type)
        out.add_incoming(out_view, from_view)
        out.add_incoming(out_copy, from_copy)
        return out

    return ret(x), codegen
