"""Which array parameters of a compiled entry are handed to numba C-contiguous
(note [contiguous-args]).

numba compiles a function once per layout of its array arguments (C, F, or 'A' for
any strides), and pullback's loops are written in C order: on an F-ordered or
strided argument the same code runs with strided accesses that LLVM does not
vectorise (lse's gradient on `x[::2]`: 8x the time on a C-ordered copy), after a
second compile of the whole module. A parameter that the program reads whole is
better copied to C order at the call: the copy reads each element once, as the
program does anyway, and the compiled C version serves every layout.

Contract:
- `contiguous_params(prog, func) -> tuple[bool, ...]`: per parameter of `func`
  (a function of the lowered program), whether the program *certainly reads it
  whole* on some path, so that a C-ordered copy costs at most a constant factor
  of the program's own reads: an array parameter read by any primitive other than
  `index` and `take`, or stacked by a `Map`, directly or through an alias (a
  `transpose`, `reshape`, `broadcast_to` or `stop_gradient` of it, an `index` or
  `take` whose result has at least half its elements, a loop parameter it starts,
  or the parameter of a called function that reads that parameter whole). An
  array only indexed in small parts (`X[i]` of a large `X`) is not: copying it
  would cost its whole size per call for a few elements.
- `SMALL_COPY`: an array argument of at most this many elements is copied to C
  order whatever the program reads of it (about 0.1-0.3 us), rather than compiled
  for again in its layout (seconds).
- Conservative in that direction: an alias it cannot follow (an `If`'s result,
  a function called recursively) does not make the parameter read whole.
"""
from __future__ import annotations

from ..ir.core import Apply, Loop, Map, Prim, Var
from ..ir.traverse import exp_scopes

SMALL_COPY = 1024
_ALIASES = frozenset({"transpose", "reshape", "broadcast_to", "stop_gradient"})
_PARTS = frozenset({"index", "take"})


def _size(t) -> int:
    n = 1
    for d in t.shape:
        n *= int(d)
    return n


def contiguous_params(prog, func) -> tuple:
    memo: dict = {}

    def whole(f, k: int, active: frozenset) -> bool:
        key = (f.name, k)
        if key in memo:
            return memo[key]
        if key in active:
            return False   # a recursive call: not followed
        p = f.params[k]
        out = bool(getattr(p.type, "shape", ())) and _reads(f.body, {p}, _size(p.type), active | {key})
        memo[key] = out
        return out

    def _reads(body, names: set, size: int, active) -> bool:
        for st in body.stmts:
            e = st.exp
            if isinstance(e, Prim):
                if not any(isinstance(a, Var) and a in names for a in e.args):
                    continue
                if e.op in _ALIASES:
                    names.update(st.pat)
                elif e.op in _PARTS:
                    if st.pat and 2 * _size(st.pat[0].type) >= size:
                        names.update(st.pat)   # most of it: as good as whole
                else:
                    return True
            elif isinstance(e, Apply):
                callee = prog.func(e.func)
                if any(isinstance(a, Var) and a in names and whole(callee, i, active) for i, a in enumerate(e.args)):
                    return True
            elif isinstance(e, Map):
                if any(isinstance(a, Var) and a in names for a in e.arrays):
                    return True
            elif isinstance(e, Loop):
                names.update(q for q, a in zip(e.params, e.init) if isinstance(a, Var) and a in names)
            for _, b in exp_scopes(e):
                if _reads(b, names, size, active):
                    return True
        return False

    return tuple(whole(func, k, frozenset()) for k in range(len(func.params)))
