"""Static slices of arrays as numba intrinsics (note [compile-time], "Slices in
place").

Contract:
- `_pb_view_c(x, starts, shape, steps)` and `_pb_view_a(x, starts, shape,
  steps)`: numba intrinsics, the view of the array `x` whose element
  ``(i0, i1, ...)`` is ``x[starts[0] + i0 * steps[0], ...]`` with the given
  `shape` (tuples of integers, one per axis of `x`; the caller guarantees the
  view lies inside `x`, as a normalised slice does). The view shares `x`'s
  memory and keeps it alive (a new reference to its meminfo), as numba's
  slicing does. Its layout: `_pb_view_c` keeps a C-ordered `x`'s layout C
  (the caller uses it only where numba's own slicing would: a slice of the
  first axis with step 1, the other axes whole), otherwise, and always for
  `_pb_view_a`, layout 'A'.
- `_pb_view_cb`, `_pb_view_ab`: the same views *borrowed*: no reference of
  their own (a null meminfo and parent, which numba's reference counting
  skips), for a view that the caller knows its base outlives and that never
  leaves its body (`numba_borrow`, note [borrowed-views]). Returned to Python
  such a view would not keep its memory alive: the caller must not let it
  get there. `_pb_row_b(x, i)`: likewise the borrowed view ``x[i]`` of an array
  of at least two axes, for an integer `i` the caller checked in range (a
  negative one wraps, as numba's indexing does). `_pb_borrow(x)`: likewise the
  whole of `x` (a store's buffer lent by its owner array: note
  [borrowed-views], "Store buffers").
- `_pb_keep(x)`: does nothing; a use of `x` that keeps numba from releasing
  its array before this point (numba releases a variable after its last use),
  for the owner of borrowed views that live until then (note
  [borrowed-views], "Store buffers").
- `view_text(x_text, shape, spec, borrowed=False) -> str | None`: the
  intrinsic's call (a borrowed one where `borrowed`) for the
  IR index `spec` (`ir.prims.indexing`: only ``('s', start, stop, step)``
  entries, fewer than the axes meaning the rest whole) of an array of static
  `shape`, or None for any other spec (integer or dynamic indices).
- `_pb_region_add(dst, src)`, `_pb_region_set(dst, src)`: numba intrinsics,
  ``dst[i] += src[i]`` (or ``=``) for every index of the float arrays `dst`
  and `src` of one shape and dtype (`dst` usually a view), in C order: the
  loop nest the numba dialect printed for an `index_update` of a static
  region, element for element the same operations, lowered as LLVM loops
  instead of numba's range loops (about 12 ms of numba's lowering per nest).
- `_pb_reshape(x, shape)`: numba intrinsic, `np.ascontiguousarray(x).reshape(shape)`
  for a tuple `shape` of at least one integer whose product is `x`'s size (the
  caller guarantees it: the IR's static reshape). A C-ordered `x` gives the
  view directly (its memory, a new reference to its meminfo, C strides);
  another layout is first copied to a new C-ordered array by LLVM loops
  (`numba_alloc.concatenated` of the one piece), whose reference the result
  takes over. numba's `.reshape` lowers a call of its no-copy reshape routine,
  a tuple and a failure branch raising an error at each site, and
  `np.ascontiguousarray` with the reshape machinery it pulls in is about
  0.4 s of compiling per process and signature (gmm's gradient reshapes one
  transposed matrix).
- `_pb_broadcast(x, shape)`: numba intrinsic, ``np.broadcast_to(x, shape)``
  for an array `x` and a tuple `shape` of at least `x`'s rank whose extents
  are `x`'s, aligned to the right, except where `x`'s extent is 1 (the caller
  guarantees it: the IR's static broadcast): a read-only view of layout 'A'
  sharing `x`'s memory (a new reference to its meminfo; no parent object, so
  that numba boxes it as a new read-only array), stride 0 along the
  new leading axes and the axes of extent 1 of `x`. numba's `np.broadcast_to`
  compiles its shape checks and their error messages per signature and
  process (0.2 s: ht's complicated Jacobian).
- `fields(context, builder, ty, value, *names)`, `items(builder, arr)`,
  `with_fields(context, builder, ty, struct, **values)`: codegen helpers, an
  array value's fields (``"data"``, ``"shape"``, ...) read with
  ``extractvalue`` from the struct value itself, an LLVM array's elements, and
  an array value with fields replaced (``insertvalue``).
  numba's `make_array` proxy stores the value to a stack slot and first looks
  up an ``__array__`` lowering, which fails for plain arrays and refreshes
  numba's registries: lowering time at every site of every intrinsic here.
- numba lowers `x[a:b, c:d]` through its generic slicing code, about 5 ms of
  lowering per slice (det's gradient has over a hundred); the intrinsic's
  code is a few integer operations. Only code printed by the numba dialect
  uses it; a change to its code generation needs a new
  `numba_backend._VERSION`.
"""
from __future__ import annotations

from numba.core import cgutils, types
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic

from .numba_exprs import shape_tuple

IMPORT = ("from pullback.backends.numba_views import _pb_view_a, _pb_view_c, _pb_region_add, _pb_region_set, "
          "_pb_reshape, _pb_broadcast")
BORROWED_IMPORT = "from pullback.backends.numba_views import _pb_view_ab, _pb_view_cb, _pb_row_b, _pb_borrow"
KEEP_IMPORT = "from pullback.backends.numba_views import _pb_keep"


def _ints(t, n):
    return isinstance(t, types.BaseTuple) and len(t) == n and all(isinstance(e, types.Integer) for e in t)


def fields(context, builder, ty, value, *names):
    """Fields of numba array `value` (type `ty`), read from the struct value itself (module
    docstring)."""
    pos = context.data_model_manager[ty].get_field_position
    return [builder.extract_value(value, pos(n)) for n in names]


def items(builder, arr) -> list:
    """The elements of an LLVM array value (an array's shape or strides)."""
    return [builder.extract_value(arr, k) for k in range(arr.type.count)]


def with_fields(context, builder, ty, struct, **values):
    """The array value `struct` (numba type `ty`) with the named fields replaced (`insertvalue`)."""
    pos = context.data_model_manager[ty].get_field_position
    for name, v in values.items():
        struct = builder.insert_value(struct, v, pos(name))
    return struct


def _count(context, builder, extents):
    """The product of the extents: an array's nitems."""
    n = context.get_constant(types.intp, 1)
    for e in extents:
        n = builder.mul(n, e)
    return n


def _new_view(context, builder, ty, extents, strides, **values):
    """An array value of numba type `ty` (of a new rank, built from nothing) with the given
    extents and strides (LLVM integers), its element count, and the named `values` (meminfo,
    data, ...); fields not given are null."""
    return with_fields(context, builder, ty, cgutils.get_null_value(context.get_value_type(ty)),
                       nitems=_count(context, builder, extents), shape=cgutils.pack_array(builder, extents),
                       strides=cgutils.pack_array(builder, strides), **values)


def _viewer(keep_c: bool, borrowed: bool = False):
    def typer(typingctx, x, starts, shape, steps):
        if not (isinstance(x, types.Array) and x.ndim >= 1 and all(_ints(t, x.ndim) for t in (starts, shape, steps))):
            return None
        ret = x.copy(layout="C" if keep_c and x.layout == "C" else "A", readonly=not x.mutable)

        def codegen(context, builder, sig, args):
            xty, x = sig.args[0], args[0]
            firsts, extents, steps_ = ([context.cast(builder, v, t, types.intp) for v, t in
                                        zip(cgutils.unpack_tuple(builder, args[k]), sig.args[k])]
                                       for k in (1, 2, 3))
            data, strides = fields(context, builder, xty, x, "data", "strides")
            strides = items(builder, strides)
            offset = context.get_constant(types.intp, 0)
            for f, s in zip(firsts, strides):
                offset = builder.add(offset, builder.mul(f, s))
            data = builder.bitcast(builder.gep(builder.bitcast(data, cgutils.voidptr_t), [offset]), data.type)
            # the same LLVM struct for layouts C and A: meminfo, parent and itemsize kept
            out = with_fields(context, builder, xty, x, data=data, nitems=_count(context, builder, extents),
                              shape=cgutils.pack_array(builder, extents),
                              strides=cgutils.pack_array(builder, [builder.mul(k, s) for k, s in zip(steps_, strides)]))
            if borrowed:   # no reference of its own: a null meminfo, which numba's refcounting skips
                return _unowned(context, builder, xty, out)
            return impl_ret_borrowed(context, builder, ret, out)

        return ret(x, starts, shape, steps), codegen

    typer.__name__ = ("_pb_view_cb" if keep_c else "_pb_view_ab") if borrowed else ("_pb_view_c" if keep_c else "_pb_view_a")
    return intrinsic(typer)


@intrinsic
def _pb_row_b(typingctx, x, i):
    """A borrowed view of row `i` of `x` (module docstring)."""
    if not (isinstance(x, types.Array) and x.ndim >= 2 and isinstance(i, types.Integer)):
        return None
    ret = x.copy(ndim=x.ndim - 1, layout="C" if x.layout == "C" else "A", readonly=not x.mutable)

    def codegen(context, builder, sig, args):
        xty, x = sig.args[0], args[0]
        i = context.cast(builder, args[1], sig.args[1], types.intp)
        data, shape, strides, itemsize = fields(context, builder, xty, x, "data", "shape", "strides", "itemsize")
        shape, strides = items(builder, shape), items(builder, strides)
        if sig.args[1].signed:   # numba's wraparound of a negative index (checked in range before)
            i = builder.select(builder.icmp_signed("<", i, i.type(0)), builder.add(i, shape[0]), i)
        data = builder.bitcast(builder.gep(builder.bitcast(data, cgutils.voidptr_t), [builder.mul(i, strides[0])]),
                               data.type)
        return _new_view(context, builder, ret, shape[1:], strides[1:], itemsize=itemsize, data=data)

    return ret(x, i), codegen


def _unowned(context, builder, ty, value):
    """The array `value` (numba type `ty`) with a null meminfo and parent: a borrowed view."""
    meminfo, parent = fields(context, builder, ty, value, "meminfo", "parent")
    return with_fields(context, builder, ty, value, meminfo=cgutils.get_null_value(meminfo.type),
                       parent=cgutils.get_null_value(parent.type))


@intrinsic
def _pb_borrow(typingctx, x):
    """The whole of `x`, borrowed (module docstring)."""
    if not isinstance(x, types.Array):
        return None

    def codegen(context, builder, sig, args):
        return _unowned(context, builder, sig.args[0], args[0])

    return x(x), codegen


@intrinsic
def _pb_keep(typingctx, x):
    """Nothing: a use of `x` (module docstring)."""
    def codegen(context, builder, sig, args):
        return context.get_dummy_value()

    return types.none(x), codegen


_pb_view_c = _viewer(True)
_pb_view_a = _viewer(False)
_pb_view_cb = _viewer(True, borrowed=True)
_pb_view_ab = _viewer(False, borrowed=True)


def _region(add: bool):
    def typer(typingctx, dst, src):
        if not (isinstance(dst, types.Array) and isinstance(src, types.Array) and dst.mutable
                and dst.ndim == src.ndim >= 1 and dst.dtype == src.dtype and isinstance(dst.dtype, types.Float)):
            return None

        def codegen(context, builder, sig, args):
            (dty, sty), intp = sig.args, context.get_value_type(types.intp)
            ddata, dshape, dstrides = fields(context, builder, dty, args[0], "data", "shape", "strides")
            sdata, sshape, sstrides = fields(context, builder, sty, args[1], "data", "shape", "strides")
            shape, dshape, dstrides, sstrides = (items(builder, a) for a in (sshape, dshape, dstrides, sstrides))
            with cgutils.loop_nest(builder, shape, intp) as idx:   # C order, as the loops it replaces
                sp = cgutils.get_item_pointer2(context, builder, sdata, shape, sstrides, sty.layout, idx)
                dp = cgutils.get_item_pointer2(context, builder, ddata, dshape, dstrides, dty.layout, idx)
                v = builder.load(sp)
                builder.store(builder.fadd(builder.load(dp), v) if add else v, dp)
            return context.get_dummy_value()

        return types.none(dst, src), codegen

    typer.__name__ = "_pb_region_add" if add else "_pb_region_set"
    return intrinsic(typer)


_pb_region_add = _region(True)
_pb_region_set = _region(False)


@intrinsic
def _pb_reshape(typingctx, x, shape):
    if not (isinstance(x, types.Array) and isinstance(shape, types.BaseTuple) and len(shape) >= 1
            and all(isinstance(t, types.Integer) for t in shape)):
        return None
    ret = x.copy(ndim=len(shape), layout="C", readonly=not x.mutable)
    sig = ret(x, shape)

    def codegen(context, builder, sig, args):
        xty, x = sig.args[0], args[0]
        if xty.layout != "C":   # a C-ordered copy first (as np.ascontiguousarray), then its view
            from .numba_alloc import concatenated

            cty = xty.copy(layout="C", readonly=False)
            x, xty = concatenated(context, builder, cty, (xty,), (x,), 0)._getvalue(), cty
        extents = [context.cast(builder, v, t, types.intp)
                   for v, t in zip(cgutils.unpack_tuple(builder, args[1]), sig.args[1])]
        meminfo, parent, itemsize, data = fields(context, builder, xty, x, "meminfo", "parent", "itemsize", "data")
        strides, step = [], itemsize
        for n in reversed(extents):
            strides.insert(0, step)
            step = builder.mul(step, n)
        out = _new_view(context, builder, ret, extents, strides, meminfo=meminfo, parent=parent, itemsize=itemsize,
                        data=data)
        if sig.args[0].layout != "C":
            return out   # the copy's reference, handed on
        return impl_ret_borrowed(context, builder, ret, out)

    return sig, codegen


@intrinsic
def _pb_broadcast(typingctx, x, shape):
    if not (isinstance(x, types.Array) and isinstance(shape, types.BaseTuple) and len(shape) >= max(1, x.ndim)
            and all(isinstance(t, types.Integer) for t in shape)):
        return None
    ret = x.copy(ndim=len(shape), layout="A", readonly=True)   # as numba's np.broadcast_to
    sig = ret(x, shape)

    def codegen(context, builder, sig, args):
        xty, x = sig.args[0], args[0]
        extents = [context.cast(builder, v, t, types.intp)
                   for v, t in zip(cgutils.unpack_tuple(builder, args[1]), sig.args[1])]
        xshape, xstrides = (items(builder, a) for a in fields(context, builder, xty, x, "shape", "strides"))
        zero, one = (context.get_constant(types.intp, v) for v in (0, 1))
        lead = len(extents) - xty.ndim
        strides = [zero] * lead + [builder.select(builder.icmp_signed("==", n, one), zero, st)   # a broadcast axis
                                   for n, st in zip(xshape, xstrides)]
        meminfo, itemsize, data = fields(context, builder, xty, x, "meminfo", "itemsize", "data")
        # no parent: returned to Python it is a new view
        out = _new_view(context, builder, ret, extents, strides, meminfo=meminfo, itemsize=itemsize, data=data)
        return impl_ret_borrowed(context, builder, ret, out)

    return sig, codegen


def view_text(x_text: str, shape, spec, borrowed: bool = False) -> str | None:
    """The intrinsic's call for a static slice of an array (module docstring), or None."""
    shape = tuple(int(d) for d in shape)
    if not shape or len(spec) > len(shape) or any(s[0] != "s" for s in spec):
        return None
    spec = tuple(spec) + (("s", None, None, None),) * (len(shape) - len(spec))
    starts, extents, steps = [], [], []
    for d, (_, start, stop, step) in zip(shape, spec):
        if not all(v is None or isinstance(v, int) for v in (start, stop, step)) or step == 0:
            return None
        a, b, k = slice(start, stop, step).indices(d)
        starts.append(a)
        extents.append(len(range(a, b, k)))
        steps.append(k)
    whole = all(a == 0 and n == d and k == 1 for a, n, k, d in zip(starts[1:], extents[1:], steps[1:], shape[1:]))
    fn = ("_pb_view_c" if whole and steps[0] == 1 else "_pb_view_a") + ("b" if borrowed else "")
    return f"{fn}({x_text}, {shape_tuple(starts)}, {shape_tuple(extents)}, {shape_tuple(steps)})"
