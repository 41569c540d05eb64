"""Pretty printer for the IR: a compact, readable text form that `ir.parser` reads back.

Contract: ``parse_prog(print_prog(p)) == p`` for every well-scoped program `p`
(dataclass equality; `SrcLoc`s are not part of it). `fingerprint(p)` is the
same text with large constants as digests: a cache key, not parseable. Syntax (braces delimit
bodies, so indentation is only for the reader)::

    entry def f(x: f64[3], n: i64) -> (f64) {
      let t: f64[3] = sin(x)
      let s: f64 = sum(t) {axes=(0,)}
      let acc: f64 = loop (acc_p: f64 = 0.0:f64) for i: i64 < n {
        let a2: f64 = add(acc_p, s)
        yield (a2)
      }
      let (y: f64, z: f64) = if c {
        yield (s, acc)
      } else {
        yield (acc, 1.5:f64)
      }
      let (s2: store<f64[3]>, v: f64[3]) = store_pop(s1)
      let r: f64 = call g(y, z)
      let w: f64[2,2] = add(const f64[2,2] [[1.0, 2.0], [3.0, 4.0]], x)
      return (r)
    }

- Every variable carries its type where it is bound (lets, parameters, loop
  parameters and index); uses are bare names.
- Scalar constants are ``value:dtype`` (``1.5:f64``, ``3:i64``, ``true:bool``,
  ``inf:f64``, ``-inf:f64``); array constants are ``const TYPE NESTED-LIST``.
  Floats are written with `repr`, so they read back exactly.
- Primitive params are ``{k=v, ...}`` with Python-literal values (numbers,
  strings, True/False/None, nested tuples) and types (``elem=f64[3]``).
- ``loop (...) while c { ... }`` is a while loop whose condition is parameter `c`.
- ``donate(i->j, ...)`` after a function's result types lists `Func.donated`;
  ``rules(jvp=g, vjp=h)`` lists `Func.rules` (user-defined derivative rules).
- The entry function is marked ``entry``. When the entry names no function, a
  line ``entry NAME`` says so.
- With ``locs=True`` a statement's `SrcLoc` is shown as a trailing comment
  (the parser skips comments).
"""
from __future__ import annotations

import hashlib
import math

import numpy as np

from ..errors import IRError
from .core import Apply, Body, Const, ForForm, Func, If, Lambda, Let, Loop, Map, Prim, Prog, Var, WhileForm
from .types import StoreType, TensorType

INDENT = "  "


def print_type(t) -> str:
    if isinstance(t, (TensorType, StoreType)):
        return str(t)
    raise IRError(f"cannot print type {t!r}")


def _name(n: str) -> str:
    if not isinstance(n, str) or not n.isidentifier():
        raise IRError(f"cannot print name {n!r}: not an identifier")
    return n


def _scalar(v, dtype: str) -> str:
    if dtype == "bool":
        return "true" if bool(v) else "false"
    if dtype == "i64":
        return str(int(v))
    return _float(v)


def _float(v) -> str:
    """A float literal that reads back exactly (nan, inf, -inf included)."""
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(v)


def _nested(a: np.ndarray, dtype: str) -> str:
    if a.ndim == 0:
        return _scalar(a.item(), dtype)
    return "[" + ", ".join(_nested(x, dtype) for x in a) + "]"


def print_atom(a) -> str:
    if isinstance(a, Var):
        return _name(a.name)
    if isinstance(a, Const):
        t = a.type
        if t.shape:
            return f"const {t} {_nested(np.asarray(a.value), t.dtype)}"
        return f"{_scalar(a.value, t.dtype)}:{t.dtype}"
    raise IRError(f"not an atom: {a!r}")


def print_param_value(v) -> str:
    if v is None or isinstance(v, bool):
        return repr(v)
    if isinstance(v, (np.bool_,)):
        return repr(bool(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return _float(v)
    if isinstance(v, str):
        return repr(v)
    if isinstance(v, (tuple, list)):
        items = [print_param_value(x) for x in v]
        if len(items) == 1:
            return f"({items[0]},)"
        return "(" + ", ".join(items) + ")"
    if isinstance(v, (TensorType, StoreType)):
        return str(v)
    raise IRError(f"cannot print param value {v!r} of type {type(v).__name__}")


def print_params(params) -> str:
    if not params:
        return ""
    return " {" + ", ".join(f"{_name(k)}={print_param_value(v)}" for k, v in params) + "}"


def _binder(v: Var) -> str:
    return f"{_name(v.name)}: {print_type(v.type)}"


def _atoms(xs, atom=print_atom) -> str:
    return "(" + ", ".join(atom(a) for a in xs) + ")"


DIGEST_MIN = 64   # array constants with more elements are hashed, not printed, by `fingerprint`


def _digest_atom(a) -> str:
    if isinstance(a, Const) and a.type.shape:
        v = np.ascontiguousarray(np.asarray(a.value))
        if v.size > DIGEST_MIN:
            h = hashlib.sha256(f"{v.dtype.str}{v.shape}".encode() + v.tobytes()).hexdigest()
            return f"const {a.type} sha256:{h}"
    return print_atom(a)


class _Printer:
    def __init__(self, locs: bool, atom=print_atom):
        self.locs = locs
        self.atom = atom
        self.lines: list[str] = []

    def emit(self, depth: int, text: str) -> None:
        self.lines.append(INDENT * depth + text)

    def body(self, body: Body, depth: int, keyword: str) -> None:
        for st in body.stmts:
            self.let(st, depth)
        self.emit(depth, f"{keyword} {_atoms(body.result, self.atom)}")

    def let(self, st: Let, depth: int) -> None:
        if len(st.pat) == 1:
            pat = _binder(st.pat[0])
        else:
            pat = "(" + ", ".join(_binder(v) for v in st.pat) + ")"
        head = f"let {pat} = "
        tail = f"  # {st.loc}" if self.locs and st.loc is not None else ""
        e = st.exp
        if isinstance(e, Prim):
            self.emit(depth, head + f"{_name(e.op)}{_atoms(e.args, self.atom)}{print_params(e.params)}" + tail)
        elif isinstance(e, Apply):
            self.emit(depth, head + f"call {_name(e.func)}{_atoms(e.args, self.atom)}" + tail)
        elif isinstance(e, If):
            self.emit(depth, head + f"if {self.atom(e.cond)} {{" + tail)
            self.body(e.then, depth + 1, "yield")
            self.emit(depth, "} else {")
            self.body(e.else_, depth + 1, "yield")
            self.emit(depth, "}")
        elif isinstance(e, Loop):
            if len(e.params) != len(e.init):
                raise IRError("loop: params and init differ in length")
            ps = ", ".join(f"{_binder(p)} = {self.atom(a)}" for p, a in zip(e.params, e.init))
            if isinstance(e.form, ForForm):
                form = f"for {_binder(e.form.index)} < {self.atom(e.form.bound)}"
            elif isinstance(e.form, WhileForm):
                form = f"while {_name(e.form.cond.name)}"
            else:
                raise IRError(f"unknown loop form {e.form!r}")
            self.emit(depth, head + f"loop ({ps}) {form} {{" + tail)
            self.body(e.body, depth + 1, "yield")
            self.emit(depth, "}")
        elif isinstance(e, Map):
            self.emit(depth, head + _map_head(e, self.atom) + " {" + tail)
            self.body(e.lam.body, depth + 1, "yield")
            self.emit(depth, "}")
        else:
            raise IRError(f"cannot print expression {type(e).__name__}")

    def func(self, f: Func, entry: bool) -> None:
        ps = ", ".join(_binder(p) for p in f.params)
        rs = ", ".join(print_type(t) for t in f.ret_types)
        mark = "entry " if entry else ""
        tail = f"  # {f.loc}" if self.locs and f.loc is not None else ""
        don = (" donate(" + ", ".join(f"{i}->{j}" for i, j in f.donated) + ")") if f.donated else ""
        rules = (" rules(" + ", ".join(f"{_name(k)}={_name(g)}" for k, g in f.rules) + ")") if f.rules else ""
        self.emit(0, f"{mark}def {_name(f.name)}({ps}) -> ({rs}){don}{rules} {{" + tail)
        self.body(f.body, 1, "return")
        self.emit(0, "}")


def _map_head(e: Map, atom=print_atom) -> str:
    """`map [i: i64 < n] (x: f64 <- xs, ...) acc (a: f64[3] = a0, ...)`."""
    if len(e.lam.params) != 1 + len(e.arrays) + len(e.accs):
        raise IRError("map: lambda parameters do not match its arrays and accumulators")
    els = ", ".join(f"{_binder(p)} <- {atom(a)}" for p, a in zip(e.elems, e.arrays))
    head = f"map [{_binder(e.index)} < {atom(e.width)}] ({els})"
    if e.accs:
        head += " acc (" + ", ".join(f"{_binder(p)} = {atom(a)}" for p, a in zip(e.acc_params, e.accs)) + ")"
    return head


def print_body(body: Body, depth: int = 0, locs: bool = False) -> str:
    p = _Printer(locs)
    p.body(body, depth, "yield")
    return "\n".join(p.lines) + "\n"


def print_func(f: Func, entry: bool = False, locs: bool = False) -> str:
    p = _Printer(locs)
    p.func(f, entry)
    return "\n".join(p.lines) + "\n"


def print_prog(prog: Prog, locs: bool = False) -> str:
    return _print_prog(prog, _Printer(locs))


def _print_prog(prog: Prog, p: _Printer) -> str:
    names = [f.name for f in prog.funcs]
    if prog.entry not in names:
        p.emit(0, f"entry {_name(prog.entry)}")
    for i, f in enumerate(prog.funcs):
        if i or prog.entry not in names:
            p.lines.append("")
        p.func(f, f.name == prog.entry and names.index(f.name) == i)
    return "\n".join(p.lines) + "\n"


def fingerprint(prog: Prog) -> str:
    """`print_prog(prog)` with each array constant of more than `DIGEST_MIN`
    elements written as the sha256 of its dtype, shape and bytes: a cache key
    (equal programs, equal text; different constants, different text), not
    parseable. Printing a large constant element by element took seconds
    (llsq's 200000-element constant, printed at each use: 1.1-2.5 s of a
    cold compile)."""
    return _print_prog(prog, _Printer(False, _digest_atom))


def print_exp(e) -> str:
    """One expression on one line (sub-bodies elided); for error messages."""
    if isinstance(e, Prim):
        return f"{e.op}{_atoms(e.args)}{print_params(e.params)}"
    if isinstance(e, Apply):
        return f"call {e.func}{_atoms(e.args)}"
    if isinstance(e, If):
        return f"if {print_atom(e.cond)} {{...}} else {{...}}"
    if isinstance(e, Loop):
        form = (f"for {e.form.index.name} < {print_atom(e.form.bound)}" if isinstance(e.form, ForForm)
                else f"while {e.form.cond.name}")
        return f"loop ({', '.join(p.name for p in e.params)}) {form} {{...}}"
    if isinstance(e, Map):
        return _map_head(e) + " {...}"
    return type(e).__name__


def print_let(st: Let) -> str:
    """A statement on one line (sub-bodies elided); for error messages."""
    pat = ", ".join(_binder(v) for v in st.pat)
    return f"let ({pat}) = {print_exp(st.exp)}"
