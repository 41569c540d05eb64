"""Stack-depth checks for recursive numba code (note [numba-recursion-depth]).

Numba-compiled recursion runs on the native stack of the calling thread, with
no limit of its own: too deep a recursion overflows the stack and kills the
process. The numba dialect therefore prints, before every call along a
call-graph cycle (self or mutual recursion),
``if _pb_sp() < _pb_lo: raise RecursionError(K)``, where `_pb_lo` is a
hidden trailing parameter of every function of the module.

Contract:
- `_pb_sp()`: a numba intrinsic, the address of a slot in the calling
  function's stack frame (an int64; the stack grows down, so deeper calls
  give smaller numbers). It compiles to one ``alloca`` in the function's
  entry block (shared by every use in the function) and a ``ptrtoint``: no
  call, no instruction beyond the comparison. Functions using it are cached
  by numba like any other; the cache key is the generated source, so a
  change to `_pb_sp`'s code generation needs a new `numba_backend._VERSION`.
- `stack_limit() -> int`: the lowest stack address the calling thread's
  numba code may reach before it must stop recursing: the thread's stack
  bottom plus a margin (`margin(size)`), so that the frames between two
  checks, the library code they call and the way back to Python fit below
  it; a stack reported larger than `MAX_STACK` (1 GiB; ``ulimit -s
  unlimited`` reports terabytes) counts as that size. Computed once per
  thread (``pthread_getattr_np`` on Linux, the ``pthread_get_stack*_np``
  functions on macOS; otherwise, or if those fail, a conservative estimate
  from the current stack address and `threading.stack_size()` /
  ``RLIMIT_STACK``), then read from a `threading.local` (tens of nanoseconds
  per call).
- `thread_stack() -> (lo, hi) | None`: the calling thread's stack bounds.
- Only the numba backend imports this module (it imports numba).
"""
from __future__ import annotations

import ctypes
import sys
import threading

from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

_KIB = 1024
MIN_MARGIN = 128 * _KIB    # room kept below the last check (frames, BLAS/libm calls, the return)
_FALLBACK_SIZE = 512 * _KIB  # stack assumed usable when nothing is known
MAX_STACK = 1 << 30        # stack used at most (``ulimit -s unlimited`` reports terabytes)
_SLOT = "pb_sp_slot"


@intrinsic
def _pb_sp(typingctx):
    """The current stack address (an int64), for comparison with `stack_limit()`."""
    def codegen(context, builder, signature, args):
        # one slot per function, in its entry block: every check in the function then
        # compares the same value, and LLVM drops the checks after the first
        for ins in builder.function.entry_basic_block.instructions:
            if ins.name.startswith(_SLOT):
                slot = ins
                break
        else:
            slot = cgutils.alloca_once(builder, ir.IntType(8), name=_SLOT)
        return builder.ptrtoint(slot, ir.IntType(64))
    return types.int64(), codegen


def margin(size: int) -> int:
    """Bytes kept free at the bottom of a stack of `size` bytes: an eighth of
    it, at least `MIN_MARGIN`, at most half of it."""
    return min(max(MIN_MARGIN, size // 8), size // 2)


def _libc():
    try:
        return ctypes.CDLL(None)
    except OSError:
        return None


def _linux_stack(libc):
    attr = ctypes.create_string_buffer(256)  # pthread_attr_t is 56 or 64 bytes
    libc.pthread_self.restype = ctypes.c_void_p
    libc.pthread_self.argtypes = []
    libc.pthread_getattr_np.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    libc.pthread_attr_getstack.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                                           ctypes.POINTER(ctypes.c_size_t)]
    libc.pthread_attr_destroy.argtypes = [ctypes.c_void_p]
    if libc.pthread_getattr_np(libc.pthread_self(), attr) != 0:
        return None
    try:
        addr, size = ctypes.c_void_p(), ctypes.c_size_t()
        if libc.pthread_attr_getstack(attr, ctypes.byref(addr), ctypes.byref(size)) != 0 or not addr.value:
            return None
        return addr.value, addr.value + size.value
    finally:
        libc.pthread_attr_destroy(attr)


def _mac_stack(libc):
    libc.pthread_self.restype = ctypes.c_void_p
    libc.pthread_get_stackaddr_np.restype = ctypes.c_void_p
    libc.pthread_get_stackaddr_np.argtypes = [ctypes.c_void_p]
    libc.pthread_get_stacksize_np.restype = ctypes.c_size_t
    libc.pthread_get_stacksize_np.argtypes = [ctypes.c_void_p]
    me = libc.pthread_self()
    hi, size = libc.pthread_get_stackaddr_np(me), libc.pthread_get_stacksize_np(me)
    return (hi - size, hi) if hi and size else None


def thread_stack():
    """(lo, hi): the calling thread's stack bounds, or None where they cannot be found."""
    libc = _libc()
    if libc is None:
        return None
    try:
        if sys.platform.startswith("linux"):
            return _linux_stack(libc)
        if sys.platform == "darwin":
            return _mac_stack(libc)
    except (AttributeError, OSError, ValueError, TypeError):
        return None
    return None


_SP_NOW = []


def _sp_now() -> int:
    """The current stack address, via a small njit function compiled on first use."""
    if not _SP_NOW:
        from numba import njit

        _SP_NOW.append(njit(cache=False)(lambda: _pb_sp()))
    return int(_SP_NOW[0]())


def _estimate() -> int:
    """A conservative limit where the bounds are unknown: from the current
    stack address, half of the thread's nominal stack size below it."""
    size = threading.stack_size() if threading.current_thread() is not threading.main_thread() else 0
    if not size:
        try:
            import resource

            soft = resource.getrlimit(resource.RLIMIT_STACK)[0]
            size = soft if 0 < soft < (1 << 40) else 0
        except (ImportError, OSError, ValueError):
            size = 0
    size = size or _FALLBACK_SIZE
    return _sp_now() - size // 2 + margin(size // 2)


def _compute() -> int:
    bounds = thread_stack()
    if bounds is None:
        return _estimate()
    lo, hi = bounds
    lo = max(lo, hi - MAX_STACK)
    return lo + margin(hi - lo)


_TLS = threading.local()


def stack_limit() -> int:
    """The lowest safe stack address for numba code on the calling thread."""
    try:
        return _TLS.limit
    except AttributeError:
        _TLS.limit = limit = _compute()
        return limit
