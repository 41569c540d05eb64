"""Run-time checks of generated code: indices out of bounds, integer division
by zero, recursion deeper than the stack (notes [run-time-checks],
[numba-recursion-depth]).

Contract:
- The errors users see: `IndexOutOfBoundsError` (also an `IndexError`),
  `IntegerDivisionError` (also a `ZeroDivisionError`) and
  `RecursionDepthError`, all `PullbackError`s located at the user's line
  (the IR statement's `SrcLoc`), e.g. ``prog.py:12: index 7 is out of bounds
  for axis 0 with size 5``; a dynamic slice ``x[i:i+k]`` that does not fit
  (``0 <= i <= n - k`` fails: never clamped, never wrapped) is an
  `IndexOutOfBoundsError` too (`slice_error`).
- Emitters record one `Site` per check they print (`Sites.add`) and print
  ``raise IndexError(K, i)`` / ``raise ZeroDivisionError(K, 0)`` /
  ``raise RecursionError(K)`` (numba's stack check before a recursive call)
  with the site's number K (a "slice" site, for a dynamic slice, also raises
  ``IndexError(K, i)``); `translate(err, sites)` turns such an exception,
  caught by the Python wrapper around the compiled entry, into the located
  error. Any other exception is not translated (None).
- `from_exception(err, loc, op)`: the same errors for an exception raised by
  a primitive's NumPy implementation (the interpreter, and NumPy's own checks
  in pysource code, located through the generated line).
- `bounds_checks_enabled()`: False when ``PULLBACK_BOUNDSCHECK=0`` (read when
  a program is emitted, so the numba cache key, a hash of the source,
  separates the two). Only numba-compiled code omits its bounds checks then;
  division-by-zero checks are always emitted; the interpreter and pysource
  (whose indexing NumPy checks) always check.
- `ModuleArgs`: the hidden trailing arguments of a numba module (its large
  constants, then, for a recursive module, the calling thread's stack limit
  from `limit()`) with the module's check sites; `trailing()` is the list of
  them for one call, and `call(fn, args)` runs the compiled entry with them
  and translates check exceptions.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager

import operator
import os
import re
from dataclasses import dataclass

from ..errors import (DuplicateIndexError, IndexOutOfBoundsError, IntegerDivisionError, IntegerPowerError, PullbackError,
                      RecursionDepthError)
from ..ir.prims.indexing import DynSliceError

__all__ = ["IndexOutOfBoundsError", "IntegerDivisionError", "IntegerPowerError", "RecursionDepthError"]  # defined in errors


_OFF = ("0", "false", "no", "off")
_NUMPY_INDEX = re.compile(r"index (-?\d+) is out of bounds for axis (\d+) with size (\d+)")


def bounds_checks_enabled() -> bool:
    """Whether numba code checks its indices (``PULLBACK_BOUNDSCHECK=0`` turns it off)."""
    return os.environ.get("PULLBACK_BOUNDSCHECK", "1").strip().lower() not in _OFF


@dataclass(frozen=True)
class Site:
    """One check printed into generated code. kind: "index" (axis, size), "slice" (a
    dynamic slice: axis, size, length), "div" (op: "floordiv" or "mod", or "pow" for a
    negative integer exponent), "recursion" (loc: the recursive call) or
    "duplicate" (`pb.scatter`'s indices: size)."""

    kind: str
    loc: object = None
    axis: int = 0
    size: int = 0
    op: str = ""
    length: int = 0


class Sites(list):
    """The check sites of one generated module, numbered in order."""

    def add(self, site: Site) -> int:
        self.append(site)
        return len(self) - 1


def index_error(loc, index, axis: int, size: int) -> IndexOutOfBoundsError:
    try:
        index = operator.index(index)
    except TypeError:
        pass
    valid = f"-{size} to {size - 1}" if size else "none (the axis is empty)"
    return IndexOutOfBoundsError(f"index {index} is out of bounds for axis {axis} with size {size}", loc=loc,
                                 hint=f"valid indices for this axis are {valid}; check the index before using it")


def _plus(a, b):
    try:
        return a + b
    except TypeError:
        return f"{a} + {b}"


def slice_error(loc, start, length: int, axis: int, size: int) -> IndexOutOfBoundsError:
    """A dynamic slice ``x[i:i+k]`` whose start is outside ``0 <= i <= n - k``."""
    try:
        start = operator.index(start)
    except TypeError:
        pass
    last = size - length
    return IndexOutOfBoundsError(
        f"slice [{start}:{_plus(start, length)}] is out of bounds for axis {axis} with size {size}",
        loc=loc, hint=f"a slice x[i:i+{length}] with a traced start needs 0 <= i <= {last} (pullback neither clamps "
                      "nor wraps it, so that it always has length " + f"{length}); check the start before using it")


def duplicate_error(loc, index, size: int) -> DuplicateIndexError:
    """`pb.scatter` was given an index in [0, size) twice."""
    return DuplicateIndexError(f"pb.scatter: index {index} occurs more than once among the indices in [0, {size})",
                         loc=loc, hint="a scatter writes each position at most once; to combine the values "
                                       "that share an index use pb.hist (e.g. pb.hist(pb.add, ...))")


def division_error(loc, op: str) -> IntegerDivisionError | IntegerPowerError:
    """The error of a failed integer-operand check: a zero divisor of `//`/`%`, or
    (op "pow") a negative exponent of an integer `**`."""
    if op == "pow":
        return IntegerPowerError("integer raised to a negative integer power (** with a negative exponent)",
                                 loc=loc, hint="make the base a float (2.0 ** n) for a fractional result; "
                                               "NumPy refuses integers to negative integer powers too")
    what = "modulo" if op == "mod" else "division"
    sym = "%" if op == "mod" else "//"
    return IntegerDivisionError(f"integer {what} by zero ({sym} with a zero divisor)", loc=loc,
                                hint="check the divisor first, or divide floats (x / 0.0 gives inf, as in NumPy)")


def recursion_error(loc) -> RecursionDepthError:
    return RecursionDepthError("recursion is deeper than the Python stack allows", loc=loc,
                               hint="reduce the recursion depth for these arguments, for example by "
                                    "rewriting the recursion as a loop")


def stack_error(loc) -> RecursionDepthError:
    """Compiled (numba) code stopped recursing near the end of the thread's stack."""
    return RecursionDepthError("recursion is deeper than this thread's stack allows (numba backend)", loc=loc,
                               hint="reduce the recursion depth for these arguments, for example by rewriting "
                                    "the recursion as a loop; or call it from a thread with a larger stack "
                                    "(threading.stack_size) or raise the process's stack limit (ulimit -s)")


def translate(err: BaseException, sites) -> PullbackError | None:
    """The located error for an exception raised by a printed check, else None."""
    a = err.args
    if isinstance(err, PullbackError):
        return None
    if isinstance(err, RecursionError):
        if len(a) != 1:
            return None
    elif len(a) != 2 or not isinstance(err, (IndexError, ZeroDivisionError)):
        return None
    try:
        k = operator.index(a[0])
    except TypeError:
        return None
    if not 0 <= k < len(sites):
        return None
    s = sites[k]
    if s.kind == "index" and isinstance(err, IndexError):
        return index_error(s.loc, a[1], s.axis, s.size)
    if s.kind == "slice" and isinstance(err, IndexError):
        return slice_error(s.loc, a[1], s.length, s.axis, s.size)
    if s.kind == "div" and isinstance(err, ZeroDivisionError):
        return division_error(s.loc, s.op)
    if s.kind == "recursion" and isinstance(err, RecursionError):
        return stack_error(s.loc)
    if s.kind == "duplicate" and isinstance(err, IndexError):
        return duplicate_error(s.loc, a[1], s.size)
    return None


def from_exception(err: BaseException, loc, op: str = "") -> PullbackError | None:
    """The located error for an IndexError (NumPy's message, which has the
    index, axis and size) or ZeroDivisionError raised by a primitive's NumPy
    implementation or by NumPy in pysource code; None for other exceptions."""
    if isinstance(err, PullbackError):
        return None
    if isinstance(err, DynSliceError):
        return slice_error(loc, err.start, err.length, err.axis, err.size)
    from ..ir.prims.combine import DuplicateIndex

    if isinstance(err, DuplicateIndex):
        return duplicate_error(loc, err.index, err.n)
    if isinstance(err, IndexError):
        msg = str(err) or "index out of bounds"
        m = _NUMPY_INDEX.search(msg)
        if m:
            return index_error(loc, int(m.group(1)), int(m.group(2)), int(m.group(3)))
        return IndexOutOfBoundsError(msg, loc=loc, hint="valid indices for an axis of size n are -n to n-1; "
                                                        "check the index before using it")
    if isinstance(err, ZeroDivisionError):
        return division_error(loc, op or ("mod" if "modulo" in str(err) else "floordiv"))
    if isinstance(err, RecursionError):
        return recursion_error(loc)
    return None


class ModuleArgs(list):
    """The hidden trailing arguments of a compiled module (notes
    [numba-constants], [numba-recursion-depth], [loop-checkpointing]) and the
    module's check sites. `limit`: None, or a function giving the stack-limit
    argument, computed per call (the calling thread's stack limit). `metered`:
    the module takes a last argument, the int64[2] array (live, peak store
    bytes) of the calling thread's `metering` block."""

    def __init__(self, values, sites, limit=None, metered=False):
        super().__init__(values)
        self.sites = sites
        self.limit = limit
        self.metered = metered

    def trailing(self) -> list:
        """The hidden arguments for a call from the calling thread."""
        if self.limit is None and not self.metered:
            return self
        out = list(self) if self.limit is None else [*self, self.limit()]
        if self.metered:
            out.append(_METER.array)
        return out

    def call(self, fn, args):
        """`fn(*args, *self.trailing())`, with check exceptions raised as located errors."""
        try:
            if self.limit is None and not self.metered:
                return fn(*args, *self)
            return fn(*args, *self.trailing())
        except CHECK_ERRORS as err:
            raise_located(err, self.sites)

    def bound(self, fn, then=None):
        """`lambda *args: then(self.call(fn, args))` (`then` None: the result itself) for a
        module whose hidden arguments are the same on every call (no stack limit or byte
        meter computed per call): they are bound once, so a call costs the compiled
        function, the check translation and `then` (note [call-overhead])."""
        assert self.limit is None and not self.metered
        tail, sites = tuple(self.trailing()), self.sites
        if tail:
            then = then or (lambda r: r)

            def call(*args):
                try:
                    r = fn(*args, *tail)
                except CHECK_ERRORS as err:
                    raise_located(err, sites)
                return then(r)
        elif then is None:   # the result as it is: the fewest steps a direct call can take
            def call(*args):
                try:
                    return fn(*args)
                except CHECK_ERRORS as err:
                    raise_located(err, sites)
        else:
            def call(*args):
                try:
                    r = fn(*args)
                except CHECK_ERRORS as err:
                    raise_located(err, sites)
                return then(r)

        return call


# the exceptions a failing run-time check raises in compiled code (`raise_located` locates them)
CHECK_ERRORS = (IndexError, ZeroDivisionError, RecursionError)


def raise_located(err, sites):
    """Raise `err` (one of `CHECK_ERRORS`, being handled) as the located error its check
    site gives, or as it is when it is no check's."""
    located = translate(err, sites)
    if located is None:
        raise err
    raise located from None


class _MeterArray(threading.local):
    array = None


# the (live, peak) byte counters a metered module's stores update, per thread
_METER = _MeterArray()


@contextmanager
def metering_array():
    """Inside the block, metered modules called on this thread count store bytes
    into the yielded int64[2] array (live, peak)."""
    import numpy as np

    old = _METER.array
    _METER.array = np.zeros(2, dtype=np.int64)
    try:
        yield _METER.array
    finally:
        _METER.array = old
