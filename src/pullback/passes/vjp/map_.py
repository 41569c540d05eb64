"""Maps in reverse mode: the vjp of a map is a map of the lambda's vjp.

Contract (note [combinators] in docs/design.md): the forward sweep keeps the
primal map as it is and saves nothing. `rev(ctx, b, st, adj)` emits one
`Map` over the same width that, per iteration, re-executes the lambda's
forward sweep (Futhark's redundant execution) and runs its return sweep:

- the cotangents of the stacked results are mapped arrays of the reverse map;
  the adjoints of the elements are its stacked results, which become the
  adjoints of the mapped arrays;
- the adjoints of the free variables the lambda reads are *accumulators* of
  the reverse map, started at their current adjoints: an iteration that reads
  one element of a large free array adds to one element (`index_update` with
  mode "add"), so it costs O(1), never a dense per-iteration copy;
- calls of small non-recursive helpers that take a free array are inlined
  into the return sweep's lambda first (`_inline_helpers`), so a helper that
  reads one element of it adds to one element too, not a dense adjoint per call;
- an accumulator of the primal map (derivative code being differentiated
  again) is additive, so its final value's cotangent is its initial value's
  cotangent and the cotangent of every iteration's contribution.
"""
from __future__ import annotations

from ...ir import names
from ...errors import MissingRuleError
from ...ir.core import Lambda, Map, Var
from ...ir.traverse import dce, free_vars, rename_body
from ...ir.types import I64, TensorType
from .._common import differentiable
from ..activity import mark_body
from .adjoints import Adjoints
from .body import fwd_body, recomputed, rev_body


def rev(ctx, b, st, adj) -> None:
    e: Map = st.exp
    k = e.n_out
    cts = [adj.get(v) for v in st.pat]
    if all(c is None for c in cts):
        return
    need = [isinstance(a, Var) and a in ctx.varied and differentiable(p.type) for a, p in zip(e.arrays, e.elems)]
    bound = set(e.lam.params)
    fvs = sorted((v for v in free_vars(e.lam.body) - bound if v in ctx.varied and differentiable(v.type)),
                 key=lambda v: v.name)
    acc_need = [isinstance(a, Var) and a in ctx.varied and differentiable(a.type) for a in e.accs]
    if not (any(need) or fvs or any(acc_need)):
        return
    rb = b.child()
    index = rb.fresh(e.index.name, I64)
    mapping = {e.index: index}
    elems = []
    for p in e.elems:
        elems.append(rb.fresh(p.name, p.type))
        mapping[p] = elems[-1]
    accp = []
    for p in e.acc_params:   # the primal accumulators, re-read by the re-executed forward sweep
        accp.append(rb.fresh(p.name, p.type))
        mapping[p] = accp[-1]
    for p, a in zip(list(e.elems) + list(e.acc_params), list(e.arrays) + list(e.accs)):
        if isinstance(a, Var) and a in ctx.varied and differentiable(p.type):
            ctx.varied.add(mapping[p])
    body = recomputed(rename_body(_inline_helpers(ctx, e.lam.body, bound), ctx.supply, mapping))
    mark_body(body, ctx.varied, ctx.deps)
    # mapped cotangents of the stacked results
    ct_arrays, ct_elems = [], []
    for j in range(k):
        if cts[j] is not None:
            ct_arrays.append(cts[j])
            ct_elems.append((j, rb.fresh(names.adjoint(st.pat[j].name), TensorType(
                st.pat[j].type.dtype, st.pat[j].type.shape[1:]))))
    # free-variable adjoints: accumulators of the reverse map
    fa = {v: rb.fresh(names.adjoint(v.name), v.type) for v in fvs}
    fa_init = [adj.get_or_zero(v) for v in fvs]
    tapes = fwd_body(ctx, rb, body)
    inner = Adjoints(rb, ctx.varied)
    for v in fvs:
        inner.m[v] = fa[v]
    for j, ce in ct_elems:
        inner.add(body.result[j], ce)
    for m in range(len(e.accs)):
        if cts[k + m] is not None:
            inner.add(body.result[k + m], cts[k + m])
    rev_body(ctx, rb, body, inner, tapes)
    elem_adj = [inner.get_or_zero(elems[j], rb) for j in range(len(elems)) if need[j]]
    new_fa = [inner.get(v) or fa[v] for v in fvs]
    rbody = dce(rb.body(elem_adj + new_fa))
    # an additive accumulator's adjoint rules never read its value, so the
    # re-executed updates of the primal accumulators are dead here
    if any(p in free_vars(rbody) for p in accp):
        raise MissingRuleError("reverse mode through a map whose body reads its accumulators is not "
                               "supported", loc=st.loc)
    lam = Lambda((index,) + tuple(elems) + tuple(ce for _, ce in ct_elems) + tuple(fa[v] for v in fvs), rbody)
    arr_adj = [b.fresh(names.adjoint(a.name), a.type) for a, nd in zip(e.arrays, need) if nd]
    fa_out = [b.fresh(names.adjoint(v.name), v.type) for v in fvs]
    b.let(tuple(arr_adj) + tuple(fa_out),
          Map(e.width, tuple(e.arrays) + tuple(ct_arrays), tuple(fa_init), lam), b.loc)
    # the accumulators started at the free variables' adjoints: replace those first,
    # then add the mapped arrays' adjoints (an array may be mapped and read whole)
    for v, out in zip(fvs, fa_out):
        adj.m[v] = out
    it = iter(arr_adj)
    for a, nd in zip(e.arrays, need):
        if nd:
            adj.add(a, next(it))
    for m, a in enumerate(e.accs):
        if acc_need[m] and cts[k + m] is not None:
            adj.add(a, cts[k + m])



MAX_INLINE = 400   # statements of the helpers inlined into one reverse lambda


def _inline_helpers(ctx, body, bound):
    """`body` with its calls of small non-recursive functions without rules that take
    an array free in the map (the callee's vjp would return a dense adjoint of it)
    replaced by copies of the callees' bodies, recursively (`passes.inline`)."""
    from ...ir.core import Apply
    from ...ir.traverse import call_graph, iter_lets
    from ..inline import _body, _recursive

    free = {v for v in free_vars(body) - bound if v.type.shape}
    calls = [st.exp for st in iter_lets(body) if isinstance(st.exp, Apply)]
    if not free or not any(a in free for c in calls for a in c.args):
        return body
    graph = call_graph(ctx.prog)
    small, todo, size = {}, [c.func for c in calls], 0
    while todo:
        name = todo.pop()
        if name in small:
            continue
        f = ctx.prog.func(name)
        n = sum(1 for _ in iter_lets(f.body))
        if f.rules or f.donated or _recursive(name, graph) or size + n > MAX_INLINE:
            continue
        small[name] = f
        size += n
        todo.extend(graph.get(name, ()))
    return _body(body, small, ctx.supply) if small else body
