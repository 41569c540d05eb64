"""Declarative input schemas for the GradBench modules, and the server's limits.

Contract: `Schema.validate(inp, limits)` takes the decoded "input" object of an
"evaluate" message and either returns a dict of checked, converted values
(Python ints and floats for scalar fields, C-contiguous float64 NumPy arrays of
the declared shapes for array fields, plus every size symbol under its name) or
raises `InputError`, a `PullbackError` whose message names the field
("input.mu[2]") and says what is wrong and what was expected. It never raises
anything else and never allocates more than the input already holds before the
sizes are checked against `limits.max_elements`.

A schema is a list of fields, each a `Int`, `Float` or `Array` spec, checked in
order. Array dimensions are written as size symbols: ``"k"`` (binds or checks
the symbol k), ``"2*L"`` (a multiple of a symbol: binds L to the length / 2),
an int literal, or a `Derived` size computed from symbols already bound. A
symbol is bound by an `Int` field of the same name or by the first array
that mentions it, and every later use must agree (an Int field with a default
binds it to the default when missing). `sizes` gives each symbol's
bounds; `elements` says how many float64 elements the computation needs for
the bound sizes (its arrays and reverse-mode tape), the number checked against
the limit. See Note [gradbench-hardening] in docs/design.md.
"""
from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass

import numpy as np

from ..errors import PullbackError


class InputError(PullbackError):
    """A GradBench message or input does not fit the protocol or the module's schema."""


def show(v, limit: int = 60) -> str:
    """A short repr of a user-supplied value for an error message."""
    try:
        text = repr(v)
    except Exception:  # noqa: BLE001 - e.g. an int too large for repr
        text = f"<{type(v).__name__}>"
    return text if len(text) <= limit else text[:limit] + "..."


def json_type(v) -> str:
    """The JSON name of a decoded value's type, for error messages."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int):
        return "an integer"
    if isinstance(v, float):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__


# --- limits -------------------------------------------------------------------------------------

def _env_int(name: str, default: int) -> int:
    text = os.environ.get(name)
    if not text:
        return default
    try:
        value = int(text)
        if value < 1:
            raise ValueError
    except ValueError:
        print(f"pullback.gradbench: ignoring {name}={text!r} (not a positive integer); "
              f"using {default}", file=sys.stderr)
        return default
    return value


@dataclass(frozen=True)
class Limits:
    """What the server accepts. Defaults admit GradBench's largest default inputs.

    - max_line_bytes: longest message line (without its newline); longer lines
      are skipped unread and answered with an error ($PULLBACK_GRADBENCH_MAX_LINE_BYTES).
    - max_depth: deepest nesting of arrays and objects in a message.
    - max_elements: most float64 elements a request's sizes may imply
      ($PULLBACK_GRADBENCH_MAX_ELEMENTS; 2**30 elements is 8 GiB).
    - max_runs / max_seconds: bounds on "min_runs" and "min_seconds"; the timing
      loop also stops after max_runs runs.
    """
    max_line_bytes: int = 128 << 20
    max_depth: int = 32
    max_elements: int = 1 << 30
    max_runs: int = 1_000_000
    max_seconds: float = 3600.0

    @classmethod
    def from_env(cls) -> Limits:
        return cls(max_line_bytes=_env_int("PULLBACK_GRADBENCH_MAX_LINE_BYTES", cls.max_line_bytes),
                   max_elements=_env_int("PULLBACK_GRADBENCH_MAX_ELEMENTS", cls.max_elements))


# --- field specs --------------------------------------------------------------------------------

_MISSING = object()


@dataclass(frozen=True)
class Int:
    """A JSON integer (not a boolean, not 3.0) in [min, max]."""
    name: str
    min: int = 0
    max: int = 1 << 62
    default: object = _MISSING
    why: str = ""

    def check(self, path, v):
        if isinstance(v, bool) or not isinstance(v, int):
            raise InputError(f"{path} must be an integer, got {json_type(v)} {show(v)}")
        if not self.min <= v <= self.max:
            want = f">= {self.min}" if self.max == Int.max else f"in [{self.min}, {self.max}]"
            why = f" ({self.why})" if self.why else ""
            raise InputError(f"{path} must be an integer {want}, got {show(v)}{why}")
        return v


@dataclass(frozen=True)
class Float:
    """A finite JSON number (integers allowed, booleans not) in [min, max]; `positive` excludes 0."""
    name: str
    min: float = -math.inf
    max: float = math.inf
    positive: bool = False
    default: object = _MISSING

    def check(self, path, v):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise InputError(f"{path} must be a number, got {json_type(v)} {show(v)}")
        try:
            f = float(v)
        except OverflowError:
            raise InputError(f"{path} is too large: {show(v)}") from None
        if not math.isfinite(f):
            raise InputError(f"{path} must be finite, got {show(v)}",
                             hint="NaN, Infinity and numbers beyond 1.8e308 are not accepted")
        if self.positive and not f > 0:
            raise InputError(f"{path} must be > 0, got {show(v)}")
        if not self.min <= f <= self.max:
            raise InputError(f"{path} must be in [{self.min:g}, {self.max:g}], got {show(v)}")
        return f


@dataclass(frozen=True)
class Derived:
    """A dimension computed from symbols bound earlier (by Int fields): `text` for messages."""
    text: str
    fn: object

    def __str__(self):
        return self.text


def _parse_dim(dim: str):
    """(coefficient, symbol) for "k" or "2*L"."""
    coef, _, sym = dim.rpartition("*")
    return (int(coef) if coef else 1), sym


@dataclass(frozen=True)
class Array:
    """A (nested) JSON array of finite numbers with the given dimensions (see the module docstring)."""
    name: str
    dims: tuple

    def __init__(self, name, *dims):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "dims", dims)

    def shape_text(self):
        return "(" + ", ".join(str(d) for d in self.dims) + ("," if len(self.dims) == 1 else "") + ")"


def _lengths(path, v, rank):
    """The shape of a rank-`rank` nested list of numbers, checking structure and leaf types."""
    if not isinstance(v, list):
        raise InputError(f"{path} must be {'an array' if rank == 1 else f'a {rank}-d array (a list of lists)'} "
                         f"of numbers, got {json_type(v)} {show(v)}")
    if rank == 1:
        kinds = set(map(type, v))
        if not kinds <= {int, float}:
            i = next(i for i, x in enumerate(v) if type(x) not in (int, float))
            raise InputError(f"{path}[{i}] must be a number, got {json_type(v[i])} {show(v[i])}")
        return (len(v),)
    inner = None
    for i, row in enumerate(v):
        if not isinstance(row, list):
            raise InputError(f"{path} must be a {rank}-d array (a list of lists) of numbers, but {path}[{i}] "
                             f"is {json_type(row)} {show(row)}")
        shape = _lengths(f"{path}[{i}]", row, rank - 1)
        if inner is None:
            inner = shape
        elif shape != inner:
            raise InputError(f"{path}[{i}] has shape {shape}, but {path}[0] has shape {inner}",
                             hint="rows of an array must all have the same length")
    if inner is None:  # an empty outer list: inner sizes are unknown, hence 0
        inner = (0,) * (rank - 1)
    return (len(v),) + inner


class Schema:
    """The input schema of one GradBench module (see the module docstring)."""

    def __init__(self, module: str, fields, sizes=None, elements=None):
        self.module = module
        self.fields = tuple(fields)
        self.sizes = dict(sizes or {})       # symbol -> (min, max)
        self.elements = elements            # (text, fn(sizes) -> int) or None

    def _bind(self, where, field, dim, length, bound, bound_by):
        coef, sym = _parse_dim(dim)
        if sym in bound:
            want = coef * bound[sym]
            if length != want:
                raise InputError(f"{where} has length {length}, expected {dim} = {want} "
                                 f"({sym} = {bound[sym]} from {bound_by[sym]})",
                                 hint=f"{field.name} must have shape {field.shape_text()}")
            return
        if length % coef:
            raise InputError(f"{where} has length {length}, which is not a multiple of {coef} ({dim})",
                             hint=f"{field.name} must have shape {field.shape_text()}")
        value = length // coef
        lo, hi = self.sizes.get(sym, (0, 1 << 62))
        if not lo <= value <= hi:
            want = f">= {lo}" if hi == 1 << 62 else f"in [{lo}, {hi}]"
            raise InputError(f"{where} has length {length}, so {sym} = {value}, but {sym} must be {want}",
                             hint=f"{field.name} must have shape {field.shape_text()}")
        bound[sym] = value
        bound_by[sym] = where

    def validate(self, inp, limits: Limits) -> dict:
        if not isinstance(inp, dict):
            raise InputError(f"\"input\" must be an object, got {json_type(inp)} {show(inp)}")
        out, bound, bound_by, arrays = {}, {}, {}, []
        for field in self.fields:
            path = f"input.{field.name}"
            v = inp.get(field.name, _MISSING)
            if v is _MISSING:
                if getattr(field, "default", _MISSING) is _MISSING:
                    raise InputError(f"{path} is missing",
                                     hint=f"a {self.module} input needs " + ", ".join(f.name for f in self.fields))
                out[field.name] = field.default
                if isinstance(field, Int):
                    bound[field.name] = field.default
                    bound_by[field.name] = f"the default of {path}"
                continue
            if isinstance(field, Array):
                shape = _lengths(path, v, len(field.dims))
                for axis, (dim, n) in enumerate(zip(field.dims, shape)):
                    where = path if len(shape) == 1 else f"{path} (axis {axis})"
                    if isinstance(dim, (int, Derived)):
                        want = dim.fn(bound) if isinstance(dim, Derived) else dim
                        if n != want:
                            raise InputError(f"{where} has length {n}, expected {dim} = {want}",
                                             hint=f"{field.name} must have shape {field.shape_text()}")
                    else:
                        self._bind(where, field, dim, n, bound, bound_by)
                arrays.append((field, path, v))
            else:
                out[field.name] = field.check(path, v)
                if isinstance(field, Int):  # an Int field is a size symbol too
                    bound[field.name] = out[field.name]
                    bound_by[field.name] = path
        for sym, (lo, hi) in self.sizes.items():
            if sym in bound and not lo <= bound[sym] <= hi:
                raise InputError(f"{self.module}: size {sym} = {bound[sym]} is out of range [{lo}, {hi}]")
        if self.elements is not None:
            text, fn = self.elements
            need = fn(bound)
            if need > limits.max_elements:
                raise InputError(f"{self.module}: these sizes need about {need} elements ({text} with "
                                 + ", ".join(f"{k} = {v}" for k, v in sorted(bound.items()))
                                 + f"), above the server's limit of {limits.max_elements}",
                                 hint="send a smaller input, or raise PULLBACK_GRADBENCH_MAX_ELEMENTS")
        for field, path, v in arrays:
            try:
                a = np.array(v, dtype=np.float64)
            except OverflowError:
                raise InputError(f"{path} holds an integer too large for a float64") from None
            if not np.isfinite(a).all():
                bad = tuple(int(i) for i in np.argwhere(~np.isfinite(a))[0])
                raise InputError(f"{path}{''.join(f'[{i}]' for i in bad)} is not finite ({float(a[bad])})",
                                 hint="NaN, Infinity and numbers beyond 1.8e308 are not accepted")
            out[field.name] = a
        out.update(bound)
        return out
