"""User-facing errors.

Contract: every error that reaches a user is a `PullbackError` that names the
user's file and line and says what to do instead. Internal code raises these
without a location; the frontend attaches the staged statement's (`with_loc`),
and the public API attaches the user's call site to any that still has none
(`user_error`, which also turns exceptions that are not PullbackErrors into
ones: resource exhaustion says so, anything else is an `InternalError`).
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading


class PullbackError(Exception):
    """Base class. `loc` is an `ir.core.SrcLoc` or None; `hint` says what to do."""

    def __init__(self, msg: str, loc=None, hint: str | None = None):
        self.msg = msg
        self.loc = loc
        self.hint = hint
        super().__init__(self._render())

    def _render(self) -> str:
        head = f"{self.loc.file}:{self.loc.line}: " if self.loc is not None else ""
        out = head + self.msg
        if self.loc is not None and getattr(self.loc, "text", ""):
            out += "\n    " + self.loc.text.strip()
        if self.hint:
            out += "\n  hint: " + self.hint
        return out

    def with_loc(self, loc):
        if self.loc is None and loc is not None:
            self.loc = loc
            self.args = (self._render(),)
        return self

    def __str__(self):
        return self._render()


class UnsupportedSyntaxError(PullbackError):
    """Python syntax the frontend does not stage (class, try, generators, ...)."""


class ShapeError(PullbackError):
    """Operand shapes or dtypes do not fit a primitive."""


class NonDifferentiableError(PullbackError):
    """A derivative was asked with respect to an integer or boolean value."""


class MissingRuleError(PullbackError):
    """A primitive lacks the rule (jvp, vjp, ...) a transformation needs."""


class StagingError(PullbackError):
    """A Python construct needs a concrete value, but it depends on traced data."""


class IRError(PullbackError):
    """The IR is ill-formed (type checker, parser). Indicates a compiler bug or bad hand-written IR."""


class IndexOutOfBoundsError(PullbackError, IndexError):
    """An index outside ``-n <= i < n`` for an axis of size n."""


class DuplicateIndexError(PullbackError, IndexError):
    """`pb.scatter` given an in-range index twice (a scatter writes each position at most once)."""


class IntegerDivisionError(PullbackError, ZeroDivisionError):
    """Integer ``//`` or ``%`` with a zero divisor (float division gives inf/nan, as in NumPy)."""


class IntegerPowerError(PullbackError, ValueError):
    """An integer raised to a negative integer power (NumPy refuses it too)."""


class RecursionDepthError(PullbackError):
    """Recursion deeper than the stack allows: Python's on interp and pysource, the
    calling thread's native stack on numba."""


class InternalError(PullbackError):
    """pullback itself failed (a bug): an unexpected exception reached the API."""


def short_repr(v) -> str:
    """`repr(v)` cut to about 60 characters, for error messages (never raises)."""
    try:
        r = repr(v)
    except Exception:
        r = f"<{type(v).__name__} object>"
    return r if len(r) <= 60 else r[:45] + "..." + r[-10:]


# -- the API boundary ---------------------------------------------------------------------

_PKG = os.path.dirname(os.path.abspath(__file__)) + os.sep


_STAGING = threading.local()


@contextlib.contextmanager
def in_staging():
    """Marks this thread as staging a function (`frontend.stage`): errors raised by
    API calls that staged code makes are then located by the frontend at the
    staged statement, not at the outer call site (`call_site` returns None)."""
    _STAGING.depth = getattr(_STAGING, "depth", 0) + 1
    try:
        yield
    finally:
        _STAGING.depth -= 1


def call_site():
    """The `SrcLoc` of the innermost stack frame outside the pullback package: the
    user's call of a pullback API function (None if there is none)."""
    import linecache

    from .ir.core import SrcLoc

    if getattr(_STAGING, "depth", 0):
        return None  # inside staging: the frontend locates the error at the staged statement
    f = sys._getframe(1)
    while f is not None:
        file = f.f_code.co_filename
        if not os.path.abspath(file).startswith(_PKG) and not file.startswith("<frozen "):
            return SrcLoc(file, f.f_lineno, linecache.getline(file, f.f_lineno).rstrip("\n"))
        f = f.f_back
    return None


def user_error(e: BaseException) -> PullbackError:
    """The `PullbackError` to raise for exception `e` leaving a public API call: a
    PullbackError gets the user's call site if it has no location yet; exhausted
    resources become errors that say so; anything else is reported as a pullback
    bug. `raise user_error(e) from None` at each public entry point (note [api-errors])."""
    if isinstance(e, PullbackError):
        return e.with_loc(call_site())
    loc = call_site()
    if isinstance(e, RecursionError):
        return PullbackError(
            "recursion too deep: Python's stack limit was reached while staging or running this function",
            loc=loc, hint="check that the recursion reaches its base case for these arguments "
                          "(recursion on traced data needs its base case first), or rewrite it as a loop")
    if isinstance(e, MemoryError):
        return PullbackError(f"out of memory{': ' + str(e) if str(e) else ''}", loc=loc,
                             hint="the arrays this call needs do not fit in memory; use smaller inputs")
    if type(e).__name__ == "LinAlgError":  # numpy.linalg.LinAlgError, from LAPACK on these inputs
        return PullbackError(f"linear algebra error: {e}", loc=loc,
                             hint="the matrix is singular, not positive definite, or the routine did not "
                                  "converge for these inputs (as in NumPy); check the inputs")
    if isinstance(e, OverflowError):
        return PullbackError(f"a number does not fit in 64 bits: {e}", loc=loc,
                             hint="integer arguments must lie in [-2**63, 2**63); pass large values as floats")
    return InternalError(f"internal error in pullback: {type(e).__name__}: {e}", loc=loc,
                         hint="this is a bug in pullback; please report it with your program "
                              "(set PULLBACK_DEBUG=1 to see the internal traceback)")


def debugging() -> bool:
    """True when ``$PULLBACK_DEBUG`` asks for internal exceptions to propagate unchanged."""
    return bool(os.environ.get("PULLBACK_DEBUG"))
