"""Parser for the text form written by `ir.printer`.

Contract: ``parse_prog(print_prog(p)) == p``. `parse_prog(text) -> Prog`,
`parse_func(text) -> Func` (one function), `parse_type(text)`. Malformed input
raises `pullback.errors.IRError` naming the line (and column) of the text.
Uses of undeclared variables are errors: every used name must be bound
earlier in an enclosing body or be a parameter. Newlines are not significant;
``#`` starts a comment.
"""
from __future__ import annotations

import ast
import re

import numpy as np

from ..errors import IRError
from .core import Apply, Body, Const, ForForm, Func, If, Lambda, Let, Loop, Map, Prim, Prog, Var, WhileForm
from .types import DTYPES, StoreType, TensorType

_TOKEN = re.compile(
    r"""
    (?P<ws>[ \t\r]+)
  | (?P<nl>\n)
  | (?P<comment>\#[^\n]*)
  | (?P<arrow>->)
  | (?P<num>-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
  | (?P<name>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<str>'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")
  | (?P<punct>[()\[\]{},:=<>-])
    """,
    re.VERBOSE,
)


class Tok:
    __slots__ = ("kind", "text", "line", "col")

    def __init__(self, kind, text, line, col):
        self.kind, self.text, self.line, self.col = kind, text, line, col

    def __repr__(self):
        return f"{self.kind}:{self.text!r}@{self.line}"


def tokenize(text: str) -> list[Tok]:
    toks = []
    pos, line, lstart = 0, 1, 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise IRError(f"line {line}, column {pos - lstart + 1}: unexpected character {text[pos]!r}")
        kind = m.lastgroup
        if kind == "nl":
            line += 1
            lstart = m.end()
        elif kind not in ("ws", "comment"):
            toks.append(Tok(kind, m.group(), line, pos - lstart + 1))
        pos = m.end()
    toks.append(Tok("eof", "", line, pos - lstart + 1))
    return toks


_SCALAR_WORDS = ("true", "false", "inf", "nan")


class _Parser:
    def __init__(self, text: str):
        self.toks = tokenize(text)
        self.i = 0

    # -- token helpers ------------------------------------------------------
    @property
    def tok(self) -> Tok:
        return self.toks[self.i]

    def peek(self, k: int = 1) -> Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def error(self, msg: str, tok: Tok | None = None):
        t = tok or self.tok
        got = "end of input" if t.kind == "eof" else repr(t.text)
        return IRError(f"line {t.line}, column {t.col}: {msg} (got {got})")

    def at(self, text: str) -> bool:
        return self.tok.text == text and self.tok.kind in ("punct", "name", "arrow")

    def take(self, text: str) -> Tok:
        if not self.at(text):
            raise self.error(f"expected {text!r}")
        t = self.tok
        self.i += 1
        return t

    def name(self, what: str = "a name") -> str:
        if self.tok.kind != "name":
            raise self.error(f"expected {what}")
        t = self.tok
        self.i += 1
        return t.text

    # -- types ----------------------------------------------------------------
    def type_(self):
        t = self.tok
        n = self.name("a type")
        if n == "store":
            self.take("<")
            elem = self.type_()
            self.take(">")
            return StoreType(elem)  # a store of stores: derivative code differentiated again
        if n not in DTYPES:
            raise self.error(f"unknown type {n!r}", t)
        shape = []
        if self.at("["):
            self.i += 1
            while not self.at("]"):
                if self.tok.kind != "num" or not self.tok.text.isdigit():
                    raise self.error("expected a dimension")
                shape.append(int(self.tok.text))
                self.i += 1
                if not self.at("]"):
                    self.take(",")
            self.take("]")
        return TensorType(n, tuple(shape))

    # -- constants ------------------------------------------------------------
    def _scalar_text(self) -> tuple[str, Tok]:
        """One scalar literal's text: a number, true/false/inf/nan, or -inf/-nan."""
        t = self.tok
        if t.kind == "num":
            self.i += 1
            return t.text, t
        if self.at("-") and self.peek().kind == "name" and self.peek().text in ("inf", "nan"):
            self.i += 2
            return "-" + self.peek(-1).text, t
        if t.kind == "name" and t.text in _SCALAR_WORDS:
            self.i += 1
            return t.text, t
        raise self.error("expected a number")

    def _convert(self, s: str, dtype: str, tok: Tok):
        try:
            if dtype == "bool":
                if s not in ("true", "false"):
                    raise ValueError
                return s == "true"
            if dtype == "i64":
                return int(s)
            return float(s)
        except ValueError:
            raise self.error(f"{s!r} is not a {dtype} value", tok) from None

    def _nested(self, dtype: str, out: list):
        if self.at("["):
            self.i += 1
            while not self.at("]"):
                self._nested(dtype, out)
                if not self.at("]"):
                    self.take(",")
            self.take("]")
        else:
            s, t = self._scalar_text()
            out.append(self._convert(s, dtype, t))

    def array_const(self) -> Const:
        t0 = self.take("const")
        t = self.type_()
        if not isinstance(t, TensorType):
            raise self.error("constants are tensors", t0)
        vals: list = []
        self._nested(t.dtype, vals)
        if len(vals) != t.size:
            raise self.error(f"constant of type {t} has {len(vals)} elements", t0)
        from .types import np_dtype

        arr = np.array(vals, dtype=np_dtype(t.dtype)).reshape(t.shape)
        return Const(arr, t)

    # -- atoms ----------------------------------------------------------------
    def atom(self, env: dict):
        t = self.tok
        if t.kind == "name" and t.text == "const" and self.peek().kind == "name" and self.peek(2).text != ":":
            return self.array_const()
        is_lit = t.kind == "num" or (self.at("-") and self.peek().text in ("inf", "nan")) or (
            t.kind == "name" and t.text in _SCALAR_WORDS and self.peek().text == ":"
        )
        if is_lit:
            s, st = self._scalar_text()
            self.take(":")
            ty = self.type_()
            if not isinstance(ty, TensorType) or ty.shape:
                raise self.error("a scalar constant needs a scalar type", st)
            return Const(self._convert(s, ty.dtype, st), ty)
        if t.kind == "name":
            self.i += 1
            v = env.get(t.text)
            if v is None:
                raise self.error(f"undefined variable {t.text!r}", t)
            return v
        raise self.error("expected a variable or constant")

    def atoms(self, env: dict) -> tuple:
        self.take("(")
        out = []
        while not self.at(")"):
            out.append(self.atom(env))
            if not self.at(")"):
                self.take(",")
        self.take(")")
        return tuple(out)

    # -- param values -----------------------------------------------------------
    def value(self):
        t = self.tok
        if t.kind == "str":
            self.i += 1
            return ast.literal_eval(t.text)
        if t.kind == "num":
            self.i += 1
            return float(t.text) if any(ch in t.text for ch in ".eE") else int(t.text)
        if self.at("-") and self.peek().text in ("inf", "nan"):
            self.i += 2
            return float("-" + self.peek(-1).text)
        if self.at("("):
            self.i += 1
            items = []
            trailing = False
            while not self.at(")"):
                items.append(self.value())
                trailing = False
                if not self.at(")"):
                    self.take(",")
                    trailing = True
            self.take(")")
            if len(items) == 1 and not trailing:
                raise self.error("a one-element tuple needs a trailing comma", t)
            return tuple(items)
        if t.kind == "name":
            if t.text in ("True", "False", "None"):
                self.i += 1
                return {"True": True, "False": False, "None": None}[t.text]
            if t.text in ("inf", "nan"):
                self.i += 1
                return float(t.text)
            if t.text in DTYPES or t.text == "store":
                return self.type_()
        raise self.error("expected a parameter value")

    def params(self) -> tuple:
        if not self.at("{"):
            return ()
        self.i += 1
        out = []
        while not self.at("}"):
            k = self.name("a parameter name")
            self.take("=")
            out.append((k, self.value()))
            if not self.at("}"):
                self.take(",")
        self.take("}")
        return tuple(out)

    # -- statements -------------------------------------------------------------
    def binder(self) -> Var:
        n = self.name("a variable name")
        self.take(":")
        return Var(n, self.type_())

    def pattern(self) -> tuple:
        if self.at("("):
            self.i += 1
            out = []
            while not self.at(")"):
                out.append(self.binder())
                if not self.at(")"):
                    self.take(",")
            self.take(")")
            return tuple(out)
        return (self.binder(),)

    def _is_loop(self) -> bool:
        # `loop (...) for|while`, as opposed to a primitive named `loop`
        if not (self.at("loop") and self.peek().text == "("):
            return False
        depth, k = 0, 1
        while True:
            t = self.peek(k)
            if t.kind == "eof":
                return False
            if t.text == "(":
                depth += 1
            elif t.text == ")":
                depth -= 1
                if depth == 0:
                    return self.peek(k + 1).text in ("for", "while")
            k += 1

    def exp(self, env: dict):
        t = self.tok
        if t.kind != "name":
            raise self.error("expected an expression")
        if t.text == "if" and self.peek().text != "(":
            self.i += 1
            cond = self.atom(env)
            then = self.block(dict(env))
            self.take("else")
            else_ = self.block(dict(env))
            return If(cond, then, else_)
        if self._is_loop():
            self.i += 1
            self.take("(")
            params, init = [], []
            inner = dict(env)
            while not self.at(")"):
                p = self.binder()
                self.take("=")
                init.append(self.atom(env))
                params.append(p)
                if not self.at(")"):
                    self.take(",")
            self.take(")")
            for p in params:
                inner[p.name] = p
            if self.at("for"):
                self.i += 1
                idx = self.binder()
                self.take("<")
                bound = self.atom(env)
                inner[idx.name] = idx
                form = ForForm(idx, bound)
            else:
                self.take("while")
                ct = self.tok
                cname = self.name("the condition parameter")
                cands = [p for p in params if p.name == cname]
                if not cands:
                    raise self.error(f"while condition {cname!r} is not a loop parameter", ct)
                form = WhileForm(cands[0])
            body = self.block(inner)
            return Loop(tuple(params), tuple(init), form, body)
        if t.text == "map" and self.peek().text == "[":
            return self._map(env)
        if t.text == "call" and self.peek().kind == "name":
            self.i += 1
            fname = self.name("a function name")
            return Apply(fname, self.atoms(env))
        self.i += 1
        args = self.atoms(env)
        return Prim(t.text, args, self.params())

    def _map(self, env: dict) -> Map:
        """`map [i: i64 < n] (x: T <- xs, ...) acc (a: T = a0, ...) { body }`."""
        self.i += 1
        self.take("[")
        idx = self.binder()
        self.take("<")
        width = self.atom(env)
        self.take("]")
        inner = dict(env)
        inner[idx.name] = idx
        elems, arrays, accp, accs = [], [], [], []
        self.take("(")
        while not self.at(")"):
            elems.append(self.binder())
            self.take("<")
            self.take("-")
            arrays.append(self.atom(env))
            if not self.at(")"):
                self.take(",")
        self.take(")")
        if self.at("acc"):
            self.i += 1
            self.take("(")
            while not self.at(")"):
                accp.append(self.binder())
                self.take("=")
                accs.append(self.atom(env))
                if not self.at(")"):
                    self.take(",")
            self.take(")")
        for p in elems + accp:
            inner[p.name] = p
        body = self.block(inner)
        return Map(width, tuple(arrays), tuple(accs), Lambda((idx,) + tuple(elems) + tuple(accp), body))

    def block(self, env: dict) -> Body:
        self.take("{")
        body = self.body(env, "yield")
        self.take("}")
        return body

    def body(self, env: dict, keyword: str) -> Body:
        stmts = []
        while self.at("let"):
            self.i += 1
            pat = self.pattern()
            self.take("=")
            e = self.exp(env)
            for v in pat:
                env[v.name] = v
            stmts.append(Let(pat, e))
        if not self.at(keyword):
            raise self.error(f"expected 'let' or '{keyword}'")
        self.i += 1
        return Body(tuple(stmts), self.atoms(env))

    def func(self) -> tuple[Func, bool]:
        entry = False
        if self.at("entry"):
            self.i += 1
            entry = True
        self.take("def")
        name = self.name("a function name")
        self.take("(")
        params = []
        while not self.at(")"):
            params.append(self.binder())
            if not self.at(")"):
                self.take(",")
        self.take(")")
        self.take("->")
        self.take("(")
        rets = []
        while not self.at(")"):
            rets.append(self.type_())
            if not self.at(")"):
                self.take(",")
        self.take(")")
        donated = []
        if self.at("donate"):
            self.i += 1
            self.take("(")
            while not self.at(")"):
                i = self._int()
                self.take("->")
                donated.append((i, self._int()))
                if not self.at(")"):
                    self.take(",")
            self.take(")")
        rules = []
        if self.at("rules"):
            self.i += 1
            self.take("(")
            while not self.at(")"):
                kind = self.name("a rule kind")
                self.take("=")
                rules.append((kind, self.name("a rule function's name")))
                if not self.at(")"):
                    self.take(",")
            self.take(")")
        self.take("{")
        env = {p.name: p for p in params}
        body = self.body(env, "return")
        self.take("}")
        return Func(name, tuple(params), body, tuple(rets), donated=tuple(donated), rules=tuple(rules)), entry

    def _int(self) -> int:
        t = self.tok
        if t.kind != "num" or not t.text.isdigit():
            raise self.error("expected a parameter or result index")
        self.i += 1
        return int(t.text)

    def prog(self) -> Prog:
        funcs = []
        entry = None
        if self.at("entry") and self.peek().text != "def":
            self.i += 1
            entry = self.name("the entry function's name")
        while self.tok.kind != "eof":
            t = self.tok
            f, is_entry = self.func()
            if is_entry:
                if entry is not None:
                    raise self.error("two entry functions", t)
                entry = f.name
            funcs.append(f)
        if entry is None:
            if len(funcs) == 1:
                entry = funcs[0].name
            else:
                raise IRError("no entry function: mark one with 'entry def'")
        return Prog(tuple(funcs), entry)


def parse_prog(text: str) -> Prog:
    return _Parser(text).prog()


def parse_func(text: str) -> Func:
    p = _Parser(text)
    f, _ = p.func()
    if p.tok.kind != "eof":
        raise p.error("expected end of input after the function")
    return f


def parse_type(text: str):
    p = _Parser(text)
    t = p.type_()
    if p.tok.kind != "eof":
        raise p.error("expected end of input after the type")
    return t


parse = parse_prog
