"""User-facing errors.

Contract: every error that reaches a user is a `PullbackError` that names the
user's file and line (when known) and says what to do instead. Internal code
raises these without a location; the frontend attaches one (`with_loc`).
"""
from __future__ import annotations


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
