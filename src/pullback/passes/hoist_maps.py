"""Loop-invariant code motion for maps: `hoist_maps(prog) -> prog` (note [hoist-maps]
in docs/design.md).

Contract: a pure pass, run by the pysource and numba backends just after
`passes.vectorize`, on the maps that stayed maps (loops);
``PULLBACK_HOIST_MAPS=0`` (or ``PULLBACK_VECTORIZE=0``) turns it off. It
returns an equivalent program in which, for each `Map` of static width > 0
(at any depth, inner maps first):

- a top-level statement of the lambda body that reads nothing the iteration
  binds (its index, elements, accumulators, or a value computed from them,
  transitively) and that is pure (no store primitive, no callback, no call of
  a function that has one; only `Prim`, `If`, `Loop`, `Map` and `Apply`
  statements) runs once, in front of the map, under its own name (SSA): its
  value becomes a free variable of the body, read only (the backends copy a
  free array before updating it, as for any outer value);
- a top-level call in the body that has an iteration-invariant argument is
  inlined first (a renamed copy of a non-recursive callee of at most
  `MAX_INLINE` statements, `MAX_BODY` in all, `MAX_COPIES` over the program's
  maps), so that its invariant part can move: `pb.vmap` of `pb.jvp` computes
  the primal once, as JAX's batched jvp does, instead of once per direction.
  The inlined body is kept only when its hoisted statements carry at least
  `MIN_SHARE` of its work (the primitives' cost rules); otherwise the calls
  stay and only the body's own statements move;
- errors are unchanged: the width is static and > 0, so each moved statement
  runs in iteration 0 anyway with the same operands; a statement that can
  raise (an index or gather with a computed index, integer `//`, `%`, `**`,
  a decomposition, a call, a `while` loop, which may not end) moves only when
  no statement before it that stays in the body can raise, or when a moved
  statement before it makes the very same checks (the same index variables
  against the same sizes), so the first error of the map is the same error,
  at the same place (`_Checks`);
- memory: the moved values the body reads live for the whole map; a map whose
  moved values would hold more than `vectorize.FACTOR` times its inputs and
  outputs (and more than `vectorize.FLOOR` elements) is left as it is.
"""
from __future__ import annotations

import dataclasses
import os

from ..ir.core import Apply, Body, Const, If, Lambda, Let, Loop, Map, Prim, Prog, Var, WhileForm
from ..ir.names import NameSupply
from ..ir.prims import TABLE
from ..ir.traverse import all_names, call_graph, dce, free_vars, iter_lets, map_bodies, rename_body, substitute_exp
from ..ir.typecheck import maybe_check
from ..ir.types import StoreType, TensorType
from .inline import _recursive
from .simplify import _EFFECTS
from .vectorize import FACTOR, FLOOR
from .vectorize import enabled as _vectorize_enabled

MAX_INLINE = 2000   # statements of one callee inlined into a map body
MAX_BODY = 4000     # statements of a map body after inlining
MAX_COPIES = 8000   # statements inlined into map bodies in all, per program (compile time)
MIN_SHARE = 0.05    # inlined calls are kept only when this share of the body's work moves out

_IMPURE = frozenset(_EFFECTS) | {"callback", "revolve_split"}
# rows that can raise whatever their operands (singular or non-definite matrices, duplicates)
_RAISES = frozenset({"solve", "cholesky", "qr", "eigh", "svd", "pinv", "unique_indices"})
_INT_CHECKED = frozenset({"mod", "floordiv", "pow"})
_EMPTY_RAISES = frozenset({"max", "min", "argmax", "argmin"})


def enabled() -> bool:
    off = os.environ.get("PULLBACK_HOIST_MAPS", "1").strip().lower() in ("0", "false", "no", "off")
    return _vectorize_enabled() and not off


def hoist_maps(prog: Prog) -> Prog:
    """`prog` with the invariant statements of its maps moved in front of them."""
    if not enabled():
        return prog
    graph = call_graph(prog)
    funcs = {f.name: f for f in prog.funcs}
    ctx = _Ctx(funcs, {n for n in funcs if _recursive(n, graph)}, _impure_funcs(prog, graph))
    out = []
    for f in prog.funcs:
        if not any(isinstance(st.exp, Map) for st in iter_lets(f.body)):
            out.append(f)
            continue
        ctx.supply, ctx.changed = NameSupply(all_names(f)), False
        body = map_bodies(f.body, lambda b: _body(b, ctx))
        out.append(dataclasses.replace(f, body=body) if ctx.changed else f)
    if all(a is b for a, b in zip(out, prog.funcs)):
        return prog
    return maybe_check(prog.with_funcs(out), "hoist_maps")


@dataclasses.dataclass
class _Ctx:
    funcs: dict
    recursive: set
    impure: set
    supply: NameSupply | None = None
    changed: bool = False
    copied: int = 0     # statements inlined so far (`MAX_COPIES`)


def _impure_funcs(prog: Prog, graph: dict) -> set:
    """Functions that run a store primitive or a callback, directly or through calls."""
    bad = {f.name for f in prog.funcs
           if any(isinstance(st.exp, Prim) and st.exp.op in _IMPURE for st in iter_lets(f.body))}
    changed = True
    while changed:
        changed = False
        for name, callees in graph.items():
            if name not in bad and callees & bad:
                bad.add(name)
                changed = True
    return bad


def _body(body: Body, ctx: _Ctx) -> Body:
    """`body` with the invariant statements of its maps (top level) in front of them."""
    if not any(isinstance(st.exp, Map) for st in body.stmts):
        return body
    stmts: list[Let] = []
    changed = False
    for st in body.stmts:
        new = _hoist(st, ctx) if isinstance(st.exp, Map) else None
        if new is None:
            stmts.append(st)
            continue
        stmts.extend(new)
        changed = ctx.changed = True
    return Body(tuple(stmts), body.result) if changed else body


# -- one map ----------------------------------------------------------------------------

def _hoist(st: Let, ctx: _Ctx):
    """The statements replacing the map statement `st` (moved ones, then the map), or None."""
    e: Map = st.exp
    if not isinstance(e.width, Const) or int(e.width.value) <= 0:
        return None
    inlined = _inline_invariant_calls(e, ctx)
    growth = 0
    if inlined is not None:
        growth = _count(inlined) - _count(e.lam.body)
        if ctx.copied + growth > MAX_COPIES:
            inlined = None
    for body in ([inlined, e.lam.body] if inlined is not None else [e.lam.body]):
        moved, kept = _split(body, set(e.lam.params), ctx)
        work = _work(moved)
        if not moved or work == 0:
            continue
        if body is inlined and work < MIN_SHARE * _work(body.stmts):
            continue
        if _too_big(moved, kept, e, st):
            continue
        if body is inlined:
            ctx.copied += growth
        lam = Lambda(e.lam.params, kept)
        return moved + [Let(st.pat, dataclasses.replace(e, lam=lam), st.loc)]
    return None


def _split(body: Body, variant: set, ctx: _Ctx):
    """(moved statements, the body left) for a lambda body whose parameters are
    `variant` (module docstring: the conditions, and `_Checks` for errors)."""
    variant = set(variant)
    moved: list[Let] = []
    kept: list[Let] = []
    before, in_moved = _Checks(), _Checks()   # checks made by earlier statements / earlier moved ones
    risky_kept = False
    for st in body.stmts:
        checks = _checks_of(st.exp, ctx)
        ok = _pure(st, ctx) and not (free_vars(st.exp) & variant)
        if ok and risky_kept and not in_moved.covers(checks):
            ok = False
        if ok:
            moved.append(st)
            in_moved.add(checks)
        else:
            kept.append(st)
            variant.update(st.pat)
            if not before.covers(checks):
                risky_kept = True
        before.add(checks)
    moved, kept = _sink_fresh(moved, kept, body.result)
    return moved, Body(tuple(kept), body.result)


def _sink_fresh(moved, kept, result):
    """Fresh arrays (`full`) read only by statements that stay in the body stay
    there too: the body updates them in place, where a moved one is copied first."""
    used_by_moved = set()
    for st in moved:
        used_by_moved |= free_vars(st.exp)
    sink = {st.pat[0] for st in moved
            if isinstance(st.exp, Prim) and st.exp.op == "full" and st.pat[0] not in used_by_moved
            and st.pat[0] not in result}
    if not sink:
        return moved, kept
    return [st for st in moved if st.pat[0] not in sink], [st for st in moved if st.pat[0] in sink] + kept


def _pure(st: Let, ctx: _Ctx) -> bool:
    if any(isinstance(v.type, StoreType) for v in st.pat):
        return False
    for s in [st, *_nested(st.exp)]:
        e = s.exp
        if isinstance(e, Prim):
            if e.op in _IMPURE or e.op not in TABLE:
                return False
        elif isinstance(e, Apply):
            if e.func in ctx.impure or e.func not in ctx.funcs:
                return False
        elif not isinstance(e, (If, Loop, Map)):
            return False
    return True


def _nested(e):
    from ..ir.traverse import exp_scopes

    for _, b in exp_scopes(e):
        yield from iter_lets(b)


def _too_big(moved, kept: Body, e: Map, st: Let) -> bool:
    def size(v):
        return v.type.size if isinstance(getattr(v, "type", None), TensorType) else 1

    live = free_vars(kept) & {v for s in moved for v in s.pat}
    free = [v for v in free_vars(e.lam.body) if isinstance(v.type, TensorType)]
    io = sum(size(a) for a in e.arrays) + sum(size(a) for a in e.accs) + sum(size(v) for v in free)
    io += sum(size(v) for v in st.pat)
    return sum(size(v) for v in live) > max(FACTOR * io, FLOOR)


def _work(stmts) -> int:
    """Arithmetic work of statements by the primitives' cost rules (nested bodies once)."""
    total = 0
    for st in stmts:
        for s in [st, *_nested(st.exp)]:
            if isinstance(s.exp, Prim) and s.exp.op in TABLE:
                row = TABLE.get(s.exp.op)
                if row.cost is not None:
                    try:
                        total += int(row.cost([a.type for a in s.exp.args], [v.type for v in s.pat], **s.exp.p))
                    except Exception:  # noqa: BLE001 - a cost rule that does not know this form
                        total += 1
    return total


# -- inlining calls with invariant arguments ----------------------------------------------

def _inline_invariant_calls(e: Map, ctx: _Ctx):
    """The lambda body with its top-level calls that have an invariant argument (and
    are not moved whole) replaced by renamed copies of their callees, repeatedly; None
    when there is no such call or the body would grow beyond `MAX_BODY`."""
    body = e.lam.body
    params = set(e.lam.params)
    changed = False
    for _ in range(8):
        moved, kept = _split(body, params, ctx)
        inv = {v for s in moved for v in s.pat}
        bound = _bound(body, params)
        targets = {id(s) for s in kept.stmts if isinstance(s.exp, Apply) and _inlinable(s.exp, ctx)
                   and any(isinstance(a, Var) and (a in inv or a not in bound) for a in s.exp.args)}
        if not targets:
            break
        stmts: list[Let] = []
        subst: dict = {}
        for s in body.stmts:
            x = substitute_exp(s.exp, subst) if subst else s.exp
            if id(s) in targets:
                callee = ctx.funcs[x.func]
                copy = rename_body(callee.body, ctx.supply, dict(zip(callee.params, x.args)))
                stmts.extend(Let(c.pat, c.exp, c.loc or s.loc) for c in copy.stmts)
                subst.update(zip(s.pat, copy.result))
                continue
            stmts.append(s if x is s.exp else Let(s.pat, x, s.loc))
        body = dce(Body(tuple(stmts), tuple(subst.get(a, a) if isinstance(a, Var) else a for a in body.result)))
        changed = True
        if _count(body) > MAX_BODY:
            return None
    return body if changed else None


def _inlinable(a: Apply, ctx: _Ctx) -> bool:
    f = ctx.funcs.get(a.func)
    return (f is not None and a.func not in ctx.recursive and not f.donated
            and _count(f.body) <= MAX_INLINE)


def _count(body: Body) -> int:
    return sum(1 for _ in iter_lets(body))


def _bound(body: Body, params: set) -> set:
    return params | {v for s in iter_lets(body) for v in s.pat}


# -- run-time checks ----------------------------------------------------------------------

class _Checks:
    """A set of run-time checks, each (kind, size, variable): `covers(c)` when every
    check of `c` is in the set (then they cannot fail after the set's passed).
    `c` is None for a statement that may raise in ways no such check describes."""

    def __init__(self):
        self.seen: set = set()

    def covers(self, checks) -> bool:
        return checks is not None and checks <= self.seen

    def add(self, checks) -> None:
        if checks:
            self.seen |= checks


def _checks_of(e, ctx: _Ctx):
    """The checks statement expression `e` makes (a frozenset, empty when it cannot
    raise), or None when it may raise otherwise (or may not terminate)."""
    if isinstance(e, Prim):
        return _prim_checks(e)
    if isinstance(e, Loop) and isinstance(e.form, WhileForm):
        return None
    if isinstance(e, Apply):
        return None
    if isinstance(e, (If, Loop, Map)):
        for s in _nested(e):
            c = _checks_of(s.exp, ctx)
            if c is None or c:
                return None
        return frozenset()
    return None


def _prim_checks(e: Prim):
    op, args = e.op, e.args
    if op in _RAISES:
        return None
    if op in _EMPTY_RAISES:
        return None if args[0].type.size == 0 else frozenset()
    if op in _INT_CHECKED:
        x, y = args
        if x.type.dtype not in ("i64", "bool") or y.type.dtype not in ("i64", "bool"):
            return frozenset()
        kind = "nonneg" if op == "pow" else "nonzero"
        if isinstance(y, Const):
            import numpy as np

            ok = np.all(np.asarray(y.value) >= 0) if op == "pow" else np.all(np.asarray(y.value) != 0)
            return frozenset() if ok else None
        return frozenset({(kind, 0, y)})
    if op in ("index", "index_update"):
        x, idx = args[0], args[1:] if op == "index" else args[2:]
        out, it = set(), iter(idx)
        for n, s in zip(x.type.shape, e.p["spec"]):
            if s[0] not in ("d", "ds"):
                continue
            i = next(it)
            k = s[1] if s[0] == "ds" else 0
            if isinstance(i, Const):
                ok = (-n <= i.value < n) if s[0] == "d" else (0 <= i.value <= n - k)
                if not ok:
                    return None
                continue
            out.add((s[0], (n, k), i))
        return frozenset(out)
    if op in ("take", "take_add"):
        import numpy as np

        n, i = args[0].type.shape[e.p["axis"]], args[1]
        if isinstance(i, Const):
            v = np.asarray(i.value)
            return frozenset() if v.size == 0 or (v.min() >= -n and v.max() < n) else None
        return frozenset({("take", (n, 0), i)})
    return frozenset()
