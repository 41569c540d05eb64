"""Assignment statements and targets of the staging interpreter.

Contract: `Assignments` is a mixin of `staging.Interp`: `s_Assign`,
`s_AnnAssign`, `s_AugAssign` and `assign(target, value)` bind names, unpack
tuples/lists/arrays and store into subscripts (traced arrays get a functional
`index_update`; concrete lists, dicts and arrays are updated in Python). A
value computed by the statement takes the user's variable name in the IR
(`_rename`).
"""
from __future__ import annotations

import ast
import re

import numpy as np

from ..errors import StagingError, UnsupportedSyntaxError
from ..ir.core import Let
from . import alias, ops, views
from .masks import Masked
from .values import ConcreteNeeded, Poisoned, Traced


class Assignments:
    def s_Assign(self, s):
        b, start = self.b, len(self.b.stmts)
        v = self.eval(s.value)
        if len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) and isinstance(v, Traced):
            v = self._rename(v, s.targets[0].id, b, start)
        for t in s.targets:
            self.assign(t, v)

    def s_AnnAssign(self, s):
        if s.value is not None:
            self.assign(s.target, self.eval(s.value))

    def s_AugAssign(self, s):
        b, start = self.b, len(self.b.stmts)
        rhs = self.eval(s.value)
        t = s.target
        if isinstance(t, ast.Name):
            old = self.lookup(t.id)
            v = self.binop(type(s.op), old, rhs)
            if isinstance(v, Traced):
                v = self._rename(v, t.id, b, start)
            if _in_place(old, v):
                # `a += v` updates the array itself: every alias of it sees the change
                self.update_in_place(t, old, v)
            else:
                self.assign(t, v)
        elif isinstance(t, ast.Subscript):
            base = self.eval(t.value)
            key = self.eval(t.slice)
            if _is_array(base) and (_has_traced(key) or isinstance(rhs, Traced) or isinstance(base, Traced)):
                if isinstance(s.op, (ast.Add, ast.Sub)):
                    v = rhs if isinstance(s.op, ast.Add) else (
                        ops.unary(self, "neg", rhs) if isinstance(rhs, Masked) else self.unop(ast.USub, rhs))
                    new = ops.setitem(self, base, key, v, mode="add")
                else:
                    cur = ops.getitem(self, base, key)
                    new = ops.setitem(self, base, key, self.binop(type(s.op), cur, rhs))
                self.update_in_place(t.value, base, new)
            else:
                cur = self.subscript(base, key)
                self.store_subscript(t, base, key, self.binop(type(s.op), cur, rhs))
        else:
            raise UnsupportedSyntaxError("augmented assignment to this target is not supported")

    def assign(self, t, v):
        if isinstance(t, ast.Name):
            self.frame.vars[t.id] = v
        elif isinstance(t, (ast.Tuple, ast.List)):
            self.unpack(t.elts, v)
        elif isinstance(t, ast.Subscript):
            base = self.eval(t.value)
            key = self.eval(t.slice)
            self.store_subscript(t, base, key, v)
        elif isinstance(t, ast.Starred):
            raise UnsupportedSyntaxError("starred assignment target outside a tuple")
        elif isinstance(t, ast.Attribute):
            raise UnsupportedSyntaxError("assigning to attributes is not supported in staged code",
                                         hint="use local variables, or return the new value")
        else:
            raise UnsupportedSyntaxError(f"assignment to {type(t).__name__} is not supported")

    def unpack(self, elts, v):
        if isinstance(v, Traced):
            if v.ndim == 0:
                raise StagingError("cannot unpack a traced scalar")
            items = [ops.getitem(self, v, k) for k in range(v.shape[0])]
        elif isinstance(v, (Poisoned,)):
            raise v.error()
        else:
            items = list(v)
        stars = [i for i, e in enumerate(elts) if isinstance(e, ast.Starred)]
        if stars:
            k = stars[0]
            nafter = len(elts) - k - 1
            if len(items) < len(elts) - 1:
                raise StagingError(f"not enough values to unpack (expected at least {len(elts) - 1}, got {len(items)})")
            for e, x in zip(elts[:k], items[:k]):
                self.assign(e, x)
            self.assign(elts[k].value, items[k:len(items) - nafter])
            for e, x in zip(elts[k + 1:], items[len(items) - nafter:]):
                self.assign(e, x)
            return
        if len(items) != len(elts):
            raise StagingError(f"cannot unpack {len(items)} values into {len(elts)} targets")
        for e, x in zip(elts, items):
            self.assign(e, x)

    def store_subscript(self, t, base, key, v):
        if _is_array(base) and (isinstance(base, Traced) or _has_traced(key) or isinstance(v, Traced)):
            self.update_in_place(t.value, base, ops.setitem(self, base, key, v))
        elif isinstance(base, np.ndarray):
            new = base.copy()
            new[key] = v
            self.update_in_place(t.value, base, new)
        elif isinstance(base, (list, dict)):
            if _has_traced(key):
                raise ConcreteNeeded("a Python list/dict is indexed with a traced value",
                                     hint="use an array (np.array/np.stack) instead of a list, or make the index static")
            base[key] = v
        elif isinstance(base, tuple):
            raise StagingError("tuples cannot be assigned to", hint="use a list or an array")
        else:
            raise UnsupportedSyntaxError(f"item assignment on {type(base).__name__} is not supported")

    def update_in_place(self, target, old, new):
        """The array `old` (the value of the expression `target`) was updated in place to `new`:
        rebind every reference to it (`alias.replace`), then store it through `target` when that is
        a subscript or attribute (`x[0][1] = v` writes the row back into `x`)."""
        alias.replace(self, old, new)
        if isinstance(target, ast.Name):
            if self._local_frame(target.id) is None:
                self.frame.vars[target.id] = new
        elif isinstance(target, ast.Subscript) and _is_array(self.eval(target.value)):
            # `x[0][1] = v`: x[0] is a view of x (written back by `alias.replace`) or, for an
            # integer-array index, a copy that NumPy does not write back (Note [view-mutation])
            pass
        else:
            self.assign(target, new)

    def _local_frame(self, name):
        f = self.frame
        while f is not None:
            if name in f.vars:
                return f
            f = f.parent
        return None

    def _rename(self, v, name, b, start):
        """Give the value just computed by this statement the user's variable name."""
        a = v.atom
        if b is not self.b:
            return v
        stmts = self.b.stmts
        if len(stmts) > start and stmts[-1].pat == (a,) and _is_temp(a.name):
            from ..ir.core import Var
            nv = Var(self.b.supply.fresh(_hint(name)), a.type)
            last = stmts[-1]
            stmts[-1] = Let((nv,), last.exp, last.loc)
            out = Traced(nv)
            ops.copy_offset(self, a, nv)
            rec = views.record(self, v)
            if rec is not None:  # `row = A[0]`: the renamed value is the view
                views.register(self, out, rec.base, rec.kind, rec.data, rec.contig)
            amb = self.ambiguous.get(id(v))
            if amb is not None and amb[0] is v:
                alias.mark_ambiguous(self, [out], amb[1])
            return out
        return v


def _in_place(old, new):
    """Whether `old op= rhs` (result `new`) updates the array `old` in place, as NumPy does."""
    if isinstance(old, np.ndarray):
        return isinstance(new, (Traced, np.ndarray)) and np.shape(new) == old.shape and \
            np.dtype(new.dtype) == old.dtype
    return isinstance(old, Traced) and old.ndim > 0 and isinstance(new, Traced) and new.type == old.type


def _is_array(v):
    return isinstance(v, (Traced, np.ndarray))


def _has_traced(key):
    if isinstance(key, Traced):
        return True
    if isinstance(key, tuple):
        return any(isinstance(k, Traced) or (isinstance(k, slice) and any(
            isinstance(p, Traced) for p in (k.start, k.stop, k.step))) for k in key)
    if isinstance(key, slice):
        return any(isinstance(p, Traced) for p in (key.start, key.stop, key.step))
    return False


def _is_temp(name):
    return re.fullmatch(r"t(_\d+)?", name) is not None


def _hint(name: str) -> str:
    if name.startswith("__pb_"):
        if name.startswith("__pb_brk"):
            return "broke"
        if name.startswith("__pb_cont"):
            return "skip"
        if name == "__pb_rf":
            return "returned"
        if name == "__pb_rv":
            return "retval"
    return name if name.isidentifier() else "t"
