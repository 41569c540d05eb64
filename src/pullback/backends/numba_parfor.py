"""The parallel launch of a map's chunks on numba's threads (note [numba-parallel], "One level").

Contract:
- `_pb_parallel_for(chunk, n, nc, failed, rest)`: a numba intrinsic. Runs
  ``chunk(c * n // nc, (c + 1) * n // nc, c, *rest)`` for every chunk
  ``c`` in ``0 .. nc - 1`` on numba's threads (the threading layer's
  ``parallel_for``, as numba's own parallel loops use it, with
  ``numba.get_num_threads()`` threads), and stores 1 into ``failed[c]`` when
  that call raised, else 0 (the exception itself is dropped: the caller runs
  a failed chunk again sequentially to raise it). `chunk` is a numba
  dispatcher of (int64, int64, int64, *rest's types), compiled when the
  caller is typed; `n` and `nc` integers, `failed` a C-contiguous int64 array
  of at least `nc` elements. Returns None. The calling thread releases the
  GIL while the chunks run, as numba's parallel loops do.
- Code shape: the chunk is called like any other numba callee (its library is
  linked into the caller's, once); a small kernel function of the gufunc
  convention, defined in the caller's module, reads the chunk's arguments from
  a struct on the caller's stack and calls the chunk once per chunk index the
  threading layer hands it. No function is compiled with numba's ``parallel``
  option, so nothing else is compiled: numba's prange lowering compiled the
  chunk's wrapper, a gufunc, the gufunc's two wrappers and the driver as
  libraries of their own, each linking, optimising and generating machine
  code for everything below it again.
- Compiling a caller starts numba's threading layer (pullback chooses it
  first: `numba_parallel.ensure_threading_layer`), and the caller's library
  records numba's own reload hook, which starts it when the caller is loaded
  from numba's cache: the layer's symbols must be defined before its machine
  code is linked.
- Generated modules with a parallel map import it (`NumbaDialect.header`); a
  change to its code generation needs a new `numba_backend._VERSION`.
- Only the numba backend imports this module (it imports numba).
"""
from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

_I8P = ir.IntType(8).as_pointer()
_I64 = ir.IntType(64)
_KERNEL = ir.FunctionType(ir.VoidType(), [_I8P.as_pointer(), _I64.as_pointer(), _I64.as_pointer(), _I8P])


def _kernel(context, module, fndesc, data_t):
    """The gufunc-convention kernel calling `fndesc` for chunks first ..
    first + dims[0] - 1, its arguments read from the struct at `data` (n, nc,
    failed's data, the rest); one per chunk function and module. The
    threading layer hands each call args[0] advanced by the first chunk's
    index times steps[0] from failed's data, whose element size is steps[0]."""
    name = f"_pb_parallel_kernel.{fndesc.mangled_name}"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, _KERNEL, name)
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    args, dims, _steps, data = fn.args
    sp = b.bitcast(data, data_t.as_pointer())
    fields = [b.load(cgutils.gep_inbounds(b, sp, 0, k)) for k in range(len(data_t.elements))]
    n, nc, failed, rest = fields[0], fields[1], fields[2], fields[3:]
    first = b.sdiv(b.sub(b.ptrtoint(b.load(args), _I64), b.ptrtoint(failed, _I64)), _I64(8))
    chunk = context.declare_function(module, fndesc)
    with cgutils.for_range(b, b.load(dims)) as loop:
        c = b.add(first, loop.index)
        lo = b.sdiv(b.mul(c, n), nc)
        hi = b.sdiv(b.mul(b.add(c, _I64(1)), n), nc)
        status, _ = context.call_conv.call_function(b, chunk, fndesc.restype, fndesc.argtypes, [lo, hi, c] + rest)
        b.store(b.zext(status.is_error, _I64), b.gep(failed, [c]))
    b.ret_void()
    return fn


@intrinsic
def _pb_parallel_for(typingctx, chunk, n, nc, failed, rest):
    if not (isinstance(chunk, types.Dispatcher) and isinstance(n, types.Integer)
            and isinstance(nc, types.Integer) and isinstance(failed, types.Array)
            and failed.dtype == types.int64 and failed.ndim == 1 and failed.layout == "C"
            and isinstance(rest, types.BaseTuple)):
        return None
    csig = typingctx.resolve_function_type(chunk, (types.int64,) * 3 + tuple(rest.types), {})
    if csig is None:
        return None
    sig = types.none(chunk, n, nc, failed, rest)

    def codegen(context, builder, signature, args):
        from numba.core.typed_passes import _reload_parfors

        _reload_parfors()   # numba's threading layer started (its symbols defined), as numba's parfor lowering does
        cres = chunk.dispatcher.get_compile_result(csig)
        context.active_code_library.add_linking_library(cres.library)
        context.active_code_library._reload_init.add(_reload_parfors)
        rest_vals = [context.cast(builder, v, t, ct) for v, t, ct in
                     zip(cgutils.unpack_tuple(builder, args[4], len(signature.args[4])), signature.args[4].types,
                         csig.args[3:])]
        fail_data = context.make_array(signature.args[3])(context, builder, args[3]).data
        data_t = ir.LiteralStructType([_I64, _I64, fail_data.type] + [v.type for v in rest_vals])
        data = cgutils.alloca_once(builder, data_t)
        nchunks = context.cast(builder, args[2], signature.args[2], types.int64)
        vals = [context.cast(builder, args[1], signature.args[1], types.int64), nchunks, fail_data] + rest_vals
        for k, v in enumerate(vals):
            builder.store(v, cgutils.gep_inbounds(builder, data, 0, k))
        kernel = _kernel(context, builder.module, cres.fndesc, data_t)
        argv = cgutils.alloca_once(builder, _I8P)
        builder.store(builder.bitcast(fail_data, _I8P), argv)
        dims = cgutils.alloca_once(builder, _I64)
        builder.store(nchunks, dims)
        steps = cgutils.alloca_once(builder, _I64)
        builder.store(_I64(8), steps)
        module = builder.module
        intp = context.get_value_type(types.intp)
        parallel_for = cgutils.get_or_insert_function(
            module, ir.FunctionType(ir.VoidType(), [_I8P] * 5 + [intp] * 3), "numba_parallel_for")
        get_num_threads = cgutils.get_or_insert_function(module, ir.FunctionType(intp, []), "get_num_threads")
        threads = builder.call(get_num_threads, [])
        pyapi = context.get_python_api(builder)
        gil = pyapi.gil_ensure()
        state = pyapi.save_thread()
        builder.call(parallel_for, [builder.bitcast(kernel, _I8P), builder.bitcast(argv, _I8P),
                                    builder.bitcast(dims, _I8P), builder.bitcast(steps, _I8P),
                                    builder.bitcast(data, _I8P), intp(0), intp(1), threads])
        pyapi.restore_thread(state)
        pyapi.gil_release(gil)
        return context.get_dummy_value()

    return sig, codegen
