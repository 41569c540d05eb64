"""Which array parameters of a compiled entry are handed to numba C-contiguous
(note [contiguous-args]).

numba compiles a function once per layout of its array arguments (C, F, or 'A' for
any strides), and pullback's loops are written in C order: on an F-ordered or
strided argument the same code runs with strided accesses that LLVM does not
vectorise (lse's gradient on `x[::2]`: 5x the time on a C-ordered copy, its
primal 9x), after a second compile of the whole module. Where the program does
enough work per element of an argument that it reads whole, a C-ordered copy at
the call costs little next to it, and the compiled C version serves every layout.

Contract:
- `contiguous_params(prog, func) -> tuple[bool, ...]`: per parameter of `func`
  (a function of the lowered program), whether the entry copies a non-C-ordered
  array argument to C order: an array of at most `SMALL_COPY` elements always
  (a copy of 0.1-0.3 us against a second compile of seconds); a larger one
  where the program certainly reads it whole on some path and its estimated
  work (`numba_parallel.work`, a transcendental function counting `HEAVY` per
  element) is at least `COPY_WORK` per element of the array. A copy reads and
  writes each element once: for a program that does little more (a sum, a few
  products) it costs as much as the strided loops it would replace.
- `read_whole(prog, func) -> tuple[bool, ...]`, per parameter, *read whole*: an
  array parameter read by any primitive other than `index` and `take`, or
  stacked by a `Map`, directly or through an alias (a
  `transpose`, `reshape`, `broadcast_to` or `stop_gradient` of it, an `index` or
  `take` whose result has at least half its elements, a loop parameter it starts,
  or the parameter of a called function that reads that parameter whole). An
  array only indexed in small parts (`X[i]` of a large `X`) is not: copying it
  would cost its whole size per call for a few elements. Conservative in that
  direction: an alias it cannot follow (an `If`'s result, a function called
  recursively) does not make the parameter read whole.
"""
from __future__ import annotations

from ..ir.core import Apply, Loop, Map, Prim, Var
from ..ir.traverse import exp_scopes

SMALL_COPY = 1024
COPY_WORK = 6
HEAVY = 8
_TRANSCENDENTAL = frozenset({"exp", "expm1", "log", "log1p", "sin", "cos", "tan", "tanh", "logistic", "erf",
                             "erfc", "erfinv", "gamma", "gammaln", "polygamma", "log_ndtr", "pow", "atan2"})
_ALIASES = frozenset({"transpose", "reshape", "broadcast_to", "stop_gradient"})
_PARTS = frozenset({"index", "take"})


def _size(t) -> int:
    n = 1
    for d in t.shape:
        n *= int(d)
    return n


def _weighted(e, pat) -> int:
    from .numba_parallel import _row_cost

    return _row_cost(e, pat) * (HEAVY if e.op in _TRANSCENDENTAL else 1)


def contiguous_params(prog, func) -> tuple:
    """See the module docstring."""
    from .numba_parallel import work

    total = work(func.body, prog, cost=_weighted)
    whole = read_whole(prog, func)
    sizes = [_size(p.type) if getattr(p.type, "shape", ()) else None for p in func.params]
    return tuple(n is not None and (n <= SMALL_COPY or (w and total >= COPY_WORK * n))
                 for n, w in zip(sizes, whole))


def read_whole(prog, func) -> tuple:
    """Per parameter of `func`: an array the program certainly reads whole on some path
    (module docstring)."""
    memo: dict = {}

    def whole(f, k: int, active: frozenset) -> bool:
        key = (f.name, k)
        if key in memo:
            return memo[key]
        if key in active:
            return False   # a recursive call: not followed
        p = f.params[k]
        out = bool(getattr(p.type, "shape", ())) and reads(f.body, {p}, _size(p.type), active | {key})
        memo[key] = out
        return out

    def reads(body, names: set, size: int, active) -> bool:
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
                if reads(b, names, size, active):
                    return True
        return False

    return tuple(whole(func, k, frozenset()) for k in range(len(func.params)))
