"""The full sum of a float64 array in numba code, in NumPy's order (note
[compile-time], "Sums in place"; note [pairwise-sums]).

Contract:
- `_pb_sum_vec(x)`: the float64 sum of a float64 vector `x` (any strides) in
  NumPy's pairwise order (`pairwise_sum` of numpy/_core/src/umath/loops_utils.h.src):
  np.sum's bits. A numba intrinsic that calls an LLVM function defined in the
  caller's module (`_pairwise_fn`, recursive): a helper printed into each
  module cost 0.3-0.5 s of numba's work per module, the same code as a numba
  function compiled once per process 0.15-0.24 s per process (lstm's
  gradient, kmeans' primal).
- `_pb_memory_vector(x)`: numba intrinsic, for a float64 array `x` of any rank
  and layout: a C-ordered vector of x's elements, in memory order where x is
  C- or F-contiguous (a view: x's memory, a new reference to its meminfo; a
  layout-A array is tested at run time), else a C-ordered copy of x
  (`numba_alloc.concatenated`), whose reference the result takes over. The
  numba dialect prints ``_pb_sum_vec(_pb_memory_vector(x))`` for the
  sum of every axis of an array of rank 2 or more: NumPy's `np.sum` of a
  contiguous array adds its elements in memory order by pairwise summation
  (its iterator makes one axis of them), which `_pb_sum_vec` does, so the value is NumPy's bit for
  bit for C- and F-contiguous arrays. numba's own ``np.sum`` adds one element
  at a time (4 cycles each, 3x NumPy's time) and compiles `check_axis_bounds`
  and `check_duplicates` with its `array_sum` once per signature and process.
- Only code printed by the numba dialect uses them (`numba_exprs`); a change to
  their code generation needs a new `numba_backend._VERSION`.
"""
from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils, types
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic

from .numba_views import _new_view, fields, items

IMPORT = "from pullback.backends.numba_reduce import _pb_sum_vec, _pb_memory_vector"


def _pairwise_fn(module, contiguous: bool):
    """The LLVM function `double (i8* data, i64 stride in bytes, i64 n)`: NumPy's
    `pairwise_sum` of the n doubles at data, data + stride, ... (note [pairwise-sums]):
    under 8 of them one by one from 0.0; up to 128, 8 partial sums combined as
    ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)), then the last n % 8 one by one; more,
    the halves split at n / 2 rounded down to a multiple of 8, each summed by a recursive
    call, and added. Defined once per LLVM module (internal linkage); `contiguous`: the
    stride is 8 whatever the argument says (a C-ordered vector: LLVM vectorises the loads)."""
    name = "pb_pairwise_c" if contiguous else "pb_pairwise_a"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    f64, i64, i8p = ir.DoubleType(), ir.IntType(64), ir.IntType(8).as_pointer()
    fn = ir.Function(module, ir.FunctionType(f64, [i8p, i64, i64]), name)
    fn.linkage = "internal"
    data, stride, n = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    if contiguous:
        stride = i64(8)
    zero = f64(0.0)

    def load(i):
        ptr = b.gep(data, [b.mul(i, stride)])
        return b.load(b.bitcast(ptr, f64.as_pointer()))

    def add_each(start, stop, acc):
        """acc + x[start] + ... + x[stop - 1], one at a time (acc: an alloca)."""
        with cgutils.for_range_slice(b, start, stop, i64(1)) as (i, _):
            b.store(b.fadd(b.load(acc), load(i)), acc)

    res = b.alloca(f64)
    with b.if_then(b.icmp_signed("<", n, i64(8))):
        b.store(zero, res)
        add_each(i64(0), n, res)
        b.ret(b.load(res))
    with b.if_then(b.icmp_signed(">", n, i64(128))):
        h = b.and_(b.ashr(n, i64(1)), i64(-8))
        left = b.call(fn, [data, fn.args[1], h])
        right = b.call(fn, [b.gep(data, [b.mul(h, stride)]), fn.args[1], b.sub(n, h)])
        b.ret(b.fadd(left, right))
    r = [b.alloca(f64) for _ in range(8)]
    for k in range(8):
        b.store(load(i64(k)), r[k])
    with cgutils.for_range_slice(b, i64(1), b.sdiv(n, i64(8)), i64(1)) as (blk, _):
        base = b.mul(blk, i64(8))
        for k in range(8):
            b.store(b.fadd(b.load(r[k]), load(b.add(base, i64(k)))), r[k])
    v = [b.load(x) for x in r]
    b.store(b.fadd(b.fadd(b.fadd(v[0], v[1]), b.fadd(v[2], v[3])),
                   b.fadd(b.fadd(v[4], v[5]), b.fadd(v[6], v[7]))), res)
    add_each(b.sub(n, b.srem(n, i64(8))), n, res)
    b.ret(b.load(res))
    return fn


@intrinsic
def _pb_sum_vec(typingctx, x):
    if not (isinstance(x, types.Array) and x.ndim == 1 and x.dtype == types.float64):
        return None

    def codegen(context, builder, sig, args):
        xty = sig.args[0]
        data, shape, strides = fields(context, builder, xty, args[0], "data", "shape", "strides")
        fn = _pairwise_fn(builder.module, xty.layout == "C")
        ptr = builder.bitcast(data, ir.IntType(8).as_pointer())
        total = builder.call(fn, [ptr, items(builder, strides)[0], items(builder, shape)[0]])
        return builder.fadd(ir.Constant(ir.DoubleType(), 0.0), total)   # np.sum adds to 0.0

    return types.float64(x), codegen


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
