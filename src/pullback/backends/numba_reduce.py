"""The full sum of a float64 array as a numba intrinsic (note [compile-time],
"Sums in place").

Contract:
- `_pb_sum_all(x)`: the float64 sum of every element of the float64 array `x`
  (any rank and layout), the value of numba's ``np.sum(x)`` bit for bit: from
  0.0, adding the elements one at a time in numba's order (its `_numpy_sum`
  iterates in "K" order: the axes reversed for a layout-F array, C order for
  every other layout). LLVM loops in the caller, where numba's ``np.sum``
  compiles its `array_sum` with `check_axis_bounds` and `check_duplicates`
  once per signature and process (0.1-0.15 s).
- Only code printed by the numba dialect uses it (`numba_exprs`, sums of
  every axis of an array of rank 2 or more; vectors use the loop helper
  `_reduce_all_sum_f64`); a change to its code generation needs a new
  `numba_backend._VERSION`.
"""
from __future__ import annotations

from numba.core import cgutils, types
from numba.extending import intrinsic

from .numba_views import fields, items

IMPORT = "from pullback.backends.numba_reduce import _pb_sum_all"


@intrinsic
def _pb_sum_all(typingctx, x):
    if not (isinstance(x, types.Array) and x.ndim >= 1 and x.dtype == types.float64):
        return None

    def codegen(context, builder, sig, args):
        xty = sig.args[0]
        data, shape, strides = fields(context, builder, xty, args[0], "data", "shape", "strides")
        shape, strides = items(builder, shape), items(builder, strides)
        order = list(range(xty.ndim))
        if xty.layout == "F":
            order.reverse()
        acc = cgutils.alloca_once_value(builder, context.get_constant(types.float64, 0.0))
        with cgutils.loop_nest(builder, [shape[a] for a in order], context.get_value_type(types.intp)) as idx:
            at = [None] * xty.ndim
            for a, i in zip(order, idx):
                at[a] = i
            ptr = cgutils.get_item_pointer2(context, builder, data, shape, strides, xty.layout, at)
            builder.store(builder.fadd(builder.load(acc), builder.load(ptr)), acc)
        return builder.load(acc)

    return types.float64(x), codegen
