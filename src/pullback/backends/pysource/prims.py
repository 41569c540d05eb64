"""How each primitive statement is printed (a mixin of the function emitter).

Contract: `_PrimEmitter.prim(st, depth)` prints one `Let` of a `Prim` as
NumPy code whose value equals the primitive's table `impl` (value and dtype);
updates (`index_update`, `take_add`) write in place only where the ownership
analysis allows it (`update_target`). A dialect's `prim` hook may print the
statement instead. `emit_checks(st, depth)` prints, before the statement, the
run-time checks it needs (note [run-time-checks]): integer ``//`` / ``%`` by
zero always; indices (traced scalars and index arrays) only where the dialect
asks (`dialect.boundscheck`: numba; in plain NumPy code NumPy checks indices
itself). A failing check raises ``IndexError(K, i)`` / ``ZeroDivisionError(K,
0)``, K the number of its `checks.Site` in `mod.sites`.
"""
from __future__ import annotations

import numpy as np

from ...ir.core import Const, Let, Prim, Var
from .. import checks
from ..libcalls import LIBCALLS
from .tables import _BIN_FN, _BIN_OP, _CASTING, _REDUCE, _UNARY_FN, _ndim
from .text import _NP_DTYPE, _axes_lit, _py_value, _shape_lit, _slice_text


class _PrimEmitter:
    """Primitive printing for `emitter._FuncEmitter` (which provides `a`, `bind`,
    `line`, `is_strong`, `op_a`, `own`, `mod`, ...)."""

    # -- run-time checks ----------------------------------------------------------
    def emit_checks(self, st: Let, depth: int) -> None:
        e: Prim = st.exp
        op = e.op
        if op in ("floordiv", "mod", "pow") and st.pat and st.pat[0].type.dtype in ("i64", "bool"):
            self.check_divisor(st, e.args[1], depth)
        bc = getattr(self.mod.dialect, "boundscheck", None)
        if op in ("index", "index_update") and e.p["spec"] and bc is not False:
            # dynamic slices always (NumPy and numba clamp slices); indices where the dialect asks
            x = e.args[0]
            it = iter(e.args[1:] if op == "index" else e.args[2:])
            for axis, (n, sp) in enumerate(zip(x.type.shape, e.p["spec"])):
                if sp[0] == "d":
                    i = next(it)
                    if bc:
                        self.check_index(st, i, axis, int(n), depth)
                elif sp[0] == "ds":
                    self.check_slice(st, next(it), axis, int(n), int(sp[1]), depth)
        if not bc:
            return
        if op in ("take", "take_add"):
            x, idx = e.args[0], e.args[1]
            axis = e.p["axis"]
            n = int(x.type.shape[axis])
            if _ndim(idx) == 0:
                self.check_index(st, idx, axis, n, depth)
            elif not (isinstance(idx, Const) and np.all((-n <= np.asarray(idx.value)) & (np.asarray(idx.value) < n))):
                k = self.mod.sites.add(checks.Site("index", st.loc, axis, n))
                self.line(depth, f"{self.mod.dialect.index_array_check()}({self.a(idx)}, {n}, {k})")

    def check_index(self, st: Let, i, axis: int, n: int, depth: int) -> None:
        """``-n <= i < n``, unless known: a constant, a loop index below n, an
        index the enclosing loops bound (`ranges`, note [index-ranges]), or
        checked already in an enclosing body."""
        if isinstance(i, Const) and -n <= int(i.value) < n:
            return
        if self.index_bound.get(i, n + 1) <= n or any((i, n) in c for c in self.checked) or self.ranges.within(i, n):
            return
        if self.checked:
            self.checked[-1].add((i, n))
        k = self.mod.sites.add(checks.Site("index", st.loc, axis, n))
        t = self.a(i)
        self.line(depth, f"if {t} < -{n} or {t} >= {n}:")
        self.line(depth + 1, f"raise IndexError({k}, {t})")

    def unsigned_index(self, i, n: int) -> bool:
        """Print index `i` of an axis of length `n` unsigned (note [unsigned-indices]):
        where the dialect asks, for a computed integer index (not a constant,
        not the index of a loop with a static bound) that `ranges` proves in
        ``[0, n)``. numba wraps a signed index that may be negative (a select
        on every access, which keeps LLVM's vectoriser from seeing consecutive
        addresses); it does not wrap an unsigned one."""
        return (getattr(self.mod.dialect, "unsigned_indices", False) and isinstance(i, Var)
                and i.type.dtype in ("i64", "i32") and i not in self.index_bound and self.ranges.within(i, n))

    def check_slice(self, st: Let, i, axis: int, n: int, k: int, depth: int) -> None:
        """``0 <= i <= n - k`` for a dynamic slice ``x[i:i+k]``, unless known: a
        constant, a loop index with a static bound <= n - k + 1, or checked
        already in an enclosing body."""
        if isinstance(i, Const) and 0 <= int(i.value) <= n - k:
            return
        key = (i, -n, k)  # not an index check's (i, n)
        if (self.index_bound.get(i, n + 2) <= n - k + 1 or any(key in c for c in self.checked)
                or self.ranges.within(i, n - k + 1)):
            return
        if self.checked:
            self.checked[-1].add(key)
        site = self.mod.sites.add(checks.Site("slice", st.loc, axis, n, length=k))
        t = self.a(i)
        self.line(depth, f"if {t} < 0 or {t} > {n - k}:")
        self.line(depth + 1, f"raise IndexError({site}, {t})")

    def check_divisor(self, st: Let, y, depth: int) -> None:
        """A zero divisor of integer `//`/`%`, or a negative exponent of integer `**`."""
        pow_ = st.exp.op == "pow"
        bad = "< 0" if pow_ else "== 0"
        if isinstance(y, Const):
            v = np.asarray(y.value)
            if not np.any(v < 0 if pow_ else v == 0):
                return
        k = self.mod.sites.add(checks.Site("div", st.loc, op=st.exp.op))
        t = self.a(y)
        self.line(depth, f"if {t} {bad}:" if _ndim(y) == 0 else f"if np.any({t} {bad}):")
        self.line(depth + 1, f"raise ZeroDivisionError({k}, 0)")

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
        acc = self.own.inplace_add.get(id(st))
        if acc is not None:  # accumulate in place (an adjoint, note [ownership])
            other = args[1] if args[0] == acc else args[0]
            name = self.a(acc)
            self.prefer.pop(st.pat[0], None)
            self.py[st.pat[0]] = name
            self.line(depth, f"{name} += {self.a(other)}")
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
                if i.type.dtype == "bool":
                    t = f"int({t})"
                elif self.unsigned_index(i, int(d)):
                    t = f"np.uint64({t})"
                parts.append(t)
            elif s[0] == "ds":
                t = self.a(next(it))
                parts.append(f"{t}:{t} + {s[1]}")
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
            view = getattr(self.mod.dialect, "view", None)   # a dialect's form of a static slice
            text = view(self, x, spec, pat) if view is not None and len(args) == 1 else None
            row = getattr(self.mod.dialect, "row_view", None)   # a borrowed x[i] (note [borrowed-views])
            if text is None and row is not None and not copy and len(args) == 2:
                text = row(self, x, spec, self.index_text(x, spec, args[1:]), pat)
            return (text or f"{A(x)}[{self.index_text(x, spec, args[1:])}]") + copy
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
        if op == "stop_gradient":
            return f"{A(args[0])}.copy()" if _ndim(args[0]) > 0 else A(args[0])
        lib = LIBCALLS.get(op)
        if lib is not None and lib.py is not None:
            return lib.py(self, e, pat)
        if op == "argsort":
            return f"np.argsort({A(args[0])}, axis=-1, kind=\"stable\")"
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
        if op == "store_copy":
            self.mod.uses_rt = True
            return f"_rt.store_copy({A(args[0])})"
        # any other primitive: call its table implementation
        self.mod.uses_rt = True
        ptext = "".join(f", {k}={_py_value(v)}" for k, v in e.params)
        if "_TensorType(" in ptext or "_StoreType(" in ptext:
            self.mod.uses_types = True
        return f"_rt.impl({op!r})({', '.join(A(x) for x in args)}{ptext})"


def _np_dtype(d):
    from ...ir.types import np_dtype

    return np_dtype(d)


def _dtype_name(dt) -> str:
    from ...ir.types import dtype_of_np

    return dtype_of_np(dt)


def _promote_rt(x, y) -> str:
    """The dtype the table's binary impl casts to: Python constants count by
    their Python type (float -> f64, int -> i64, bool -> bool)."""
    from ...ir.types import promote

    def rt(a):
        if isinstance(a, Const) and not a.type.shape:
            return {bool: "bool", int: "i64", float: "f64"}[type(a.value)]
        return a.type.dtype

    return promote(rt(x), rt(y))
