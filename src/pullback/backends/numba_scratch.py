"""Scratch arrays for the numba dialect: a small array that a fused loop fills
inside a loop body, and that dies before the body runs again, is allocated
once per call of the function instead of once per iteration (note
[short-loops]).

Contract:
- `repeated_bodies(prog, parallel_maps) -> set[int]`: the ids of the bodies
  that may run more than once per call of their function: nested, at any
  depth, in a `Loop` or a sequential `Map`, and in no parallel map (whose
  iterations run on several threads at once; `parallel_maps` holds the ids of
  those map statements).
- `local_values(stmts, result, cands, push_copies, own) -> set`: the
  candidates (vars bound in a body before `stmts`, the rest of that body,
  whose results are `result`) whose array no value that outlives the body can
  share. A statement reading a candidate or anything that may share its array
  makes its results share it too: a view (`ownership._aliasing_args`), an
  update or addition the ownership analysis `own` does in place on it, a
  call's or `Map`'s results, and those of an `If`'s or `Loop`'s results that a
  body may return one through (`spread`); other primitives make fresh arrays.
  A candidate escapes when a sharer is among
  `result` or is pushed to a store that keeps references (`push_copies(elem)`
  false). The IR is pure, so results are the only way a value leaves a body.
- `spread(stmts, share, push_copies, own, stores=False) -> bool`: the rule
  `local_values` applies, on its own: adds to the set `share` every result of
  `stmts` that may share an array with a member (`numba_stores`' sharing walk:
  a loop's results only through the parameters that carry one, to a fixed
  point, an `If`'s only where a branch may return one; with `stores`, the
  stores and popped values a push or pop of a member store gives); False
  where a sharer is pushed to a store that keeps references (`numba_borrow`
  uses it too).
- `scratch(fe, shape, dtype) -> str`: the name of a new array of that static
  shape, allocated (``np.empty``) at the top of the function `fe` is printing.
  Its contents are whatever the previous iteration left: the caller writes
  every element before reading any.
- `bind(fe, v, buf, depth) -> str`: the name through which the caller writes
  value v into scratch array `buf`: `buf` itself (v's readers read it) where v
  has no name yet (`unnamed`), else v's name, printed as an alias of `buf`.
- `copies(body, own, push_copies) -> set[int]`: the ids of the `index`
  statements of `body` (a repeated body) that the emitter would print as a
  copy of a slice (`own.copied`: the sliced array is updated later, or the
  slice is saved) whose result has a static shape of at most `SCRATCH_BYTES`
  and is local to the body (`local_values`): `emit_copy` copies them into
  scratch arrays instead of new ones.
- `emit_copy(fe, st, depth)`: prints such a statement: a view of the slice,
  then an element loop copying it into a scratch array bound to the result.
- `fills(body, own, push_copies) -> set[int]`: the ids of the `full`
  statements of `body` (a repeated body) with a static shape of at most
  `SCRATCH_BYTES` whose result is local to the body: a small array filled and
  then updated in place, packed for a store push or a call (scalarize's
  packs, note [scalarize]). `emit_fill` prints them into scratch arrays.
- `emit_fill(fe, st, depth, filled=True)`: prints such a statement: the
  scratch array bound to the result, then, where `filled`, an element loop
  writing the fill value (the dialect passes False for a fill nobody sees,
  `numba_fill.unobserved_fills`: lstm's saved rows, every row set in the
  layer loop).
- `SCRATCH_BYTES`: the largest array made scratch; a larger allocation costs
  little next to filling it, and a scratch array lives for the whole call.
"""
from __future__ import annotations

from ..ir.core import Loop, Map, Prim, Var
from ..ir.traverse import exp_scopes

SCRATCH_BYTES = 4096


def repeated_bodies(prog, parallel_maps) -> set:
    out: set = set()

    def visit(body, repeated: bool):
        if repeated:
            out.add(id(body))
        for st in body.stmts:
            e = st.exp
            if isinstance(e, Map) and id(st) in parallel_maps:
                continue   # its body runs on worker threads: no shared scratch
            again = repeated or isinstance(e, (Loop, Map))
            for _, b in exp_scopes(e):
                visit(b, again)

    for f in prog.funcs:
        visit(f.body, False)
    return out


def local_values(stmts, result, cands, push_copies, own) -> set:
    out = set()
    for v in cands:
        share = {v}
        if spread(stmts, share, push_copies, own) and not share & {a for a in result if isinstance(a, Var)}:
            out.add(v)
    return out


def spread(stmts, share: set, push_copies, own, stores: bool = False) -> bool:
    """Add to `share` the results of `stmts` that may share an array with a member
    (`numba_stores`' sharing walk: views, updates in place, the results of calls and
    maps, an `If`'s or a `Loop`'s results only where a body may return a member;
    with `stores`, also the stores and values a push or pop of a member gives);
    False where a sharer goes into a store that keeps references."""
    from .numba_stores import spread_sharing

    pushes: list = []
    spread_sharing(stmts, share, own, pushes, stores)
    return all(push_copies(e.args[0].type.elem) for e in pushes)


def scratch(fe, shape: tuple, dtype: str) -> str:
    """See the module docstring."""
    from .pysource import text

    name = fe.fresh("scratch")
    top = next(i for i, ln in enumerate(fe.lines) if ln.startswith("def ")) + 2   # after the docstring
    fe.lines.insert(top, f"    {name} = np.empty({text._shape_lit(shape)}, dtype={text._NP_DTYPE[dtype]})")
    fe.line_locs.insert(top, None)
    fe.top_lines += 1   # (lines inserted above the statement being printed)
    return name


def small_static(t) -> bool:
    return bool(t.shape) and all(isinstance(n, int) for n in t.shape) and t.nbytes <= SCRATCH_BYTES


def copies(body, own, push_copies) -> set:
    """See the module docstring."""
    out = set()
    stmts = body.stmts
    for k, st in enumerate(stmts):
        e = st.exp
        if not (isinstance(e, Prim) and e.op == "index" and e.p["spec"] and len(st.pat) == 1):
            continue
        v = st.pat[0]
        t = v.type
        if v not in own.copied or (v in own.push_only and push_copies(t)):
            continue
        if small_static(t) and local_values(stmts[k + 1:], body.result, {v}, push_copies, own):
            out.add(id(st))
    return out


def fills(body, own, push_copies) -> set:
    """See the module docstring."""
    stmts = body.stmts
    return {id(st) for k, st in enumerate(stmts)
            if isinstance(st.exp, Prim) and st.exp.op == "full" and len(st.pat) == 1
            and small_static(st.pat[0].type)
            and local_values(stmts[k + 1:], body.result, {st.pat[0]}, push_copies, own)}


def element_loops(fe, depth, name, shape, value, lead: tuple = ()) -> None:
    """Loops over every element of `name` (static `shape`) setting it to `value(ix)`,
    `ix` the element's index text; with `lead` (index texts), over the elements of
    the row `name[*lead]` instead."""
    js = [fe.fresh(f"j{d}") for d in range(len(shape))]
    for d, (j, n) in enumerate(zip(js, shape)):
        fe.line(depth + d, f"for {j} in range({int(n)}):")
    ix = ", ".join(js)
    fe.line(depth + len(js), f"{name}[{', '.join([*lead, *js])}] = {value(ix)}")


def unnamed(fe, v) -> bool:
    """Has the value v no printed name yet, and none chosen for it (a value yielded to a
    loop's parameter takes the parameter's name)?"""
    return v not in fe.py and v not in fe.prefer


def bind(fe, v, buf: str, depth: int) -> str:
    """The name to write v's elements through: the scratch array `buf` itself where v has
    no name yet (v's readers then read `buf`), else v's name, printed as an alias of
    `buf`. An alias is a second reference to the array: numba increments its count there
    and decrements it when the alias is rebound or dies, atomic calls that LLVM's
    pruning leaves in a loop (note [short-loops], "Scratch arrays without aliases")."""
    if unnamed(fe, v):
        fe.py[v] = buf
        return buf
    name = fe.bind(v)
    fe.line(depth, f"{name} = {buf}")
    return name


def emit_fill(fe, st, depth, filled: bool = True) -> None:
    """See the module docstring."""
    from .numba_dialect import _scalar_cast

    v = st.pat[0]
    buf = scratch(fe, v.type.shape, v.type.dtype)   # inserts a line at the top: before n0
    n0 = len(fe.lines)
    name = bind(fe, v, buf, depth)
    if filled:
        fill = _scalar_cast(v.type.dtype, fe.a(st.exp.args[0]))
        element_loops(fe, depth, name, v.type.shape, lambda ix: fill)
    for i in range(n0, len(fe.lines)):
        fe.lines[i] += "  # pb:full"


def emit_copy(fe, st, depth) -> None:
    """See the module docstring."""
    e, v = st.exp, st.pat[0]
    x = e.args[0]
    buf = scratch(fe, v.type.shape, v.type.dtype)   # inserts a line at the top: before n0
    n0 = len(fe.lines)
    view = fe.fresh(f"{v.name}_view")
    fe.line(depth, f"{view} = {fe.a(x)}[{fe.index_text(x, e.p['spec'], e.args[1:])}]")
    name = bind(fe, v, buf, depth)
    element_loops(fe, depth, name, v.type.shape, lambda ix: f"{view}[{ix}]")
    for i in range(n0, len(fe.lines)):
        fe.lines[i] += "  # pb:index"
