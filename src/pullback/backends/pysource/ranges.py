"""Integer ranges for index checks: which dynamic indices are provably in range.

Contract (note [index-ranges] in docs/design.md): `Ranges(func)` reads the
definitions of the function's integer scalars. While the emitter prints a
`for` loop's body it calls `enter(index, bound)` and then `leave()`. Then
`within(i, n)` is True only if `0 <= i < n` holds for every execution of the
statement being printed; False means "not proved" and the check stays.

Proofs are interval arithmetic on integer affine forms (through `add`, `sub`,
`neg` and multiplication by a constant): an index of an enclosing loop lies in
`[0, bound - 1]`, and inside that loop a bound `max(u, 0)` equals `u` (the
body runs only when the bound is at least 1). Substituting these bounds,
each by the side its coefficient's sign asks for, innermost loop first (its
bound may name outer indices, which then cancel), must leave constants: so
``for j in range(max(n - (i + 1), 0)): A[i + 1 + j]`` is below n without
knowing i, and the reverse counters ``last - k`` of return sweeps are covered
the same way. Anything else is not proved.
"""
from __future__ import annotations

from ...ir.core import Const, Prim, Var
from ...ir.traverse import iter_lets
from ...ir.types import TensorType

_STEPS = 64


def _is_int(a) -> bool:
    t = a.type
    return isinstance(t, TensorType) and t.ndim == 0 and t.dtype in ("i64", "i32")


class Ranges:
    def __init__(self, func):
        self.defs: dict = {}
        for st in iter_lets(func.body):
            if len(st.pat) == 1 and isinstance(st.exp, Prim) and _is_int(st.pat[0]):
                self.defs[st.pat[0]] = st.exp
        self.loops: list = []   # (index, bound) of the enclosing for loops, outermost first

    def enter(self, index, bound) -> None:
        self.loops.append((index, bound))

    def leave(self) -> None:
        self.loops.pop()

    def within(self, i, n: int) -> bool:
        if not self.loops or not isinstance(i, Var) or not _is_int(i):
            return False
        form = self._lin(i)
        lo, hi = self._bound(form, low=True), self._bound(form, low=False)
        return lo is not None and hi is not None and 0 <= lo and hi < n

    # -- affine forms {atom: coefficient, 1: constant} -------------------------------
    def _lin(self, a, depth: int = 0) -> dict:
        if isinstance(a, Const):
            return {1: int(a.value)} if _is_int(a) else {a: 1}
        e = self.defs.get(a)
        if depth < 40 and e is not None:
            if e.op in ("add", "sub"):
                f, g = (self._lin(x, depth + 1) for x in e.args)
                return _plus(f, g if e.op == "add" else _scale(g, -1))
            if e.op == "neg":
                return _scale(self._lin(e.args[0], depth + 1), -1)
            if e.op == "mul":
                for c, y in ((e.args[0], e.args[1]), (e.args[1], e.args[0])):
                    if isinstance(c, Const) and _is_int(c):
                        return _scale(self._lin(y, depth + 1), int(c.value))
        return {a: 1}

    def _loop_bound(self, a):
        """The bound of the enclosing loop whose index is `a`, else None."""
        return next((b for x, b in self.loops if x == a), None)

    def _exact(self, a):
        """`u` for an atom `max(u, 0)` (or `max(0, u)`) that bounds an enclosing loop."""
        if not any(b == a for _, b in self.loops):
            return None
        e = self.defs.get(a)
        if e is not None and e.op == "maximum":
            x, y = e.args
            if isinstance(y, Const) and _is_int(y) and int(y.value) == 0:
                return x
            if isinstance(x, Const) and _is_int(x) and int(x.value) == 0:
                return y
        return None

    def _rank(self, a) -> int:
        if self._exact(a) is not None:
            return -1
        pos = next((k for k, (x, _) in enumerate(self.loops) if x == a), None)
        return len(self.loops) if pos is None else len(self.loops) - 1 - pos

    def _bound(self, form: dict, low: bool):
        """The least (`low`) or greatest value of `form`, a constant, or None."""
        form = dict(form)
        for _ in range(_STEPS):
            atoms = [a for a in form if a != 1]
            if not atoms:
                return form.get(1, 0)
            a = min(atoms, key=self._rank)   # exact bounds first, then indices innermost first
            c = form.pop(a)
            u = self._exact(a)
            if u is not None:                    # max(u, 0) inside the loop it bounds: exactly u
                form = _plus(form, _scale(self._lin(u), c))
                continue
            b = self._loop_bound(a)
            if b is None:
                return None
            if (c > 0) == low:                   # the index at its least: 0
                continue
            form = _plus(form, _scale(_plus(self._lin(b), {1: -1}), c))   # at its greatest: bound - 1
        return None


def _plus(f: dict, g: dict) -> dict:
    out = dict(f)
    for k, c in g.items():
        out[k] = out.get(k, 0) + c
    return {k: c for k, c in out.items() if c != 0 or k == 1}


def _scale(f: dict, s: int) -> dict:
    return {k: c * s for k, c in f.items() if c * s != 0 or k == 1}
