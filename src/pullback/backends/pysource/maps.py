"""Emission of `Map`: the one place a map becomes a loop nest (note [combinators]).

Contract: `emit_map(fe, st, depth)` prints the map statement `st` with the
function emitter `fe`:

    ys = np.empty((n, ...), dtype=...)        # one per stacked result
    acc = acc0                                 # accumulators, like loop parameters
    for i in range(n):                         # chunks on threads when parallel
        x = xs[i]                              # one element per mapped array
        ...                                    # the lambda's body
        ys[i] = y
        acc = acc_next

When the dialect says the map runs in parallel (`dialect.parallel_map(fe, st)`,
the numba backend's outermost large maps), the iterations are cut into
`dialect.parallel_chunks(n)` chunks of consecutive iterations, run on the
dialect's threads through a helper function (`_parallel`: errors raised in a
chunk are raised after the launch). Accumulators get private partial sums per
chunk, started at zero and added to the initial values after the loop in
chunk order, so no two threads write one element (the accumulators are
additive, `ir.core.Map`) and the result does not depend on scheduling or on
the number of threads.
"""
from __future__ import annotations

from ...ir.core import Body, Map, Var
from ...ir.traverse import free_vars
from .text import _NP_DTYPE, _shape_lit


def emit_map(fe, st, depth: int) -> None:
    e: Map = st.exp
    k = e.n_out
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
    if parallel:
        _parallel(fe, st, depth, outs, names, inits, iname, n)
    else:
        fe.assign(depth, names, inits)
        # a mapped array whose text is an expression (a constant's writeable copy,
        # `_c0.copy()` on numba) is evaluated once, not in every iteration
        over = {}
        for a in e.arrays:
            text = fe.a(a)
            if not text.isidentifier() and a not in over:
                over[a] = fe.fresh("xs")
                fe.line(depth, f"{over[a]} = {text}")
        fe.line(depth, f"for {iname} in range({n}):")
        _iteration(fe, e, depth + 1, outs, names, iname, over)
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


def _iteration(fe, e: Map, depth: int, outs, names, iname, over=None) -> None:
    """One iteration's lines; `over`: names bound before the loop to mapped arrays."""
    k = e.n_out
    body = e.lam.body
    for p, a in zip(e.elems, e.arrays):
        name = fe.bind(p)
        fe.line(depth, f"{name} = {(over or {}).get(a) or fe.a(a)}[{iname}]")
        if p.type.shape or fe.is_strong(a):
            fe.strong.add(p)
    fe._prefer_results(Body(body.stmts, tuple(body.result[k:])), names,
                       avoid_live=dict(zip(names, e.acc_params)))
    n0 = len(fe.lines)
    binders = tuple(e.lam.params)
    fe.enter_loop(binders, body, int(e.width.value))
    fe.body(body, depth, binders)
    fe.varying.pop()
    fe.here.append(set(binders) | {v for s in body.stmts for v in s.pat})
    row_store = getattr(fe.mod.dialect, "row_store", None)
    for name, r in zip(outs, body.result[:k]):
        if row_store is not None and r.type.shape:
            row_store(fe, depth, name, iname, fe.a(r), r.type.shape)   # the numba dialect: loops (note [compile-time])
        else:
            fe.line(depth, f"{name}[{iname}] = {fe.a(r)}")
    fe.assign(depth, names, [fe.a(r) for r in body.result[k:]])
    fe.here.pop()
    if len(fe.lines) == n0:
        fe.line(depth, "pass")


def _parallel(fe, st, depth, outs, final, inits, iname, n) -> None:
    """A parallel map (see the module docstring): its iterations, cut into
    chunks, become a helper function (`dialect.map_helper`: `fn`), which the
    dialect's launch statement runs once per chunk on numba's threads, setting
    failed[c] to 1 if chunk c raised (an exception cannot leave a worker
    thread); a chunk that failed runs again sequentially afterwards, raising
    its (located) error there. A chunk's partial sums of an array accumulator
    go back into their row by loops (`dialect.row_store`)."""
    e: Map = st.exp
    dialect = fe.mod.dialect
    nc = dialect.parallel_chunks(n, bool(e.accs))
    # a chunk's partial sums get names of their own (local to the helper)
    names = [fe.fresh(f"{p.name}_part") for p in e.acc_params]
    for p, name in zip(e.acc_params, names):
        fe.py[p] = name
        fe.strong.add(p)   # a row of the freshly zeroed partials: updated in place
    parts = [fe.fresh(f"{name}s") for name in names]
    nt, t, lo, hi = fe.fresh("n_chunks"), fe.fresh("chunk"), fe.fresh("lo"), fe.fresh("hi")
    # the helper's body, printed with this function's names, then moved out of it
    n0 = len(fe.lines)
    for name, part in zip(names, parts):
        fe.line(1, f"{name} = {part}[{t}]")
    fe.line(1, f"for {iname} in range({lo}, {hi}):")
    _iteration(fe, e, 2, outs, names, iname)
    for p, name, part in zip(e.acc_params, names, parts):
        if p.type.shape:   # loops, as a map's rows (`row_store`)
            dialect.row_store(fe, 1, part, t, name, p.type.shape)
        else:
            fe.line(1, f"{part}[{t}] = {name}")
    body = fe.lines[n0:]
    del fe.lines[n0:], fe.line_locs[n0:]
    fe.last_loc = None
    free = (free_vars(e.lam.body) - set(e.lam.params)) | {a for a in e.arrays if isinstance(a, Var)}
    params = [lo, hi, t] + outs + parts + sorted({fe.a(v) for v in free}) + list(fe.mod.extra_params)
    failed = fe.fresh("failed")
    fn, launch = dialect.map_helper(params, body, n, nc, failed)
    fe.line(depth, f"{nt} = {nc}")
    for p, part in zip(e.acc_params, parts):
        fe.line(depth, f"{part} = np.zeros({_shape_lit((nc,) + tuple(p.type.shape))}, "
                       f"dtype={_NP_DTYPE[p.type.dtype]})")
    fe.line(depth, f"{failed} = np.zeros({nt}, dtype=np.int64)")
    fe.line(depth, f"{launch}  # runs {fn} on each chunk in parallel")
    args = ", ".join([f"{t} * {n} // {nt}", f"({t} + 1) * {n} // {nt}"] + params[2:])
    fe.line(depth, f"for {t} in range({nt}):  # a chunk that raised, again: its error is raised here")
    fe.line(depth + 1, f"if {failed}[{t}]:")
    for part in parts:
        fe.line(depth + 2, f"{part}[{t}] = 0")
    fe.line(depth + 2, f"{fn}({args})")
    # the partial sums added to the initial values in chunk order (deterministic)
    for name, part, x0 in zip(final, parts, inits):
        fe.line(depth, f"{name} = {x0} + {part}[0]")
    if parts and nc > 1:  # a loop, not part.sum(axis=0): numba compiles that for seconds
        fe.line(depth, f"for {t} in range(1, {nt}):")
        for name, part in zip(final, parts):
            fe.line(depth + 1, f"{name} += {part}[{t}]")
