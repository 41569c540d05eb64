"""The emitter: one Python function per IR function, one module per program.

Contract: `emit_prog(prog, name_hints=True, dialect=None) -> str` (see the
package docstring); `emit_module(...)` returns the `_Module` with `source`,
its run-time check sites (`sites`, see `backends.checks`), `line_locs`
(the `SrcLoc` of the statement each line of `source` belongs to, None
outside statements; line n is ``line_locs[n - 1]``) and `const_values`:
constant arrays of more than `LITERAL_MAX` elements, which the source reads
from a module global ``_pb_const`` (a list) that whoever executes it
defines, instead of printing them. `_Module` holds
per-module state (function names, module constants, which imports are
needed); `_FuncEmitter` prints one function: names, atoms, provenance
comments, control flow (primitives and checks: `prims`). A `dialect` (the
numba backend's) may print some forms differently. User-controlled text goes
into the source only through `text._sanitize` (names) and `text.safe_text`
(comments, docstrings).
"""
from __future__ import annotations

import os
from collections import Counter

import numpy as np

from ...ir.core import Apply, Body, Const, ForForm, Func, If, Let, Loop, Map, Prim, Prog, Var
from ...ir.traverse import bound_vars, exp_scopes
from ...ir.types import TensorType
from .. import checks
from .ownership import _Ownership
from .prims import _dtype_name, _np_dtype, _PrimEmitter
from .ranges import Ranges
from .tables import _BIN_FN, _ndim
from .text import (
    _NP_DTYPE,
    _RESERVED,
    _nested,
    _sanitize,
    _scalar_lit,
    _shape_lit,
    safe_text,
)

LITERAL_MAX = 4096   # constants with more elements are not printed (the numba dialect's _BIG_CONST)


class _Module:
    def __init__(self, prog: Prog, name_hints: bool, dialect=None):
        self.prog = prog
        self.name_hints = name_hints
        # `dialect`: None for plain NumPy, or an object with hooks (`const`, `prim`,
        # `decorator`, `header`, `before_call`) that print some forms differently or add
        # lines (see backends.numba_dialect)
        self.dialect = dialect
        # names every function takes after its own parameters and passes on at each
        # call (the numba dialect's large constants, note [numba-constants])
        self.extra_params: list[str] = dialect.prepare(prog) if dialect is not None else []
        self.consts: list[str] = []
        self.const_values: list = []   # constants above LITERAL_MAX elements: `_pb_const` of the module
        self.const_names: dict = {}
        self.uses_rt = False
        self.uses_types = False
        self.sites = checks.Sites()   # the run-time checks printed, by number
        self.source = ""
        self.line_locs: list = []
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
        if t.size <= 8:
            return f"np.array({_nested(a, t.dtype)}{dt})"
        key = c
        if key not in self.const_names:
            name = f"_c{len(self.consts)}"
            self.const_names[key] = name
            if t.size > LITERAL_MAX:   # printing and parsing it would take seconds: the runner passes it in
                self.consts.append(f"{name} = _pb_const[{len(self.const_values)}]  # {t}: too large to print")
                self.const_values.append(np.array(a, dtype=_np_dtype(t.dtype)))
            else:
                self.consts.append(f"{name} = np.array({_nested(a, t.dtype)}{dt})")
        return self.const_names[key]


# a loop body with more statements, or a loop of fewer iterations (LLVM's tiny trip count, as
# `numba_fusion.TINY_TRIP`), is not taken for one LLVM vectorises (`enter_loop`)
_VECTOR_BODY = 64
_TINY_TRIP = 16


class _FuncEmitter(_PrimEmitter):
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
        self.own = _Ownership(f, {g.name: g.donated for g in mod.prog.funcs if g.donated})
        self.line_locs: list = []  # per line: the SrcLoc of the statement being printed
        self.cur_loc = None
        self.index_bound: dict = {}  # loop index var -> its static range bound (checks)
        self.ranges = Ranges(f)      # symbolic bounds of indices in loops (checks, note [index-ranges])
        self.checked: list[set] = []  # per open body: (index var, size) already checked in it
        self.sums: set = set()        # results of additions a dialect may reassociate (note [adjoint-reassoc])
        self.top_lines = 0            # lines a dialect inserted at the function's top (numba_scratch.scratch)
        self.kept: list = []          # arrays a dialect keeps alive until the return (keep_alive)
        self.varying: list = []       # per loop being printed, innermost last: the vars it may change (None:
                                      # a loop whose body LLVM would not vectorise, `enter_loop`)

    def loop_invariant(self, a) -> bool:
        """Whether scalar `a` is the same in every iteration of the innermost loop being
        printed (a constant, or a var that loop does not bind), in a loop that LLVM may
        vectorise; False elsewhere. Only speed depends on it (note [strong-mul],
        "Invariant factors")."""
        if not self.varying or self.varying[-1] is None or a.type.shape:
            return False
        return isinstance(a, Const) or a not in self.varying[-1]

    def enter_loop(self, binders, body: Body, trips=None) -> None:
        """Printing the loop of `body` (`trips` iterations, when static) starts: its vars
        for `loop_invariant`, or None where its body is no vectorisation candidate (a
        nested loop, more than `_VECTOR_BODY` statements, fewer than `_TINY_TRIP` iterations)."""
        small = trips is not None and trips < _TINY_TRIP
        if small or len(body.stmts) > _VECTOR_BODY or any(exp_scopes(st.exp) for st in body.stmts):
            self.varying.append(None)
        else:
            self.varying.append(set(binders) | bound_vars(body))

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
        self.line_locs.append(self.cur_loc)

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
        where = f"{safe_text(os.path.basename(str(loc.file)))}:{safe_text(loc.line)}"
        head = f"{safe_text(role)} of " if role else ""
        self.line(depth, f"# {head}{where}" + (f": {safe_text(text)}" if text else ""))

    # -- functions ----------------------------------------------------------------
    def func(self) -> list[str]:
        f = self.f
        params = [self.bind(p) for p in f.params]
        from ...ir.printer import print_type

        sig = ", ".join(f"{p.name}: {print_type(p.type)}" for p in f.params)
        rets = ", ".join(print_type(t) for t in f.ret_types)
        if self.mod.dialect is not None:
            for t in self.mod.dialect.decorator(f):
                self.line(0, t)
        self.line(0, f"def {self.mod.fnames[f.name]}({', '.join(params + self.mod.extra_params)}):")
        self.line(1, f'"""{safe_text(f.name)}({safe_text(sig)}) -> ({safe_text(rets)})"""')
        self.strong.update(f.params)  # the entry wrapper and call sites pass NumPy values
        self.body(f.body, 1, f.params)
        if self.mod.dialect is not None and hasattr(self.mod.dialect, "before_return"):
            self.mod.dialect.before_return(self)   # e.g. the numba dialect's keep-alives
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
        self.checked.append(set())
        n0 = len(self.lines)
        dialect = self.mod.dialect
        groups = dialect.fusion_plan(body, self) if dialect is not None else {}
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
        self.checked.pop()

    def assign(self, depth: int, targets: list[str], values: list[str]) -> None:
        pairs = [(t, v) for t, v in zip(targets, values) if t != v]
        if not pairs:
            return
        self.line(depth, f"{', '.join(t for t, _ in pairs)} = {', '.join(v for _, v in pairs)}")

    def stmt(self, st: Let, depth: int) -> None:
        outer = self.cur_loc
        if st.loc is not None:
            self.cur_loc = st.loc
        try:
            self._stmt(st, depth)
        finally:
            self.cur_loc = outer

    def _stmt(self, st: Let, depth: int) -> None:
        e = st.exp
        if isinstance(e, Prim):
            self._weak_out = False
            self.emit_checks(st, depth)
            self.prim(st, depth)
            if not self._weak_out:
                self.strong.update(v for v in st.pat if not (e.op == "store_pop"))
        elif isinstance(e, If):
            self.if_(st, depth)
        elif isinstance(e, Loop):
            self.loop(st, depth)
        elif isinstance(e, Map):
            from .maps import emit_map

            emit_map(self, st, depth)
        elif isinstance(e, Apply):
            if self.mod.dialect is not None and hasattr(self.mod.dialect, "before_call"):
                self.mod.dialect.before_call(self, st, depth)  # e.g. the numba dialect's stack check
            copies = self.own.call_copy.get(id(st), ())
            args = ", ".join([self.call_arg(x) + (".copy()" if i in copies else "") for i, x in enumerate(e.args)]
                             + self.mod.extra_params)
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

    def _dead_after(self, body: Body, p: Var, k: int) -> bool:
        """Is `p`'s Python name free once statement k has run? Not while p, or a
        value that lives under p's name, is still read: a value updated in place
        from one of them, or the result of a loop that carries one of them (a
        loop's parameter and result take their initial value's name, `loop`)."""
        from ...ir.traverse import free_vars

        names = {p}
        for s in body.stmts[:k + 1]:
            if s is body.stmts[k]:
                break
            target = s.exp.args[0] if id(s) in self.own.inplace else self.own.inplace_add.get(id(s))
            if target is not None and target in names:
                names.update(s.pat[:1])
            if isinstance(s.exp, Loop):
                names.update(out for x0, out in zip(s.exp.init, s.pat) if x0 in names)
        if names & set(body.result):
            return False
        for s in body.stmts[k + 1:]:
            if names & free_vars(s.exp):
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
        from ...ir.traverse import free_vars

        e: Loop = st.exp
        body_free = free_vars(e.body)
        later = self._later_uses(st)
        self.sums |= sum_adds(e)
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
            if isinstance(e.form.bound, Const) and not e.form.bound.type.shape:
                self.index_bound[idx] = int(e.form.bound.value)  # 0 <= idx < bound: no bounds checks
            self.line(depth, f"for {iname} in range({self.a(e.form.bound)}):")
        block = 0
        if not isinstance(e.form, ForForm):
            cond = self.py[e.form.cond]
            self.line(depth, f"while {cond}:")
            while_block = getattr(self.mod.dialect, "while_block", None)
            block = while_block(self, st, depth + 1, names) if while_block is not None else 0
            if block:   # the numba dialect: iterations in blocks (note [numba-stores], "While loops in blocks")
                self.line(depth + 1, f"for {self.fresh('blk')} in range({block}):")
        self._prefer_results(e.body, names, avoid_live=dict(zip(names, e.params)))
        binders = tuple(e.params) + ((e.form.index,) if isinstance(e.form, ForForm) else ())
        if isinstance(e.form, ForForm):
            self.ranges.enter(e.form.index, e.form.bound)
        bound = e.form.bound if isinstance(e.form, ForForm) else None
        self.enter_loop(binders, e.body, int(bound.value) if isinstance(bound, Const) else None)
        self.body(e.body, depth + 1 + bool(block), binders, names)
        self.varying.pop()
        if isinstance(e.form, ForForm):
            self.ranges.leave()
        if block:
            self.line(depth + 2, f"if not {cond}:")
            self.line(depth + 3, "break")
        for v, n in zip(st.pat, names):
            self.py[v] = n
        # loop results are strong only if init and next values are
        for v, x0, r in zip(st.pat, e.init, e.body.result):
            if self.is_strong(x0) and self.is_strong(r):
                self.strong.add(v)

    def _later_uses(self, st: Let) -> set:
        """Vars used after `st` in the body that contains it (set by `body`)."""
        return self._later.get(id(st), set())

def _annotate_later(fe: _FuncEmitter, body: Body) -> None:
    """For each Loop statement, the vars used after it in its body."""
    from ...ir.traverse import exp_scopes, free_vars

    later: set = {a for a in body.result if isinstance(a, Var)}
    for st in reversed(body.stmts):
        if isinstance(st.exp, (Loop, Map)):
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
    return emit_module(prog, name_hints, dialect).source


def emit_module(prog: Prog, name_hints: bool = True, dialect=None) -> _Module:
    """`emit_prog`'s module with its `source`, check `sites` and `line_locs`."""
    mod = _Module(prog, name_hints, dialect)
    funcs = []
    for f in prog.funcs:
        fe = _FuncEmitter(mod, f)
        fe._later = {}
        _annotate_later(fe, f.body)
        funcs.append((fe.func(), fe.line_locs))
    if dialect is not None:   # the dialect's last word on each function's text, before its header
        funcs = [(dialect.finish(lines), locs) for lines, locs in funcs]
    head = [f'"""Generated by pullback from IR (entry: {safe_text(prog.entry)})."""', "import numpy as np"]
    if dialect is not None:
        head += dialect.header(mod)
    if mod.uses_rt:
        head.append("from pullback.backends import runtime as _rt")
    if mod.uses_types:
        head.append("from pullback.ir.types import StoreType as _StoreType, TensorType as _TensorType")
    out = head + [""]
    if mod.consts:
        out += mod.consts + [""]
    # items may hold several lines (the dialect's helpers): count them for the line map
    locs = [None] * sum(item.count("\n") + 1 for item in out)
    for lines, line_locs in funcs:
        out += [""] + lines + [""]
        locs += [None] + [loc for t, loc in zip(lines, line_locs) for _ in range(t.count("\n") + 1)] + [None]
    mod.source = "\n".join(out).rstrip("\n") + "\n"
    mod.line_locs = locs
    return mod


def sum_adds(e: Loop) -> set:
    """The results of the scalar float additions that carry one of `e.sums`
    from its param to its next value (note [adjoint-reassoc]): the chain
    ``s1 = add(s, x); s2 = add(s1, y); ...`` of statements of the loop's own
    body that ends in the param's result. Anything else (a chain that leaves
    the body's top level, or ends elsewhere) gives nothing for that param."""
    out: set = set()
    for j, p in enumerate(e.params):
        if p not in e.sums or not (isinstance(p.type, TensorType) and p.type.ndim == 0
                                   and p.type.dtype in ("f64", "f32")):
            continue
        chain, cur = [], p
        for st in e.body.stmts:
            x = st.exp
            if (isinstance(x, Prim) and x.op == "add" and len(st.pat) == 1 and cur in x.args
                    and st.pat[0].type == p.type and all(a.type == p.type for a in x.args)):
                chain.append(st.pat[0])
                cur = st.pat[0]
        if chain and cur == e.body.result[j]:
            out.update(chain)
    return out
