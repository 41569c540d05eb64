"""Vectorising maps: `vectorize(prog) -> prog` (note [vectorize] in docs/design.md).

Contract: a pure pass, run by the pysource and numba backends after
differentiation (so `pb.derivative_source` shows the maps the user wrote);
``PULLBACK_VECTORIZE=0`` in the environment turns it off. It returns an
equivalent program (equal up to rounding, and the edge numerics of
contractions, `passes.contract`) in which

- a `Map` whose lambda body has a batching rule for every statement
  (`passes.batching`: elementwise primitives, reductions, shape primitives,
  `index`/`index_update`/`take`/`take_add`, `matmul`; calls of non-recursive
  functions are inlined first) is replaced by whole-array primitives over
  its width: JAX's batching, with a leading batch axis. Statements that do not
  depend on the iteration are hoisted out unchanged. An accumulator's update
  becomes one update after the map: `add` of the batched contribution summed
  over the batch, `index_update` with the sum when its index does not vary
  along the map, and a scatter-add (`take_add`) when it does;
- maps nest: the inner map is vectorised first, then the outer one;
- after batching, contractions (`passes.contract`) become `matmul`s, so a
  product of nested maps never builds its n^3 intermediate; and
- a map stays a map (a loop) when some statement has no rule (loops and ifs
  that depend on the iteration, calls of recursive functions, stores,
  callbacks, primitives without a batching rule), when its width is 0, or
  when the batched code would hold an intermediate larger than `FACTOR`
  times the map's inputs and outputs (and larger than `FLOOR` elements): a
  loop uses per-iteration memory, whole-array code per-map memory.

Contractions are recognised in every body, not only in vectorised maps.
"""
from __future__ import annotations

import dataclasses
import os

from ..ir.core import Apply, Body, Let, Map, Prim, Prog, Var
from ..ir.names import NameSupply
from ..ir.traverse import all_names, call_graph, dce, free_vars, map_exp, rename_body, substitute_exp
from ..ir.types import TensorType
from .batching import Bail, Batcher
from .contract import contract_body
from .inline import _recursive

FACTOR = 4          # a batched intermediate may hold this many times the map's inputs + outputs
FLOOR = 1 << 16     # ... or this many elements, whichever is more
MAX_INLINE = 400    # statements of a callee inlined into a map body


def enabled() -> bool:
    return os.environ.get("PULLBACK_VECTORIZE", "1").strip().lower() not in ("0", "false", "no", "off")


def vectorize(prog: Prog, keep=frozenset()) -> Prog:
    """`prog` with its maps vectorised where that is possible and pays (module docstring).
    `keep`: ids of map statements that stay maps themselves (the numba backend's
    parallel maps); their bodies are still vectorised."""
    if not enabled():
        return prog
    graph = call_graph(prog)
    funcs = {f.name: f for f in prog.funcs}
    recursive = {f.name for f in prog.funcs if _recursive(f.name, graph)}
    out = []
    for f in prog.funcs:
        ctx = _Ctx(NameSupply(all_names(f)), funcs, recursive, keep)
        body = _body(f.body, ctx)
        body = contract_body(body, ctx.supply)
        out.append(f if body is f.body else dataclasses.replace(f, body=body))
    if all(a is b for a, b in zip(out, prog.funcs)):
        return prog
    return prog.with_funcs(out)


def becomes_blas(prog: Prog, st: Let) -> bool:
    """Whether the map statement `st` of `prog` vectorises into code with a
    `matmul` (a contraction run by BLAS): the numba backend then prefers that to
    running the map's iterations on several cores (note [numba-parallel])."""
    if not enabled():
        return False
    graph = call_graph(prog)
    ctx = _Ctx(NameSupply(all_names(prog)), {f.name: f for f in prog.funcs},
               {f.name for f in prog.funcs if _recursive(f.name, graph)})
    e = st.exp
    inner = _body(e.lam.body, ctx)
    if inner is not e.lam.body:
        st = Let(st.pat, dataclasses.replace(e, lam=dataclasses.replace(e.lam, body=inner)), st.loc)
    new = _vectorize_map(st, ctx)
    return new is not None and any(isinstance(s.exp, Prim) and s.exp.op == "matmul" for s in new[0])


@dataclasses.dataclass
class _Ctx:
    supply: NameSupply
    funcs: dict
    recursive: set
    keep: frozenset = frozenset()


def _body(body: Body, ctx: _Ctx) -> Body:
    """`body` with its maps (at any depth) vectorised; the same object when nothing changed."""
    stmts: list[Let] = []
    subst: dict = {}
    changed = False
    for st in body.stmts:
        e = substitute_exp(st.exp, subst) if subst else st.exp
        if isinstance(e, Map):
            lam_body = _body(e.lam.body, ctx)
            if lam_body is not e.lam.body:
                e = dataclasses.replace(e, lam=dataclasses.replace(e.lam, body=lam_body))
                changed = True
            new = None if id(st) in ctx.keep else _vectorize_map(Let(st.pat, e, st.loc), ctx)
            if new is not None:
                new_stmts, results = new
                stmts.extend(new_stmts)
                subst.update(zip(st.pat, results))
                changed = True
                continue
        elif not isinstance(e, (Prim, Apply)):
            flag = [False]

            def scope(binders, b):
                nb = _body(b, ctx)
                flag[0] |= nb is not b
                return binders, nb

            e2 = map_exp(e, lambda a: a, scope)
            if flag[0]:
                e = e2
        if e is not st.exp:
            changed = True
            st = Let(st.pat, e, st.loc)
        stmts.append(st)
    if not changed:
        return body
    return Body(tuple(stmts), tuple(subst.get(a, a) if isinstance(a, Var) else a for a in body.result))


# -- one map ----------------------------------------------------------------------------

def _vectorize_map(st: Let, ctx: _Ctx):
    """(statements, atoms for the map's results) replacing the map `st`, or None."""
    e: Map = st.exp
    n = int(e.width.value)
    if n == 0:
        return None
    body = _inline_calls(e.lam.body, ctx)
    if body is None:
        return None
    body = contract_body(body, ctx.supply)
    bt = Batcher(ctx.supply, n, st.loc)
    try:
        results = bt.run(e, body)
    except Bail:
        return None
    out = contract_body(Body(tuple(bt.b.stmts), tuple(results)), ctx.supply)
    out = dce(out)
    if _too_big(out, e, st):
        return None
    return list(out.stmts), list(out.result)


def _too_big(out: Body, e: Map, st: Let) -> bool:
    def size(a):
        return a.type.size if isinstance(getattr(a, "type", None), TensorType) else 1

    free = [v for v in free_vars(e.lam.body) if isinstance(v.type, TensorType)]
    io = sum(size(a) for a in e.arrays) + sum(size(a) for a in e.accs) + sum(size(v) for v in free)
    io += sum(size(v) for v in st.pat)
    budget = max(FACTOR * io, FLOOR)
    return any(size(v) > budget for s in out.stmts for v in s.pat)


def _inline_calls(body: Body, ctx: _Ctx):
    """`body` with calls of non-recursive functions replaced by renamed copies of
    their bodies (so the batching sees their statements); None when a callee is
    recursive or too large."""
    if not any(isinstance(s.exp, Apply) for s in body.stmts):
        return body
    stmts: list[Let] = []
    subst: dict = {}
    for st in body.stmts:
        e = substitute_exp(st.exp, subst) if subst else st.exp
        if isinstance(e, Apply):
            callee = ctx.funcs.get(e.func)
            if callee is None or e.func in ctx.recursive or _count(callee.body) > MAX_INLINE:
                return None
            copy = rename_body(callee.body, ctx.supply, dict(zip(callee.params, e.args)))
            copy = _inline_calls(copy, ctx)
            if copy is None:
                return None
            stmts.extend(Let(s.pat, s.exp, s.loc or st.loc) for s in copy.stmts)
            subst.update(zip(st.pat, copy.result))
            continue
        stmts.append(Let(st.pat, e, st.loc))
    return Body(tuple(stmts), tuple(subst.get(a, a) if isinstance(a, Var) else a for a in body.result))


def _count(body: Body) -> int:
    from ..ir.traverse import iter_lets

    return sum(1 for _ in iter_lets(body))

