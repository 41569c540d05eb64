"""Readable Python/NumPy source from IR programs.

Contract:
- `emit_prog(prog, name_hints=True) -> str`: a Python module (``import numpy
  as np``) with one function per IR function. A function returns its single
  result, a tuple of several, or ``()`` for none. Statements read like
  hand-written NumPy (``t = np.sin(x)``, ``c = a @ b``, ``y = x[i, 1:3]``,
  ``a[i] = v``); control flow is ``if``/``for``/``while``; names come from the
  IR (made valid and clash-free; ``name_hints=False`` uses ``v0, v1, ...``).
  Statements with a `SrcLoc` get a provenance comment the first time their
  source line is reached (``# adjoint of f.py:12: ...`` for adjoint code).
- Results equal the interpreter's (`backends.interp`), value for value and
  dtype for dtype: each primitive is written as the expression its table
  `impl` evaluates.
- The IR is functional; the emitted code updates an array in place only when
  it owns it: it was made fresh by this function (never a parameter, constant
  or view), nothing aliases it, and it is dead after the update. Otherwise
  it copies first.
- Stores are the interpreter's `StoreValue`s (see `backends.runtime`), so they
  report to the same meter.
- `compile_prog(prog) -> callable`: the entry function, taking leaf values
  positionally and returning a list of results (the interpreter's convention).
  `run(prog, *args, fname=None, meter=None) -> list` compiles (cached) and runs.
"""
from __future__ import annotations

import builtins
import keyword
import linecache
import os
import sys
from collections import Counter

import numpy as np

from ..ir.core import Apply, Body, Const, ForForm, Func, If, Let, Loop, Prim, Prog, Var
from ..ir.types import StoreType, TensorType

# ---------------------------------------------------------------------------
# primitive forms
# ---------------------------------------------------------------------------

_NP_DTYPE = {"f64": "np.float64", "f32": "np.float32", "i64": "np.int64", "bool": "np.bool_"}

_UNARY_FN = {
    "sin": "np.sin", "cos": "np.cos", "tan": "np.tan", "exp": "np.exp", "log": "np.log",
    "log1p": "np.log1p", "expm1": "np.expm1", "sqrt": "np.sqrt", "tanh": "np.tanh",
    "abs": "np.abs", "sign": "np.sign", "floor": "np.floor", "ceil": "np.ceil",
    "round": "np.round", "isnan": "np.isnan", "not": "np.logical_not", "neg": "np.negative",
}
_BIN_OP = {
    "add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**", "mod": "%", "floordiv": "//",
    "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=",
    "and": "&", "or": "|", "xor": "^", "matmul": "@",
}
_BIN_FN = {
    "add": "np.add", "sub": "np.subtract", "mul": "np.multiply", "div": "np.true_divide",
    "pow": "np.power", "mod": "np.mod", "floordiv": "np.floor_divide", "lt": "np.less",
    "le": "np.less_equal", "gt": "np.greater", "ge": "np.greater_equal", "eq": "np.equal",
    "ne": "np.not_equal", "and": "np.logical_and", "or": "np.logical_or", "xor": "np.logical_xor",
    "maximum": "np.maximum", "minimum": "np.minimum", "atan2": "np.arctan2", "matmul": "np.matmul",
}
# binary prims whose impl casts the result to the promoted operand dtype
_CASTING = {"add", "sub", "mul", "pow", "mod", "floordiv", "maximum", "minimum", "atan2"}
_REDUCE = {"sum": "np.sum", "prod": "np.prod", "max": "np.max", "min": "np.min"}
_VIEW_OPS = {"reshape", "transpose", "broadcast_to"}
_STORE_OPS = {"store_new", "store_push", "store_pop", "store_zeros_like"}
KNOWN_PRIMS = (set(_UNARY_FN) | set(_BIN_OP) | set(_BIN_FN) | set(_REDUCE) | _VIEW_OPS | _STORE_OPS
               | {"logistic", "where", "cast", "index", "index_update", "take", "take_add", "concatenate",
                  "iota", "full", "argmax", "argmin"})

_RESERVED = set(keyword.kwlist) | set(keyword.softkwlist) | set(dir(builtins)) | {"np"}


def _ndim(a) -> int:
    t = a.type
    return t.ndim if isinstance(t, TensorType) else 0


def _aliasing_args(e: Prim) -> list:
    """Arguments whose array the result may share (views, store contents)."""
    op = e.op
    if op in _VIEW_OPS:
        return [e.args[0]]
    if op == "index":
        spec = e.p["spec"]
        x = e.args[0]
        n_out = _ndim(x) - sum(1 for s in spec if s[0] == "d")
        return [x] if spec and n_out > 0 else []
    if op == "take":
        return [e.args[0]] if _ndim(e.args[1]) == 0 and _ndim(e.args[0]) > 1 else []
    if op == "store_push":
        return [e.args[1]]
    if op not in KNOWN_PRIMS:
        return list(e.args)
    return []


def _fresh_result(e: Prim) -> bool:
    """Does the emitted expression always build a new, writeable array?"""
    return e.op in KNOWN_PRIMS and e.op not in _STORE_OPS and not _aliasing_args(e) and e.op not in _VIEW_OPS


# ---------------------------------------------------------------------------
# ownership analysis: which updates may be done in place
# ---------------------------------------------------------------------------


class _Ownership:
    """Decides, for one function, which `index_update`/`take_add` statements
    may update their input array in place (`inplace`, by `id(Let)`)."""

    def __init__(self, f: Func):
        from ..ir.traverse import exp_atoms, exp_scopes, iter_lets

        self.count: Counter = Counter()  # aliasing uses, all kinds
        self.base: Counter = Counter()   # aliasing uses other than loop inits / loop-body results
        self.inits: Counter = Counter()  # uses as a loop's initial value (the inner loop owns or copies it)
        # Slices of an array that is updated somewhere in the function, and slices
        # saved in a store (undo logs), are copied when read: copying the slice
        # lets the array itself be updated in place instead of copied whole.
        prims = [st for st in iter_lets(f.body) if isinstance(st.exp, Prim)]
        pushed = {st.exp.args[1] for st in prims if st.exp.op == "store_push"}
        updated = {st.exp.args[0] for st in prims if st.exp.op in ("index_update", "take_add")}
        self.copied: set = {st.pat[0] for st in prims
                            if st.exp.op == "index" and _aliasing_args(st.exp)
                            and (st.pat[0] in pushed or st.exp.args[0] in updated)}
        # those whose one use is a push: a store that copies on push (numba's buffers)
        # needs no copy of its own (`push_only`)
        uses: Counter = Counter()
        for st in iter_lets(f.body):
            uses.update(a for a in exp_atoms(st.exp) if isinstance(a, Var))
            for _, b in exp_scopes(st.exp):
                uses.update(a for a in b.result if isinstance(a, Var))
        uses.update(a for a in f.body.result if isinstance(a, Var))
        self.push_only: set = {v for v in self.copied if v in pushed and uses[v] == 1}
        for st in iter_lets(f.body):
            e = st.exp
            if isinstance(e, Prim):
                if e.op == "index" and st.pat[0] in self.copied:
                    continue
                for a in _aliasing_args(e):
                    self._use(a, True)
            elif isinstance(e, Apply):
                for a in e.args:
                    self._use(a, True)
            elif isinstance(e, If):
                for b in (e.then, e.else_):
                    for a in b.result:
                        self._use(a, True)
            elif isinstance(e, Loop):
                for a in e.init:
                    self._use(a, False)
                    if isinstance(a, Var):
                        self.inits[a] += 1
                for a in e.body.result:
                    self._use(a, False)
            else:
                for a in exp_atoms(e):
                    self._use(a, True)
                for _, b in exp_scopes(e):
                    for a in b.result:
                        self._use(a, True)
        self.owned: set = set()
        self.inplace: set = set()
        self.loop_owned: dict = {}  # id(Let of a Loop) -> set of owned param indices
        self.loop_copy: dict = {}   # id(Let of a Loop) -> owned params whose init is copied at entry
        self.body(f.body, ())

    def _use(self, a, base: bool):
        if isinstance(a, Var):
            self.count[a] += 1
            if base:
                self.base[a] += 1

    def body(self, body: Body, binders) -> None:
        from ..ir.traverse import exp_scopes, free_vars

        stmts = body.stmts
        last: dict = {}
        for k, st in enumerate(stmts):
            for v in free_vars(st.exp):
                last[v] = k
        for a in body.result:
            if isinstance(a, Var):
                last[a] = len(stmts)
        here = set(binders)
        for k, st in enumerate(stmts):
            e = st.exp
            if isinstance(e, Prim):
                if e.op in ("index_update", "take_add") and e.args and isinstance(e.args[0], Var):
                    x = e.args[0]
                    if (x in here and x in self.owned and self.count[x] == 0 and last.get(x) == k
                            and x not in e.args[1:] and _ndim(x) > 0):
                        self.inplace.add(id(st))
                if _fresh_result(e) or (e.op == "index" and st.pat and st.pat[0] in self.copied):
                    for v in st.pat:
                        if _ndim(v) > 0:
                            self.owned.add(v)
            elif isinstance(e, Loop):
                self.loop(st, k, last, here)
            elif isinstance(e, If):
                self.if_(st, k, last, here)
            else:
                for bs, b in exp_scopes(e):
                    self.body(b, bs)
            here.update(st.pat)

    def if_(self, st: Let, k: int, last: dict, here: set) -> None:
        """Arrays owned here that die at this `if` are owned inside its branches,
        and an `if` result is owned when each branch returns an array it owns
        (bound in the branch, or one of those dying arrays), all distinct."""
        e: If = st.exp
        dying = tuple(v for v in here if v in self.owned and self.count[v] == 0 and last.get(v) == k
                      and _ndim(v) > 0)
        ok = [True] * len(st.pat)
        for b in (e.then, e.else_):
            self.body(b, dying)
            inner = {v for s in b.stmts for v in s.pat} | set(dying)
            seen = set()
            for j, r in enumerate(b.result):
                if not (isinstance(r, Var) and r in inner and r in self.owned and r not in seen):
                    ok[j] = False
                if isinstance(r, Var):
                    seen.add(r)
        for j, v in enumerate(st.pat):
            if ok[j] and _ndim(v) > 0:
                self.owned.add(v)

    def loop(self, st: Let, k: int, last: dict, here: set) -> None:
        from ..ir.traverse import free_vars

        e: Loop = st.exp
        body_free = free_vars(e.body)
        res = e.body.result
        bound_in_body = {v for s in e.body.stmts for v in s.pat}
        cand = set()
        copy = set()   # params whose initial array is copied once at loop entry to own it
        for j, (p, x0) in enumerate(zip(e.params, e.init)):
            if _ndim(p) == 0 or j >= len(res):
                continue
            r = res[j]
            if not (isinstance(x0, Var) and x0 in here and x0 in self.owned and self.count[x0] == 1
                    and last.get(x0) == k and x0 not in body_free):
                if r == p:
                    continue
                copy.add(j)
            # a use as an inner loop's initial value is safe: that loop copies it
            # at entry unless it is the last use (then ownership passes on)
            if self.count[p] - self.inits[p] > (1 if r == p else 0):
                continue
            if r != p and not (isinstance(r, Var) and r in bound_in_body and self.count[r] == 1):
                continue
            cand.add(j)
        binders = tuple(e.params) + ((e.form.index,) if isinstance(e.form, ForForm) else ())
        while True:
            snap = (set(self.owned), set(self.inplace))
            self.owned.update(e.params[j] for j in cand)
            self.body(e.body, binders)
            bad = {j for j in cand if res[j] != e.params[j] and res[j] not in self.owned}
            if not bad:
                break
            self.owned, self.inplace = snap
            cand -= bad
        self.loop_owned[id(st)] = cand
        self.loop_copy[id(st)] = cand & copy
        for j in cand:
            self.owned.add(st.pat[j])


# ---------------------------------------------------------------------------
# the emitter
# ---------------------------------------------------------------------------


def _sanitize(name: str) -> str:
    out = "".join(ch if (ch.isalnum() or ch == "_") and ch.isascii() else "_" for ch in name) or "v"
    if out[0].isdigit():
        out = "v" + out
    if out.startswith("_"):
        out = "v" + out
    if out in _RESERVED:
        out += "_"
    return out


def _float_lit(v: float) -> str:
    if v != v:
        return "np.nan"
    if v in (float("inf"), float("-inf")):
        return "np.inf" if v > 0 else "-np.inf"
    return repr(float(v))


def _scalar_lit(v, dtype: str) -> str:
    if dtype == "bool":
        return "True" if v else "False"
    if dtype == "i64":
        return str(int(v))
    return _float_lit(float(v))


def _nested(a: np.ndarray, dtype: str) -> str:
    if a.ndim == 0:
        return _scalar_lit(a.item(), dtype)
    return "[" + ", ".join(_nested(x, dtype) for x in a) + "]"


def _shape_lit(shape) -> str:
    shape = tuple(int(d) for d in shape)
    if len(shape) == 1:
        return str(shape[0])
    return repr(shape)


def _axes_lit(axes) -> str:
    axes = tuple(int(a) for a in axes)
    return str(axes[0]) if len(axes) == 1 else repr(axes)


def _py_value(v) -> str:
    """A Python expression for a param value (fallback primitive calls)."""
    if isinstance(v, TensorType):
        return f"_TensorType({v.dtype!r}, {tuple(v.shape)!r})"
    if isinstance(v, StoreType):
        return f"_StoreType({_py_value(v.elem)})"
    if isinstance(v, tuple):
        items = [_py_value(x) for x in v]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(v, float):
        return _float_lit(v)
    return repr(v)


class _Module:
    def __init__(self, prog: Prog, name_hints: bool, dialect=None):
        self.prog = prog
        self.name_hints = name_hints
        # `dialect`: None for plain NumPy, or an object with hooks (`const`, `prim`,
        # `decorator`, `header`) that print some forms differently (see backends.numba_backend)
        self.dialect = dialect
        # names every function takes after its own parameters and passes on at each
        # call (the numba dialect's large constants, note [numba-constants])
        self.extra_params: list[str] = dialect.prepare(prog) if dialect is not None else []
        self.consts: list[str] = []
        self.const_names: dict = {}
        self.uses_rt = False
        self.uses_types = False
        self.fnames: dict[str, str] = {}
        taken = set(_RESERVED)
        for f in prog.funcs:
            n = _sanitize(f.name)
            while n in taken:
                n += "_"
            taken.add(n)
            self.fnames[f.name] = n

    def const_array(self, c: Const) -> str:
        t = c.type
        a = np.asarray(c.value)
        if t.size == 0:
            return f"np.zeros({_shape_lit(t.shape)}, dtype={_NP_DTYPE[t.dtype]})"
        dt = "" if t.dtype in ("f64", "i64", "bool") else f", dtype={_NP_DTYPE[t.dtype]}"
        text = f"np.array({_nested(a, t.dtype)}{dt})"
        if t.size <= 8:
            return text
        key = c
        if key not in self.const_names:
            name = f"_c{len(self.consts)}"
            self.const_names[key] = name
            self.consts.append(f"{name} = {text}")
        return self.const_names[key]


class _FuncEmitter:
    def __init__(self, mod: _Module, f: Func):
        self.mod = mod
        self.f = f
        self.lines: list[str] = []
        self.py: dict = {}
        self.taken = set(_RESERVED) | set(mod.fnames.values())
        self.counter = 0
        self.strong: set = set()  # vars known to hold NumPy values (not Python scalars)
        self.prefer: dict = {}    # var -> python name it should take when bound
        self.last_loc = None
        self.here: list[set] = []
        self.own = _Ownership(f)

    # -- names ----------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        if not self.mod.name_hints:
            while f"v{self.counter}" in self.taken:
                self.counter += 1
            n = f"v{self.counter}"
            self.taken.add(n)
            return n
        base = _sanitize(hint)
        n, k = base, 2
        while n in self.taken:
            n = f"{base}_{k}"
            k += 1
        self.taken.add(n)
        return n

    def bind(self, v: Var) -> str:
        if v in self.py:
            return self.py[v]
        n = self.prefer.pop(v, None) or self.fresh(v.name)
        self.py[v] = n
        return n

    # -- atoms ------------------------------------------------------------------
    def a(self, x) -> str:
        if isinstance(x, Var):
            n = self.py.get(x)
            if n is None:
                raise KeyError(f"pysource: variable {x.name} used before it is bound")
            return n
        if isinstance(x, Const):
            if self.mod.dialect is not None:
                t = self.mod.dialect.const(self, x)
                if t is not None:
                    return t
            if x.type.shape:
                return self.mod.const_array(x)
            return _scalar_lit(x.value, x.type.dtype)
        raise TypeError(f"not an atom: {x!r}")

    def op_a(self, x) -> str:
        """An atom as an operand of an operator (negative literals parenthesised)."""
        s = self.a(x)
        return f"({s})" if s.startswith("-") else s

    def is_strong(self, x) -> bool:
        if isinstance(x, Const):
            return bool(x.type.shape)
        return _ndim(x) > 0 or x in self.strong

    # -- output ------------------------------------------------------------------
    def line(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def provenance(self, st: Let, depth: int) -> None:
        loc = st.loc
        if loc is None:
            return
        role = getattr(loc, "role", "")
        key = (loc.file, loc.line, role)
        if key == self.last_loc:
            return
        self.last_loc = key
        text = (getattr(loc, "text", "") or "").strip()
        where = f"{os.path.basename(str(loc.file))}:{loc.line}"
        self.line(depth, f"# {role + ' of ' if role else ''}{where}" + (f": {text}" if text else ""))

    # -- functions ----------------------------------------------------------------
    def func(self) -> list[str]:
        f = self.f
        params = [self.bind(p) for p in f.params]
        from ..ir.printer import print_type

        sig = ", ".join(f"{p.name}: {print_type(p.type)}" for p in f.params)
        rets = ", ".join(print_type(t) for t in f.ret_types)
        if self.mod.dialect is not None:
            for t in self.mod.dialect.decorator(f):
                self.line(0, t)
        self.line(0, f"def {self.mod.fnames[f.name]}({', '.join(params + self.mod.extra_params)}):")
        self.line(1, f'"""{f.name}({sig}) -> ({rets})"""')
        self.strong.update(f.params)  # the entry wrapper and call sites pass NumPy values
        self.body(f.body, 1, f.params)
        self.line(1, "return " + self.tuple_text(f.body.result))
        return self.lines

    def tuple_text(self, atoms) -> str:
        xs = [self.a(x) for x in atoms]
        if len(xs) == 1:
            return xs[0]
        if not xs:
            return "()"
        return ", ".join(xs)

    def body(self, body: Body, depth: int, binders=(), targets=None) -> None:
        """Emit `body`'s statements; with `targets`, assign its results to them."""
        self.here.append(set(binders))
        n0 = len(self.lines)
        dialect = self.mod.dialect
        groups = dialect.fusion_plan(body) if dialect is not None else {}
        k = 0
        while k < len(body.stmts):
            g = groups.get(k)
            if g is not None:  # a fused run of elementwise statements (numba dialect)
                dialect.emit_group(self, g, depth)
                for st in body.stmts[g.start:g.end]:
                    self.here[-1].update(st.pat)
                k = g.end
                continue
            st = body.stmts[k]
            self.provenance(st, depth)
            self.stmt(st, depth)
            self.here[-1].update(st.pat)
            k += 1
        if targets is not None:
            self.assign(depth, targets, [self.a(x) for x in body.result])
        if len(self.lines) == n0 and targets is not None:
            self.line(depth, "pass")
        self.here.pop()

    def assign(self, depth: int, targets: list[str], values: list[str]) -> None:
        pairs = [(t, v) for t, v in zip(targets, values) if t != v]
        if not pairs:
            return
        self.line(depth, f"{', '.join(t for t, _ in pairs)} = {', '.join(v for _, v in pairs)}")

    def stmt(self, st: Let, depth: int) -> None:
        e = st.exp
        if isinstance(e, Prim):
            self._weak_out = False
            self.prim(st, depth)
            if not self._weak_out:
                self.strong.update(v for v in st.pat if not (e.op == "store_pop"))
        elif isinstance(e, If):
            self.if_(st, depth)
        elif isinstance(e, Loop):
            self.loop(st, depth)
        elif isinstance(e, Apply):
            args = ", ".join([self.call_arg(x) for x in e.args] + self.mod.extra_params)
            call = f"{self.mod.fnames.get(e.func, _sanitize(e.func))}({args})"
            if not st.pat:
                self.line(depth, call)
            else:
                outs = [self.bind(v) for v in st.pat]
                self.line(depth, f"{', '.join(outs)} = {call}")
        else:
            raise NotImplementedError(f"pysource: cannot emit {type(e).__name__}")

    def _natural_dtypes(self, op, x, y) -> set:
        """Dtypes NumPy may give `op(x, y)` (weak Python scalars included)."""
        fn = getattr(np, _BIN_FN[op][3:])
        outs = set()
        with np.errstate(all="ignore"):
            for dx in self._dummies(x):
                for dy in self._dummies(y):
                    try:
                        outs.add(_dtype_name(np.asarray(fn(dx, dy)).dtype))
                    except Exception:
                        pass
        return outs

    def _dummies(self, x) -> list:
        t = x.type
        if isinstance(x, Const) and not t.shape:
            return [x.value]
        npv = np.ones(t.shape or (), dtype=_np_dtype(t.dtype))
        if self.is_strong(x):
            return [npv if t.shape else npv[()]]
        py = {"f64": 1.0, "f32": 1.0, "i64": 1, "bool": True}[t.dtype]
        return [py, npv[()]]

    def call_arg(self, x) -> str:
        """Call sites pass NumPy scalars, so callee params hold NumPy values."""
        if _ndim(x) == 0 and isinstance(x.type, TensorType) and not self.is_strong(x):
            return f"{_NP_DTYPE[x.type.dtype]}({self.a(x)})"
        return self.a(x)

    def _prefer_results(self, body: Body, names: list[str], avoid_live: set | None = None) -> None:
        """Let vars bound directly in `body` (by a Prim or Apply) and yielded once
        take the name of the place they are yielded to."""
        bound = {}
        for k, s in enumerate(body.stmts):
            if isinstance(s.exp, (Prim, Apply)):
                for v in s.pat:
                    bound[v] = k
        counts = Counter(a for a in body.result if isinstance(a, Var))
        taken_names = set()
        for r, name in zip(body.result, names):
            if not (isinstance(r, Var) and r in bound and counts[r] == 1 and r not in self.py):
                continue
            if name in taken_names:
                continue
            if avoid_live is not None:
                # the loop param owning `name` must be dead once r is bound
                p = avoid_live.get(name)
                if p is not None and not self._dead_after(body, p, bound[r]):
                    continue
            taken_names.add(name)
            self.prefer[r] = name

    @staticmethod
    def _dead_after(body: Body, p: Var, k: int) -> bool:
        from ..ir.traverse import free_vars

        if p in body.result:
            return False
        for s in body.stmts[k + 1:]:
            if p in free_vars(s.exp):
                return False
        return True

    def if_(self, st: Let, depth: int) -> None:
        e: If = st.exp
        outs = [self.bind(v) for v in st.pat]
        cond = self.a(e.cond)
        for i, b in enumerate((e.then, e.else_)):
            self.line(depth, "if " + cond + ":" if i == 0 else "else:")
            self._prefer_results(b, outs)
            self.body(b, depth + 1, (), outs)
        for v, r1, r2 in zip(st.pat, e.then.result, e.else_.result):
            if self.is_strong(r1) and self.is_strong(r2):
                self.strong.add(v)

    def loop(self, st: Let, depth: int) -> None:
        from ..ir.traverse import free_vars

        e: Loop = st.exp
        body_free = free_vars(e.body)
        later = self._later_uses(st)
        names = []
        used_init = set()
        for p, x0 in zip(e.params, e.init):
            n = None
            if (isinstance(x0, Var) and x0 not in used_init and x0 not in body_free and x0 not in later
                    and x0 in self.py and x0 in self.here[-1]):
                n = self.py[x0]
                used_init.add(x0)
            names.append(n or self.fresh(p.name))
        copied = self.own.loop_copy.get(id(st), set())
        inits = [self.a(x) + ".copy()" if j in copied else self.a(x) for j, x in enumerate(e.init)]
        for p, n in zip(e.params, names):
            self.py[p] = n
        prim_bound = {v for s in e.body.stmts if isinstance(s.exp, Prim) and s.exp.op != "store_pop"
                      for v in s.pat}
        for p, x0, r in zip(e.params, e.init, e.body.result):
            if self.is_strong(x0) and (r == p or r in prim_bound or (isinstance(r, Const) and r.type.shape)):
                self.strong.add(p)
        self.assign(depth, names, inits)
        if isinstance(e.form, ForForm):
            idx = e.form.index
            iname = self.bind(idx) if idx in body_free or idx in e.body.result else "_"
            self.line(depth, f"for {iname} in range({self.a(e.form.bound)}):")
        else:
            self.line(depth, f"while {self.py[e.form.cond]}:")
        self._prefer_results(e.body, names, avoid_live=dict(zip(names, e.params)))
        binders = tuple(e.params) + ((e.form.index,) if isinstance(e.form, ForForm) else ())
        self.body(e.body, depth + 1, binders, names)
        for v, n in zip(st.pat, names):
            self.py[v] = n
        # loop results are strong only if init and next values are
        for v, x0, r in zip(st.pat, e.init, e.body.result):
            if self.is_strong(x0) and self.is_strong(r):
                self.strong.add(v)

    def _later_uses(self, st: Let) -> set:
        """Vars used after `st` in the body that contains it (set by `body`)."""
        return self._later.get(id(st), set())

    # -- primitives ------------------------------------------------------------
    def prim(self, st: Let, depth: int) -> None:
        e: Prim = st.exp
        op = e.op
        e.p
        args = e.args
        if self.mod.dialect is not None and self.mod.dialect.prim(self, st, depth):
            return
        if op == "store_pop":
            s = args[0]
            s_name = self.a(s)
            outs = [self.bind(v) for v in st.pat]
            self.line(depth, f"{outs[0]}, {outs[1]} = {s_name}.pop()")
            return
        if op == "store_push":
            self.mod.uses_rt = True
            out = st.pat[0]
            self.line(depth, f"{self.bind(out)} = {self.a(args[0])}.push({self.a(args[1])})")
            return
        if op in ("index_update", "take_add"):
            self.update(st, depth)
            return
        rhs = self.expr(e, st.pat)
        outs = [self.bind(v) for v in st.pat]
        self.line(depth, f"{', '.join(outs)} = {rhs}")

    def update_target(self, st: Let, depth: int, scalar_copy: str = "np.array({})") -> str:
        """The Python name an update writes into: the input array itself when the
        ownership analysis allows it in place, else a fresh copy."""
        x = st.exp.args[0]
        out = st.pat[0]
        if id(st) in self.own.inplace:
            name = self.a(x)
            self.prefer.pop(out, None)
            self.py[out] = name
            return name
        name = self.bind(out)
        src = self.a(x)
        copy = f"{src}.copy()" if _ndim(x) > 0 else scalar_copy.format(src)
        self.line(depth, f"{name} = {copy}")
        return name

    def update(self, st: Let, depth: int) -> None:
        e: Prim = st.exp
        x = e.args[0]
        name = self.update_target(st, depth)
        if e.op == "index_update":
            v = e.args[1]
            ix = self.index_text(x, e.p["spec"], e.args[2:], drop_trailing=False)
            opr = "=" if e.p["mode"] == "set" else "+="
            self.line(depth, f"{name}[{ix}] {opr} {self.a(v)}")
        else:
            idx, v = e.args[1], e.args[2]
            axis = e.p["axis"]
            where = self.a(idx) if axis == 0 else "(" + "slice(None), " * axis + self.a(idx) + ")"
            self.line(depth, f"np.add.at({name}, {where}, {self.a(v)})")

    def index_text(self, x, spec, idx, drop_trailing=True) -> str:
        shape = x.type.shape
        it = iter(idx)
        parts = []
        for d, s in zip(shape, spec):
            if s[0] == "d":
                i = next(it)
                t = self.a(i)
                parts.append(f"int({t})" if i.type.dtype == "bool" else t)
            else:
                parts.append(_slice_text(s[1], s[2], s[3], d))
        if drop_trailing:
            while len(parts) > 1 and parts[-1] == ":":
                parts.pop()
        if not parts:
            return "()"
        return ", ".join(parts)

    def expr(self, e: Prim, pat) -> str:
        op, p, args = e.op, e.p, e.args
        A = self.a
        pat[0].type if pat else None
        if op in _UNARY_FN:
            (x,) = args
            if op == "neg" and self.is_strong(x):
                return f"-{self.op_a(x)}"
            return f"{_UNARY_FN[op]}({A(x)})"
        if op == "logistic":
            (x,) = args
            return f"0.5 * (np.tanh(0.5 * {self.op_a(x)}) + 1.0)"
        if op in _BIN_FN and len(args) == 2:
            x, y = args
            strong = self.is_strong(x) or self.is_strong(y)
            if (not strong and op in ("add", "sub", "mul", "lt", "le", "gt", "ge", "eq", "ne")
                    and x.type.dtype == "i64" and y.type.dtype == "i64"):
                # Python ints (loop counters): same values, but the result stays weak
                self._weak_out = True
                return f"{self.op_a(x)} {_BIN_OP[op]} {self.op_a(y)}"
            if strong and op in _BIN_OP:
                text = f"{self.op_a(x)} {_BIN_OP[op]} {self.op_a(y)}"
            else:
                text = f"{_BIN_FN[op]}({A(x)}, {A(y)})"
            if op in _CASTING:
                want = _promote_rt(x, y)
                if self._natural_dtypes(op, x, y) - {want}:
                    return f"({text}).astype({_NP_DTYPE[want]})"
            return text
        if op == "where":
            c, x, y = args
            return f"np.where({A(c)}, {A(x)}, {A(y)})"
        if op == "cast":
            (x,) = args
            dt = _NP_DTYPE[p["dtype"]]
            if self.is_strong(x):
                return f"{self.op_a(x)}.astype({dt})"
            if x.type.dtype in ("i64", "bool") or p["dtype"] in ("f64", "f32"):
                return f"{dt}({A(x)})"
            return f"np.asarray({A(x)}).astype({dt})[()]"
        if op == "index":
            x = args[0]
            spec = p["spec"]
            if not spec:
                return f"{A(x)}.copy()" if _ndim(x) > 0 else f"np.asarray({A(x)})[()]"
            copy = ".copy()" if pat and pat[0] in self.own.copied else ""
            copies = getattr(self.mod.dialect, "push_copies", None)
            if copy and pat[0] in self.own.push_only and copies is not None and copies(pat[0].type):
                copy = ""
            return f"{A(x)}[{self.index_text(x, spec, args[1:])}]{copy}"
        if op == "take":
            x, idx = args
            axis = p["axis"]
            return f"{A(x)}[{':, ' * axis}{A(idx)}]"
        if op == "reshape":
            (x,) = args
            if not self.is_strong(x):
                return f"np.reshape({A(x)}, {tuple(p['shape'])!r})"
            return f"{A(x)}.reshape({_shape_lit(p['shape']) if p['shape'] else '()'})"
        if op == "transpose":
            (x,) = args
            perm = tuple(p["perm"])
            if _ndim(x) >= 1 and perm == tuple(reversed(range(_ndim(x)))):
                return f"{A(x)}.T"
            return f"np.transpose({A(x)}, {perm!r})"
        if op == "broadcast_to":
            (x,) = args
            return f"np.broadcast_to({A(x)}, {tuple(p['shape'])!r})"
        if op == "concatenate":
            axis = p["axis"]
            xs = ", ".join(A(x) for x in args)
            return f"np.concatenate([{xs}]" + (f", axis={axis})" if axis else ")")
        if op == "iota":
            dt = p["dtype"]
            return f"np.arange({p['n']}" + (")" if dt == "i64" else f", dtype={_NP_DTYPE[dt]})")
        if op == "full":
            (v,) = args
            shape = _shape_lit(p["shape"]) if p["shape"] else "()"
            if isinstance(v, Const):
                val, dt = v.value, v.type.dtype
                if dt == "f64" and val == 0.0 and np.copysign(1.0, val) > 0:
                    return f"np.zeros({shape})"
                if dt == "f64" and val == 1.0:
                    return f"np.ones({shape})"
                if dt == "i64" and val == 0:
                    return f"np.zeros({shape}, dtype=np.int64)"
                if dt == "bool" and not val:
                    return f"np.zeros({shape}, dtype=bool)"
            return f"np.full({shape}, {A(v)})"
        if op in _REDUCE:
            (x,) = args
            axes = tuple(p["axes"])
            if not axes:
                return f"{A(x)}.copy()" if _ndim(x) > 0 else f"np.asarray({A(x)}).copy()"
            if _ndim(x) == 1:
                return f"{_REDUCE[op]}({A(x)})"
            return f"{_REDUCE[op]}({A(x)}, axis={_axes_lit(axes)})"
        if op in ("argmax", "argmin"):
            (x,) = args
            if _ndim(x) == 1:
                return f"np.{op}({A(x)})"
            return f"np.{op}({A(x)}, axis={p['axis']})"
        if op == "store_new":
            self.mod.uses_rt = True
            elem = p["elem"]
            return f"_rt.new_store({elem.nbytes})  # store of {elem}"
        if op == "store_zeros_like":
            self.mod.uses_rt = True
            return f"_rt.store_zeros_like({A(args[0])})"
        # any other primitive: call its table implementation
        self.mod.uses_rt = True
        ptext = "".join(f", {k}={_py_value(v)}" for k, v in e.params)
        if "_TensorType(" in ptext or "_StoreType(" in ptext:
            self.mod.uses_types = True
        return f"_rt.impl({op!r})({', '.join(A(x) for x in args)}{ptext})"


def _np_dtype(d):
    from ..ir.types import np_dtype

    return np_dtype(d)


def _dtype_name(dt) -> str:
    from ..ir.types import dtype_of_np

    return dtype_of_np(dt)


def _promote_rt(x, y) -> str:
    """The dtype the table's binary impl casts to: Python constants count by
    their Python type (float -> f64, int -> i64, bool -> bool)."""
    from ..ir.types import promote

    def rt(a):
        if isinstance(a, Const) and not a.type.shape:
            return {bool: "bool", int: "i64", float: "f64"}[type(a.value)]
        return a.type.dtype

    return promote(rt(x), rt(y))


def _slice_text(start, stop, step, d) -> str:
    if step in (1, None):
        a = "" if start in (0, None) else str(start)
        b = "" if stop is None or (isinstance(stop, int) and stop >= d and (start is None or start >= 0)) else str(stop)
        return f"{a}:{b}"
    if isinstance(step, int) and step > 0:
        a = "" if start in (0, None) else str(start)
        b = "" if stop is None or (isinstance(stop, int) and stop >= d and (start is None or start >= 0)) else str(stop)
        return f"{a}:{b}:{step}"
    a = "" if start is None else str(start)
    b = "" if stop is None else str(stop)
    return f"{a}:{b}:{step}"


def _annotate_later(fe: _FuncEmitter, body: Body) -> None:
    """For each Loop statement, the vars used after it in its body."""
    from ..ir.traverse import exp_scopes, free_vars

    later: set = {a for a in body.result if isinstance(a, Var)}
    for st in reversed(body.stmts):
        if isinstance(st.exp, Loop):
            fe._later[id(st)] = set(later)
        later |= free_vars(st.exp)
        for _, b in exp_scopes(st.exp):
            _annotate_later(fe, b)


def emit_func(mod: _Module, f: Func) -> list[str]:
    fe = _FuncEmitter(mod, f)
    fe._later = {}
    _annotate_later(fe, f.body)
    return fe.func()


def emit_prog(prog: Prog, name_hints: bool = True, dialect=None) -> str:
    """Python source for `prog` (see the module docstring). `dialect` (None: plain
    NumPy) changes how some forms are printed, for compiled backends."""
    mod = _Module(prog, name_hints, dialect)
    funcs = [emit_func(mod, f) for f in prog.funcs]
    head = [f'"""Generated by pullback from IR (entry: {prog.entry})."""', "import numpy as np"]
    if dialect is not None:
        head += dialect.header(mod)
    if mod.uses_rt:
        head.append("from pullback.backends import runtime as _rt")
    if mod.uses_types:
        head.append("from pullback.ir.types import StoreType as _StoreType, TensorType as _TensorType")
    out = head + [""]
    if mod.consts:
        out += mod.consts + [""]
    for lines in funcs:
        out += [""] + lines + [""]
    return "\n".join(out).rstrip("\n") + "\n"


# ---------------------------------------------------------------------------
# compile and run
# ---------------------------------------------------------------------------

_CACHE: dict = {}
_COUNTER = [0]


def compile_prog(prog: Prog, fname: str | None = None):
    """The entry function (or `fname`) of the emitted module, taking leaf values
    positionally and returning a list of results."""
    src = emit_prog(prog)
    _COUNTER[0] += 1
    filename = f"<pullback-{prog.entry}-{_COUNTER[0]}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns: dict = {"__name__": f"pullback_generated_{_COUNTER[0]}"}
    exec(compile(src, filename, "exec"), ns)
    mod = _Module(prog, True)  # for the function-name mapping only
    f = prog.func(fname or prog.entry)
    fn = ns[mod.fnames[f.name]]
    nres = len(f.ret_types)
    np_types = [_param_dtype(p.type) for p in f.params]

    def entry(*args):
        if len(args) != len(f.params):
            from ..errors import PullbackError

            raise PullbackError(f"{f.name} takes {len(f.params)} arguments, got {len(args)}")
        args = [_coerce(a, dt) for a, dt in zip(args, np_types)]
        with np.errstate(all="ignore"):
            r = fn(*args)
        if nres == 1:
            return [r]
        return list(r)

    entry.__wrapped__ = fn
    entry.source = src
    entry.__name__ = f.name
    return entry


def _param_dtype(t):
    from ..ir.types import np_dtype

    if isinstance(t, TensorType):
        return (np_dtype(t.dtype), bool(t.shape))
    return None


def _coerce(a, dt):
    """Leaf values as NumPy arrays/scalars of the parameter's dtype."""
    if dt is None:
        return a
    npdt, is_array = dt
    if is_array:
        return a if isinstance(a, np.ndarray) and a.dtype == npdt else np.asarray(a, dtype=npdt)
    if isinstance(a, np.generic) and a.dtype == npdt:
        return a
    return np.asarray(a, dtype=npdt)[()]


def run(prog: Prog, *args, fname: str | None = None, meter=None) -> list:
    """Compile `prog` (cached per program) and run it on leaf values."""
    from ..ir.prims import stores as _stores

    key = (prog, fname)
    try:
        fn = _CACHE.get(key)
    except TypeError:  # unhashable params
        key, fn = None, None
    if fn is None:
        fn = compile_prog(prog, fname)
        if key is not None:
            if len(_CACHE) > 256:
                _CACHE.clear()
            _CACHE[key] = fn
    old = _stores.CURRENT_METER[0]
    _stores.CURRENT_METER[0] = meter
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20000))
    try:
        return fn(*args)
    finally:
        _stores.CURRENT_METER[0] = old
        sys.setrecursionlimit(limit)


def derivative_source(prog: Prog) -> str:
    """Alias of `emit_prog`, for the API layer."""
    return emit_prog(prog)
