"""Elementwise fusion for the numba dialect: runs of array-valued elementwise
statements become one explicit loop nest over scalars (note [numba-fusion]).

Contract:
- `plan(body) -> dict[int, Group]`: for a body's statement list, the groups to
  fuse, keyed by the index of their first statement. A group is a maximal run
  of statements `stmts[start:end]` in which every statement is either *fused*
  (an elementwise primitive whose result has the group's static shape S, and
  whose array operands broadcast to S), *hoisted* (a pure primitive that
  reads no fused result: it is emitted before the loop, unchanged) or a
  *store* (an `index_update` of a fused result that the loop writes itself,
  `_mid_store`; later statements read the value as the scalar). After the
  run, `_take_stores` may add trailing updates and concatenations. Groups
  have at least two fused statements, or a store.
- `emit(fe, dialect, group, depth)`: emits the hoisted statements, then
  ``for i0 in range(S0): for i1 ...:`` computing every fused statement as a
  scalar (with the same scalar forms the dialect prints for 0-d code), and
  writes into a fresh ``np.empty(S)`` only the results used after the group
  (or by an update not done in place, printed after the loop).
  Semantics are unchanged: every materialized result is a fresh array, as the
  unfused NumPy expression would have made; the others are never observed.
  Integer ``//`` and ``%`` check each divisor in the loop (note
  [run-time-checks]); fused statements index only with the loop's own
  indices, so they need no bounds checks (hoisted ones get the usual checks).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.core import Body, Const, Let, Prim, Var
from ..ir.prims.indexing import region_shape
from ..ir.traverse import free_vars
from ..ir.types import TensorType
from . import checks, numba_gate, numba_scratch, numba_slots, numba_sum_loops
from . import pysource as ps
from .libcalls import elementwise_ops
from .numba_exprs import row_sum
from .numba_regions import (broadcast_index, concat_pieces, copy_pieces, disjoint, same_region, store_target,
                            views, views_read)

_ELEMENTWISE = (set(ps._UNARY_FN) | (set(ps._BIN_FN) - {"matmul"})
                | {"logistic", "where", "cast", "broadcast_to"} | elementwise_ops())
# pure primitives that may move before a fused loop (never stores or updates)
_NOT_HOISTABLE = ps._STORE_OPS | {"index_update", "take_add"}


# a full sum in a fused loop accumulates into this many partial sums (note [numba-fusion])
_LANES = numba_sum_loops.LANES

# LLVM's loop vectoriser leaves loops with a static trip count below 16 scalar
# (its tiny-trip-count threshold), and there the vectorisable exp/log/tanh helpers
# are about 1.5x slower than libm's: a group whose innermost extent is below this
# prints libm calls (note [short-loops])
TINY_TRIP = 16


@dataclass
class Group:
    start: int
    end: int
    shape: tuple
    fused: list = field(default_factory=list)     # Lets, in order
    hoisted: list = field(default_factory=list)   # Lets, in order
    keep: set = field(default_factory=set)        # fused results used after the group
    stores: list = field(default_factory=list)  # `index_update`s in or right after the run, written from the loop (`_store`)
    live: set = field(default_factory=set)      # fused results read after the group (its stores excluded)
    pre: list = field(default_factory=list)     # pure statements between the loop and those updates
    repeated: bool = False     # the body runs more than once per call (numba_scratch)
    rest: tuple = ()           # with `repeated`: the body's statements after the group
    result: tuple = ()         # ... and its results


def _out_type(st: Let):
    return st.pat[0].type if len(st.pat) == 1 else None


def _fusable(st: Let, shape: tuple | None, reduced=frozenset()) -> bool:
    """An elementwise statement (or a broadcast) with result shape `shape`
    that reads no sum still being accumulated in the group."""
    e = st.exp
    if not (isinstance(e, Prim) and e.op in _ELEMENTWISE):
        return False
    t = _out_type(st)
    if not isinstance(t, TensorType) or not t.shape or (shape is not None and tuple(t.shape) != shape):
        return False
    return all(isinstance(a.type, TensorType) and a not in reduced for a in e.args)


def _reduction(st: Let, shape: tuple) -> bool:
    """A `sum` over an array of exactly the group's shape, of floats (or of int64s:
    exact in any order), in its own dtype: accumulated in the loop."""
    e = st.exp
    if not (isinstance(e, Prim) and e.op == "sum" and len(st.pat) == 1):
        return False
    (x,) = e.args
    t = _out_type(st)
    return (isinstance(t, TensorType) and tuple(x.type.shape) == shape and x.type.dtype in ("f64", "f32", "i64")
            and t.dtype == x.type.dtype)


def _partial_sum(st: Let) -> bool:
    """A sum (`_reduction`) over some but not all axes of an array: a group of
    its own when nothing elementwise precedes it. numba's `np.sum(x, axis=k)`
    compiles its axis check's error formatting (about 1.3 s per process) and
    runs 1-6x slower than the loop (note [numba-fusion], "Lone partial sums")."""
    if not (isinstance(st.exp, Prim) and st.exp.op == "sum" and len(st.pat) == 1):
        return False
    x = st.exp.args[0]
    shape = x.type.shape if isinstance(x.type, TensorType) else ()
    nax = len(st.exp.p["axes"])
    if row_sum(st.exp, st.pat):
        return False   # each row in NumPy's pairwise order (`numba_exprs`, note [pairwise-sums])
    return 0 < nax < len(shape) and _reduction(st, tuple(shape))


def _hoistable(st: Let, fused_vars: set, fused_reads: set) -> bool:
    """May `st` run before the loop? Pure primitives that read no fused result;
    also an in-place update whose array the fused statements do not read (so
    moving it earlier changes nothing they see, nor the array's last use)."""
    e = st.exp
    if not (isinstance(e, Prim) and e.op in ps.KNOWN_PRIMS) or e.op in ps._STORE_OPS:
        return False
    if any(isinstance(a, Var) and a in fused_vars for a in e.args):
        return False
    if e.op in _NOT_HOISTABLE:
        return e.args[0] not in fused_reads
    return True


def plan(body: Body, repeated: bool = False) -> dict[int, Group]:
    stmts = body.stmts
    # uses_after[k]: vars read by stmts[k:] or the body's result
    uses_after = [set() for _ in range(len(stmts) + 1)]
    uses_after[-1] = {a for a in body.result if isinstance(a, Var)}
    for k in range(len(stmts) - 1, -1, -1):
        uses_after[k] = uses_after[k + 1] | free_vars(stmts[k].exp)
    groups: dict[int, Group] = {}
    k = 0
    while k < len(stmts):
        lone = _partial_sum(stmts[k])
        if not (lone or _fusable(stmts[k], None)):
            k += 1
            continue
        g = Group(k, k, tuple((stmts[k].exp.args[0] if lone else stmts[k].pat[0]).type.shape))
        fused_vars: set = set()
        reduced: set = set()
        reads: set = set()      # atoms the fused statements read
        hoisted_out: set = set()  # results of hoisted updates: fused statements may not read them
        written: set = set()    # arrays the loop's stores write, their results and views: no one else reads them
        chains: dict = {}       # result of a store in the run -> the stores of its array so far
        j = k
        while j < len(stmts):
            st = stmts[j]
            args = set(st.exp.args) if isinstance(st.exp, Prim) else set()
            if _mid_store(g, st, stmts[:j], fused_vars, reads | hoisted_out | written, chains):
                # an update in the run, written by the loop (its value stays a scalar for later statements)
                x = st.exp.args[0]
                g.stores.append(st)
                chains[st.pat[0]] = chains.pop(x, []) + [st]
                written |= {x, st.pat[0]} | views(stmts[:j], x)
                j += 1
                continue
            if args & (hoisted_out | written):
                break
            if _fusable(st, g.shape, reduced):
                g.fused.append(st)
                fused_vars.update(st.pat)
                reads |= args
            elif _reduction(st, g.shape):
                g.fused.append(st)
                reduced.update(st.pat)
                reads |= args
            elif _hoistable(st, fused_vars | reduced, reads | written):
                g.hoisted.append(st)
                if st.exp.op in _NOT_HOISTABLE:
                    hoisted_out.update(st.pat)
                    hoisted_out.add(st.exp.args[0])
                    if st.exp.op == "index_update":   # it runs before the loop: the loop's stores may follow it
                        chains.setdefault(st.pat[0], [])
            else:
                break
            j += 1
        # trailing hoisted statements stay where they were
        while g.hoisted and g.hoisted[-1] is stmts[j - 1]:
            g.hoisted.pop()
            j -= 1
        g.end = j
        # results read after the run, or by its updates (printed after the loop when not in place)
        g.keep = (fused_vars & uses_after[j].union(*(free_vars(st.exp) for st in g.stores))) | reduced
        _take_stores(g, stmts, reads | hoisted_out | written, uses_after)
        g.live = fused_vars & uses_after[g.end]
        if len(g.fused) >= 2 or g.stores or lone:   # one statement: worth a loop when it writes an update
            if repeated:
                g.repeated, g.rest, g.result = True, stmts[g.end:], body.result
            groups[k] = g
            k = g.end
        else:
            k += 1
    return groups


def _mid_store(g: Group, st: Let, before: list, fused_vars: set, touched: set, chains: dict) -> bool:
    """May the loop of the run being planned write `index_update` st, met in the
    run, itself (note [numba-fusion], "stores in the run")? As `_store`, with a
    value computed elementwise in the run so far (later fused statements read
    it as the scalar), whether or not anything reads it after; its array must
    be neither read by the run nor read through a view (`touched`), nor updated
    already by it, except as the next link of a chain of updates (x is the
    result of one of the run's stores) in which any two regions are disjoint,
    or the same region whose values the loop computes in the order of the
    updates: each element then gets the same writes in the same order. An
    update hoisted before the loop starts a chain (it writes every element
    before the loop does)."""
    e = st.exp
    if not (isinstance(e, Prim) and e.op == "index_update" and e.args[1] in fused_vars):
        return False
    x = e.args[0]
    chain = chains.get(x)
    if chain is not None:
        pos = {f.pat[0]: n for n, f in enumerate(g.fused)}
        if not all(disjoint(st, c) or (same_region(st, c) and pos[e.args[1]] >= pos[c.exp.args[1]])
                   for c in chain):
            return False
        touched = touched - {x}
    return _store(g, st, touched | views_read(before, st, touched), set())


def _take_stores(g: Group, stmts: list, touched: set, uses_after: list) -> None:
    """The `index_update`s after group g that its loop writes itself (`_store`),
    possibly past pure statements that read none of g's results, no updated
    array and no update's result (`g.pre`, printed before the loop). Each update
    writes a different array, so the order of additions into any element is
    unchanged (note [numba-fusion])."""
    fused = {st.pat[0] for st in g.fused}
    barred = set(touched)   # arrays later updates may not write: read by g, or updated already
    pending: list = []
    k = g.end
    while k < len(stmts):
        st = stmts[k]
        e = st.exp
        if _store(g, st, barred | views_read(stmts[:k], st, touched), uses_after[k + 1]):
            g.stores.append(st)
            g.pre.extend(pending)
            pending = []
            barred.update((e.args[0], st.pat[0]))
            g.end = k + 1
        elif (isinstance(e, Prim) and e.op in ps.KNOWN_PRIMS and e.op not in ps._STORE_OPS | _NOT_HOISTABLE
              and not (free_vars(e) & (fused | barred))):
            pending.append(st)
        else:
            break
        k += 1


def _store(g: Group, st: Let, touched: set, used_after: set) -> bool:
    """May the loop write `index_update` st, after group g, itself? Its value is
    either a sum of g over the innermost axis only (a row sum, kept in a local)
    or an elementwise result of g, used nowhere else, and exactly the updated
    region; its array is neither read nor updated by g, nor read through a view
    (`touched`). Whether it is updated in place is the ownership analysis's
    answer, at emission (note [numba-fusion])."""
    e = st.exp
    if isinstance(e, Prim) and e.op == "concatenate":
        return bool(concat_pieces(g, st, used_after))
    if not (isinstance(e, Prim) and e.op == "index_update" and e.p["mode"] in ("set", "add")):
        return False
    x, v, dyn = e.args[0], e.args[1], e.args[2:]
    s = next((f for f in g.fused if f.pat[0] is v), None)
    if s is None or (s.exp.op == "sum" and tuple(int(a) for a in s.exp.p["axes"]) != (len(g.shape) - 1,)):
        return False
    if s.exp.op == "sum" and len(g.shape) < 2:
        return False   # a 1-d group's row sum is a full sum: its lanes beat one local (note [strip-sums])
    if s.exp.op != "sum" and tuple(v.type.shape) != tuple(g.shape):
        return False
    fused = {f.pat[0] for f in g.fused}
    return (region_shape(tuple(x.type.shape), e.p["spec"]) == tuple(v.type.shape)
            and v not in used_after and x not in touched and isinstance(x, Var)
            and not any(a in fused for a in dyn))


def emit(fe, dialect, g: Group, depth: int) -> None:
    for st in g.hoisted:
        fe.provenance(st, depth)
        fe.stmt(st, depth)
        fe.here[-1].update(st.pat)
    fused_vars = {st.pat[0] for st in g.fused}
    arrays: dict = {}  # array operand -> the name it is read through (constants bound once)
    for st in g.fused:
        for a in st.exp.args:
            if a.type.shape and a not in arrays and a not in fused_vars:
                if isinstance(a, Const):
                    arrays[a] = fe.fresh("c")
                    fe.line(depth, f"{arrays[a]} = {fe.a(a)}")
                else:
                    arrays[a] = fe.a(a)
    outs, renames = {}, []
    read = set(arrays.values())

    def inplace_acc(st):
        acc = fe.own.inplace_add.get(id(st))
        ok = st.pat[0] in g.keep and acc is not None and acc in arrays and tuple(acc.type.shape) == tuple(g.shape)
        return acc if ok else None

    gate = numba_gate.plan(g, inplace_acc)  # note [zero-gate]
    for st in g.pre:   # pure statements between the loop and its updates (`_take_stores`)
        fe.provenance(st, depth)
        fe.stmt(st, depth)
        fe.here[-1].update(st.pat)
    # the updates, written from the loop when in place (a gate would skip stores) and their
    # array is bound in this body (a view of it made outside could be read here), or is the
    # result of an update written by the loop (a chain of disjoint updates, `_mid_store`)
    written = []
    for st in g.stores if gate is None else ():
        x = st.exp.args[0]
        if st.exp.op == "concatenate" or (id(st) in fe.own.inplace and (
                x in fe.here[-1] or any(w.pat[0] == x for w in written))):
            written.append(st)
    stored = {}  # value the loop writes -> [(the update or concatenation, the array's name, offset)]
    for st in written:
        if st.exp.op == "concatenate":   # a fresh array: the loop writes its pieces, copies fill the rest
            fe.provenance(st, depth)
            name = numba_slots.alloc(fe, dialect, st, depth)
            for v, off in concat_pieces(g, st, set()).items():
                stored.setdefault(v, []).append((st, name, off))
        else:
            fe.emit_checks(st, depth)
            stored.setdefault(st.exp.args[1], []).append((st, fe.update_target(st, depth), None))
    local = _scratch_outputs(fe, dialect, g, gate)
    sums = {}  # sum result -> the kept axes
    lanes = {}  # full sums -> the name of their partial sums (a list of locals where `unrolled`)
    unrolled = numba_sum_loops.unrolled(g, gate)
    for st in g.fused:
        v = st.pat[0]
        if st.exp.op == "sum":  # a reduction accumulated in the loop (see `_reduction`)
            axes = tuple(int(a) for a in st.exp.p["axes"])
            sums[v] = [d for d in range(len(g.shape)) if d not in axes]
            if v in stored:
                continue
            name = fe.bind(v)
            dt = ps._NP_DTYPE[v.type.dtype]
            if v.type.shape:
                fe.line(depth, f"{name} = np.zeros({ps._shape_lit(v.type.shape)}, dtype={dt})")
            elif unrolled:   # _LANES locals (note [strip-sums], "Unrolled lanes")
                lanes[v] = [fe.fresh(f"{v.name}_l{k}") for k in range(_LANES)]
                fe.line(depth, " = ".join(lanes[v]) + f" = {dt}(0.0)")
            elif g.repeated:  # a full sum's partial sums in a scratch array, zeroed
                lanes[v] = numba_scratch.scratch(fe, (_LANES,), v.type.dtype)
                fe.line(depth, f"{lanes[v]}[:] = 0")
            else:  # a full sum: _LANES partial sums break the chain of dependent additions
                lanes[v] = fe.fresh(f"{v.name}_lanes")
                fe.line(depth, f"{lanes[v]} = np.zeros({_LANES}, dtype={dt})")
            continue
        if v in stored and v not in g.live:   # written into the updated array (see `_body`) only
            continue
        acc = inplace_acc(st)
        if acc is not None:
            # `acc + g` with acc owned and dying here: every read of acc in this
            # loop is acc[i...] at the same index, before this write
            outs[v] = arrays[acc]
            fe.prefer.pop(v, None)
            fe.py[v] = outs[v]
            continue
        if v in g.keep:
            unnamed = numba_scratch.unnamed(fe, v)
            outs[v] = fe.bind(v)
            if outs[v] in read:  # `y = y + t`: fill a new array, then rebind the name
                renames.append((outs[v], fe.fresh(f"{v.name}_new")))
                outs[v] = renames[-1][1]
            alloc = "zeros" if gate else "empty"  # a gate skips zeros: the array holds them already
            renamed = bool(renames) and renames[-1][1] == outs[v]
            slot = None if gate or renamed else dialect.slot_text(fe, v)
            if slot is not None:   # saved by the push that follows: written in its slot (numba_stores)
                fe.line(depth, f"{outs[v]} = {slot}")
            elif v in local and not renamed:
                # every element is written below, before any is read; a value not yet named
                # is the scratch array itself (no alias: `numba_scratch.bind`)
                buf = numba_scratch.scratch(fe, g.shape, v.type.dtype)
                if unnamed:
                    outs[v] = fe.py[v] = buf
                else:
                    fe.line(depth, f"{outs[v]} = {buf}")
            else:
                fe.line(depth, f"{outs[v]} = np.{alloc}({ps._shape_lit(g.shape)}, dtype={ps._NP_DTYPE[v.type.dtype]})")
    idx = [fe.fresh(f"i{d}") for d in range(len(g.shape))]
    scalars: dict = {}  # fused result -> its scalar name in the loop
    # a sum over the innermost axis (not a full sum) adds into a local around the
    # innermost loop: one element, loaded before and stored after (note [numba-fusion])
    regs = {v: fe.fresh(f"{v.name}_acc")
            for v in dict.fromkeys(_in_locals(sums, lanes, len(g.shape)) + [v for v in stored if v in sums])}
    level = depth
    first_header = len(fe.lines)
    for d, (i, n) in enumerate(zip(idx, g.shape)):
        if gate is not None and d == gate.depth:
            a = gate.src   # an operand gate's scalar is what the fused statements read (`_body`)
            scalars[gate.var] = name = fe.fresh(f"{gate.var.name}_k")
            fe.line(level, f"{name} = {arrays[a]}[{broadcast_index(a, g.shape, idx)}]  # pb:broadcast_to")
            fe.line(level, f"if {name} != 0:  # zero gate: every contribution below is zero")
            level += 1
        if d == len(g.shape) - 1:
            for v, r in regs.items():
                init = f"{ps._NP_DTYPE[v.type.dtype]}(0.0)" if v in stored else _sum_elem(fe, v, sums[v], idx)
                fe.line(level, f"{r} = {init}")
        fe.line(level, f"for {i} in range({int(n)}):")
        level += 1
    inner = level
    n_last = int(g.shape[-1])
    def body(level, texts, own=True):
        """`_body` at `level`, a sum v's value stored or added with `texts[v]`."""
        _body(fe, dialect, g, gate, arrays, outs, sums, idx, level, dict(scalars) if own else scalars, texts,
              regs, stored)

    rows = {}
    if unrolled:
        numba_sum_loops.emit_unrolled(fe, g, idx, inner, lanes, body)
    elif (lanes or regs) and gate is None and n_last >= 2 * numba_sum_loops.STRIP and numba_sum_loops.strip_worth(g):
        rows = numba_sum_loops.emit_strip(fe, g, idx, inner, depth, first_header, lanes, regs, body)
    if not rows and not unrolled:   # the lanes form (or the strip-mined form's tail)
        body(inner, {v: f"{lanes[v]}[{idx[-1]} & {_LANES - 1}] +=" for v in lanes}, own=False)
    for v, r in regs.items():
        if v in stored:   # the update, at this row (same additions: the sum starts at 0)
            for st, name, _ in stored[v]:
                fe.line(inner - 1, f"{store_target(fe, st, name, [idx[d] for d in sums[v]])} {r}  # pb:index_update")
        else:
            fe.line(inner - 1, f"{_sum_elem(fe, v, sums[v], idx)} = {r}")
    for v, ln in lanes.items():
        fe.line(depth, f"{fe.py[v]} = " + " + ".join(ln if unrolled else [f"{ln}[{k}]" for k in range(_LANES)]))
    fe.assign(depth, [a for a, _ in renames], [b for _, b in renames])
    for st in g.stores:
        if st not in written:   # not in place: the update as usual
            fe.provenance(st, depth)
            fe.stmt(st, depth)
        elif st.exp.op == "concatenate":   # the pieces the loop did not write
            copy_pieces(fe, st, {v for v, ws in stored.items() if any(s2 is st for s2, _, _ in ws)}
                        | numba_slots.placed(dialect, st), depth)


def _scratch_outputs(fe, dialect, g, gate) -> set:
    """The kept results of group g that may be written into scratch arrays
    (`numba_scratch`): in a body that runs repeatedly, not behind a zero gate
    (whose skipped elements must be zeros), small, and dying in the body."""
    if not g.repeated or gate is not None:
        return set()
    cands = {st.pat[0] for st in g.fused if st.pat[0] in g.keep and st.exp.op != "sum"
             and st.pat[0].type.nbytes <= numba_scratch.SCRATCH_BYTES}
    return numba_scratch.local_values(g.rest, g.result, cands, dialect.push_copies, fe.own) if cands else set()


def _in_locals(sums, lanes, ndim) -> list:
    """The partial sums (not full ones) that reduce the innermost axis."""
    return [v for v, keep in sums.items() if v not in lanes and ndim - 1 not in keep]


def _sum_elem(fe, v, keep, idx) -> str:
    """The element of partial sum v that the loop position `idx` adds into."""
    return fe.py[v] + f"[{', '.join(idx[d] for d in keep)}]"


def _varies(fe, sv) -> None:
    if fe.varying[-1] is not None:
        fe.varying[-1].add(sv)


def _body(fe, dialect, g, gate, arrays, outs, sums, idx, inner, scalars, lanes, regs, stored) -> None:
    """The fused statements at loop depth `inner`; `lanes[v]` is the text that a
    full sum v's value is stored or added with (``buf[j] =``, ``lanes[i & 7] +=``),
    `regs[v]` the local that a sum over the innermost axis adds into, `stored[v]`
    the updates (and their arrays' names) that an elementwise result is written by."""
    # the scalars below that change in the loop (`loop_invariant`); None: too short to vectorise
    fe.varying.append(set() if int(g.shape[-1]) >= TINY_TRIP else None)
    for st in g.fused:
        e: Prim = st.exp
        v = st.pat[0]
        if gate is not None and v is gate.var:  # read before the inner loops
            if v in outs:
                fe.line(inner, f"{outs[v]}[{', '.join(idx)}] = {scalars[v]}")
            continue
        fe.provenance(st, inner)
        args = []
        for a in e.args:
            if isinstance(a, Const) and not a.type.shape:
                args.append(a)
                continue
            sv = Var(f"\0{len(fe.py)}", TensorType(a.type.dtype, ()))
            if a in scalars:
                fe.py[sv] = scalars[a]
                _varies(fe, sv)
            elif a.type.shape:
                fe.py[sv] = f"{arrays[a]}[{broadcast_index(a, g.shape, idx)}]"
                _varies(fe, sv)
            else:
                fe.py[sv] = fe.a(a)
            fe.strong.add(sv)
            args.append(sv)
        if v in sums:  # accumulate
            keep = sums[v]
            if v in lanes:
                fe.line(inner, f"{lanes[v]} {fe.a(args[0])}  # pb:sum")
            else:
                acc = regs[v] if v in regs else _sum_elem(fe, v, keep, idx)
                fe.line(inner, f"{acc} += {fe.a(args[0])}  # pb:sum")
            continue
        if e.op in ("floordiv", "mod", "pow") and v.type.dtype in ("i64", "bool") and not (
                isinstance(args[1], Const) and (args[1].value >= 0 if e.op == "pow" else args[1].value != 0)):
            k = fe.mod.sites.add(checks.Site("div", st.loc, op=e.op))
            fe.line(inner, f"if {fe.a(args[1])} {'< 0' if e.op == 'pow' else '== 0'}:")
            fe.line(inner + 1, f"raise ZeroDivisionError({k}, 0)")
        if e.op == "broadcast_to":
            text = fe.a(args[0])
        else:
            sout = Var(f"\0{len(fe.py)}", TensorType(v.type.dtype, ()))
            text = dialect.scalar_expr(fe, Prim(e.op, tuple(args), e.params), [sout],
                                       libm=int(g.shape[-1]) < TINY_TRIP)
        scalars[v] = name = fe.fresh(f"{v.name}_k")
        fe.line(inner, f"{name} = {text}  # pb:{e.op}")
        if v in outs:
            fe.line(inner, f"{outs[v]}[{', '.join(idx)}] = {name}")
        for up, target, off in stored.get(v, ()):
            fe.line(inner, f"{store_target(fe, up, target, idx, off)} {name}  # pb:{up.exp.op}")
    fe.varying.pop()
