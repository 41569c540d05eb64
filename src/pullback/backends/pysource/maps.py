"""Emission of `Map`: the one place a map becomes a loop nest (note [combinators]).

Contract: `emit_map(fe, st, depth)` prints the map statement `st` with the
function emitter `fe`:

    ys = np.empty((n, ...), dtype=...)        # one per stacked result
    acc = acc0                                 # accumulators, like loop parameters
    for i in range(n):                         # `prange` when parallel
        x = xs[i]                              # one element per mapped array
        ...                                    # the lambda's body
        ys[i] = y
        acc = acc_next

When the dialect says the map runs in parallel (`dialect.parallel_map(fe, st)`,
the numba backend's outermost large maps), iterations are split into one chunk
per thread; a map with accumulators gives each chunk private partial sums,
started at zero and added to the initial values after the loop, so no two
threads write one element (the accumulators are additive, `ir.core.Map`).
"""
from __future__ import annotations

from ...ir.core import Body, Map
from ...ir.traverse import free_vars
from .text import _NP_DTYPE, _shape_lit


def emit_map(fe, st, depth: int) -> None:
    e: Map = st.exp
    k = e.n_out
    body = e.lam.body
    n = int(e.width.value)
    dialect = fe.mod.dialect
    parallel = dialect is not None and getattr(dialect, "parallel_map", None) is not None \
        and dialect.parallel_map(fe, st)
    over = ", ".join(fe.a(a) for a in e.arrays) or "range"
    fe.line(depth, f"# map over {over}" + (" (parallel)" if parallel else "")
            + (f", accumulating {', '.join(fe.a(a) for a in e.accs)}" if e.accs else ""))
    outs = [fe.bind(v) for v in st.pat[:k]]
    for v, name in zip(st.pat[:k], outs):
        fe.line(depth, f"{name} = np.empty({_shape_lit(v.type.shape)}, dtype={_NP_DTYPE[v.type.dtype]})")
        fe.strong.add(v)
    names = _acc_names(fe, st)
    copied = fe.own.loop_copy.get(id(st), set())
    inits = [fe.a(x) + ".copy()" if j in copied else fe.a(x) for j, x in enumerate(e.accs)]
    for p, name, x0 in zip(e.acc_params, names, e.accs):
        fe.py[p] = name
        if fe.is_strong(x0):
            fe.strong.add(p)
    iname = fe.bind(e.index)
    fe.index_bound[e.index] = n   # 0 <= i < n: reads x[i] need no bounds checks
    if parallel and e.accs:
        inner = _parallel_accs(fe, st, depth, names, inits, iname, n)
    else:
        fe.assign(depth, names, inits)
        rng = "prange" if parallel else "range"
        fe.line(depth, f"for {iname} in {rng}({n}):")
        inner = depth + 1
    _iteration(fe, e, inner, outs, names, iname)
    if parallel and e.accs:
        _combine(fe, e, depth, names, inits)
    for v, name, x0 in zip(st.pat[k:], names, e.accs):
        fe.py[v] = name
        if fe.is_strong(x0):
            fe.strong.add(v)


def _acc_names(fe, st) -> list[str]:
    """An accumulator takes its initial value's name when that value dies here."""
    e: Map = st.exp
    later = fe._later_uses(st)
    body_free = free_vars(e.lam.body)
    names, used = [], set()
    for p, x0 in zip(e.acc_params, e.accs):
        name = None
        if (x0 in fe.py and x0 not in used and x0 not in body_free and x0 not in later
                and x0 in fe.here[-1]):
            name = fe.py[x0]
            used.add(x0)
        names.append(name or fe.fresh(p.name))
    return names


def _iteration(fe, e: Map, depth: int, outs, names, iname) -> None:
    k = e.n_out
    body = e.lam.body
    for p, a in zip(e.elems, e.arrays):
        name = fe.bind(p)
        fe.line(depth, f"{name} = {fe.a(a)}[{iname}]")
        if p.type.shape or fe.is_strong(a):
            fe.strong.add(p)
    fe._prefer_results(Body(body.stmts, tuple(body.result[k:])), names,
                       avoid_live=dict(zip(names, e.acc_params)))
    n0 = len(fe.lines)
    binders = tuple(e.lam.params)
    fe.body(body, depth, binders)
    fe.here.append(set(binders) | {v for s in body.stmts for v in s.pat})
    for name, r in zip(outs, body.result[:k]):
        fe.line(depth, f"{name}[{iname}] = {fe.a(r)}")
    fe.assign(depth, names, [fe.a(r) for r in body.result[k:]])
    fe.here.pop()
    if len(fe.lines) == n0:
        fe.line(depth, "pass")


def _parallel_accs(fe, st, depth, names, inits, iname, n) -> int:
    """Open the chunked parallel loop: private partial accumulators per chunk."""
    e: Map = st.exp
    nt, t = fe.fresh("n_chunks"), fe.fresh("chunk")
    fe.line(depth, f"{nt} = min(_pb_num_threads(), {n})")
    parts = []
    for p, name in zip(e.acc_params, names):
        part = fe.fresh(f"{name}_parts")
        parts.append(part)
        fe.line(depth, f"{part} = np.zeros(({nt},) + {_shape_lit(p.type.shape)}, "
                       f"dtype={_NP_DTYPE[p.type.dtype]})")
    fe.line(depth, f"for {t} in prange({nt}):")
    for p, name, part in zip(e.acc_params, names, parts):
        fe.line(depth + 1, f"{name} = {part}[{t}]")
    fe.line(depth + 1, f"for {iname} in range({t} * {n} // {nt}, ({t} + 1) * {n} // {nt}):")
    fe._map_parts = getattr(fe, "_map_parts", []) + [(parts, t, depth + 1)]
    return depth + 2


def _combine(fe, e: Map, depth, names, inits) -> None:
    parts, t, d = fe._map_parts.pop()
    for name, part in zip(names, parts):
        fe.line(d, f"{part}[{t}] = {name}")
    for name, part, x0 in zip(names, parts, inits):
        fe.line(depth, f"{name} = {x0} + {part}.sum(axis=0)")
