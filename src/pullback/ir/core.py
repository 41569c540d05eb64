"""Core IR datatypes: typed A-normal form with ifs, loops, calls.

Contract:
- A `Body` is a sequence of `Let` statements followed by result atoms.
- Every operand is an `Atom`: a `Var` or a `Const`.
- Variables are bound exactly once in a function (SSA); passes that copy code
  rename it (see `ir.traverse.rename_body`).
- The IR is purely functional: an update produces a new array. Backends may
  update in place when the old array is dead.
- Expressions: `Prim` (a row of the primitive table), `If`, `Loop` (`ForForm`
  or `WhileForm`), `Apply` (call of a named function of the `Prog`,
  recursion allowed), `Map` (the parallel combinator, holding a `Lambda`;
  note [combinators] in docs/design.md). Passes dispatch on the class.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

import numpy as np

from .types import TensorType, Type


@dataclass(frozen=True)
class SrcLoc:
    """Where in the user's source a statement came from."""

    file: str
    line: int
    text: str = ""
    role: str = ""   # "" for primal code; "adjoint" for return-sweep code (provenance comments)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True, eq=True)
class Var:
    name: str
    type: Type

    def __str__(self) -> str:
        return self.name

    def __hash__(self) -> int:
        # the passes key most of their maps on variables: the hash of (name, type) is
        # computed once (not a field, so equality and `dataclasses.replace` ignore it)
        try:
            return self._h
        except AttributeError:
            h = hash((self.name, self.type))
            object.__setattr__(self, "_h", h)
            return h


class Const:
    """A constant: a Python scalar, or a NumPy array (`type` gives its shape)."""

    __slots__ = ("value", "type")

    def __init__(self, value, type: TensorType):
        if type.shape:
            value = np.asarray(value, dtype=_np_dtype(type.dtype))
            value.setflags(write=False)
        else:
            value = {"f64": float, "f32": float, "i64": int, "bool": bool}[type.dtype](value)
        self.value = value
        self.type = type

    def _key(self):
        # compare bit patterns, so NaN equals NaN and 0.0 differs from -0.0
        return (self.type, np.asarray(self.value).tobytes())

    def __eq__(self, other):
        return isinstance(other, Const) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"Const({self.value!r}, {self.type})"


def _np_dtype(d):
    from .types import np_dtype

    return np_dtype(d)


Atom = Union[Var, Const]


@dataclass(frozen=True)
class Prim:
    """Apply primitive `op` (a row of `ir.prims.TABLE`) to atoms.

    `params` is a tuple of (key, value) pairs with hashable values.
    """

    op: str
    args: tuple[Atom, ...]
    params: tuple[tuple[str, Any], ...] = ()

    @property
    def p(self) -> dict:
        return dict(self.params)


@dataclass(frozen=True)
class Body:
    stmts: tuple["Let", ...]
    result: tuple[Atom, ...]


@dataclass(frozen=True)
class If:
    cond: Atom
    then: Body
    else_: Body


@dataclass(frozen=True)
class ForForm:
    """`for index < bound`: index runs 0, 1, ..., bound-1."""

    index: Var
    bound: Atom


@dataclass(frozen=True)
class WhileForm:
    """`while cond`: `cond` is one of the loop parameters (a bool).

    The body computes the condition for the next iteration, as in Futhark.
    """

    cond: Var


@dataclass(frozen=True)
class Loop:
    """Loop-carried `params` start as `init`; the body returns their next values.

    `sums`: the params that reverse mode made to carry sums of adjoint
    contributions (a return sweep's adjoints of free variables); a backend may
    reassociate the additions into them (note [adjoint-reassoc]). A rebuilt
    loop may drop the mark (it is only an allowance), never add it.
    """

    params: tuple[Var, ...]
    init: tuple[Atom, ...]
    form: Union[ForForm, WhileForm]
    body: Body
    sums: frozenset = frozenset()


@dataclass(frozen=True)
class Apply:
    """Call of the function `func` of the program."""

    func: str
    args: tuple[Atom, ...]


@dataclass(frozen=True)
class Lambda:
    """An anonymous function inside an expression: `params` are bound in `body`."""

    params: tuple[Var, ...]
    body: Body


@dataclass(frozen=True)
class Map:
    """`map` over the leading axis (note [combinators]): `width` (an i64 `Const`,
    shapes being static) iterations,
    each independent of the others but for the accumulators.

    `lam.params` are: the iteration index (i64), then one element per array
    of `arrays` (each array has leading dimension `width`; the element is
    `array[i]`), then one per accumulator of `accs`. `lam.body` returns the
    iteration's results, then the new value of each accumulator. The
    statement binds the results stacked into arrays of leading dimension
    `width`, then the final accumulators.

    Accumulators are made by reverse mode and by `pb.hist` with `+`: the body
    may change one only by adding to it (`add`, `index_update` with mode
    "add", `take_add`), so the iterations may run in any order, or in parallel
    on private partial sums that are added at the end.
    """

    width: Atom
    arrays: tuple[Atom, ...]
    accs: tuple[Atom, ...]
    lam: Lambda

    @property
    def index(self) -> Var:
        return self.lam.params[0]

    @property
    def elems(self) -> tuple[Var, ...]:
        return self.lam.params[1:1 + len(self.arrays)]

    @property
    def acc_params(self) -> tuple[Var, ...]:
        return self.lam.params[1 + len(self.arrays):]

    @property
    def n_out(self) -> int:
        """How many stacked results (the rest of the body's results are accumulators)."""
        return len(self.lam.body.result) - len(self.accs)


Exp = Union[Prim, If, Loop, Apply, Map]


@dataclass(frozen=True)
class Let:
    pat: tuple[Var, ...]
    exp: Exp
    loc: SrcLoc | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Func:
    """A function. `donated` lists (param index, result index) pairs: the caller
    gives up the array it passes for that parameter, the function may update
    it in place and returns it as that result (split mode's adjoint
    accumulators, note [split-calls]). Backends copy an argument the caller
    still needs.

    `rules` names user-given derivative rules, each a function of the program
    (`pb.custom_jvp` / `pb.custom_vjp`, note [custom-rules]): ("jvp", g) means
    `g` has the jvp contract of `passes.jvp` for this function and forward mode
    calls it instead of differentiating the body; ("vjp", g) means `g` has the
    vjp contract of `passes.vjp` and reverse mode calls it. The body stays the
    primal."""

    name: str
    params: tuple[Var, ...]
    body: Body
    ret_types: tuple[Type, ...]
    loc: SrcLoc | None = field(default=None, compare=False)
    donated: tuple[tuple[int, int], ...] = ()
    rules: tuple[tuple[str, str], ...] = ()

    def rule(self, kind: str) -> str | None:
        """The name of the function giving this function's `kind` ("jvp"/"vjp") rule, or None."""
        for k, g in self.rules:
            if k == kind:
                return g
        return None


@dataclass(frozen=True)
class Prog:
    """A program: named functions, and the name of the entry function."""

    funcs: tuple[Func, ...]
    entry: str

    def __hash__(self):
        # backends key their compiled-code caches on the program: hash it once
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash((self.funcs, self.entry))
            object.__setattr__(self, "_hash", h)
        return h

    def func(self, name: str) -> Func:
        for f in self.funcs:
            if f.name == name:
                return f
        raise KeyError(name)

    @property
    def main(self) -> Func:
        return self.func(self.entry)

    def with_funcs(self, funcs, entry=None) -> "Prog":
        return Prog(tuple(funcs), entry or self.entry)
