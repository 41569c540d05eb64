"""The innermost loop of a fused group that accumulates sums, in the two forms that
vectorise (notes [strip-sums], [vecmath]); `numba_fusion.emit` prints the group's
other loops and the plain lanes form (`lanes[i & 7] += v`, whose computed-index
store keeps LLVM from vectorising).

Contract:
- `LANES`: the partial sums of a full sum (element i of the innermost axis adds into
  lane i & 7; the lanes are added in order at the end). Every form below keeps that
  assignment and that order, so all give the same bits.
- `unrolled(g, gate) -> bool`: whether group g takes the unrolled form: its sums are
  all full sums, its statements inline float arithmetic (`VECTOR_OPS` but the strong
  products, `GUARDED`), at most `UNROLL_BODY` of them, no zero gate, no store in the
  loop, rows of at least `numba_fusion.TINY_TRIP`.
- `emit_unrolled(fe, g, idx, inner, lanes, body)`: the innermost loop in steps of
  `LANES`, `body` printed once per lane, each copy adding into its lane's local
  (`lanes[v]`: the LANES local names of full sum v); the last n % LANES elements as
  guarded copies. `body(level, texts)` prints the fused statements at `level`, a sum
  v's value stored or added with `texts[v]`.
- `strip_worth(g) -> bool`: whether the blocks pay (`STRIP` elements through a buffer):
  vecmath functions, or inline float arithmetic only.
- `emit_strip(fe, g, idx, inner, depth, first_header, lanes, regs, body) -> dict`: the
  innermost loop in blocks of `STRIP` through buffers (`lanes[v]`: full sum v's lanes
  array; `regs[v]`: the local a row sum v adds into); returns the row sums' per-row
  lanes (a non-empty dict means the tail was printed too, else the caller prints the
  tail loop's body after the header this prints).
"""
from __future__ import annotations

from . import pysource as ps

LANES = 8
STRIP = 256   # block length of a strip-mined fused sum

# float operations LLVM vectorises inline (no call, no check that raises)
VECTOR_OPS = frozenset({"neg", "abs", "sqrt", "add", "sub", "mul", "div", "smul", "smask", "lt", "le", "gt", "ge",
                        "eq", "ne", "and", "or", "xor", "not", "isnan", "where", "cast", "broadcast_to",
                        "maximum", "minimum", "sum"})

# a group of at most this many fused statements may print its body once per lane (`unrolled`)
UNROLL_BODY = 8
# strong products print a branch (note [strong-mul]): eight copies of it stay scalar, where the
# loop vectoriser if-converts the one in a block loop (llsq's gradient: 1.05 -> 1.44 ms unrolled)
GUARDED = frozenset({"smul", "smask"})


def unrolled(g, gate) -> bool:
    """See the module docstring (note [strip-sums], "Unrolled lanes")."""
    from .numba_fusion import TINY_TRIP

    if gate is not None or g.stores or int(g.shape[-1]) < TINY_TRIP or len(g.fused) > UNROLL_BODY:
        return False
    sums = [st for st in g.fused if st.exp.op == "sum"]
    return bool(sums) and all(not st.pat[0].type.shape for st in sums) and all(
        st.exp.op in VECTOR_OPS and st.exp.op not in GUARDED and st.pat[0].type.dtype in ("f64", "f32", "bool")
        for st in g.fused)


def strip_worth(g) -> bool:
    """Strip-mine a group's full sums when its loop vectorises only without the
    lanes' computed-index store: it computes vecmath's functions (note [vecmath]),
    or only inline float arithmetic (note [strip-sums]). A libm call does not
    vectorise either way, and there the blocks cost a little."""
    from .libcalls import vecmath

    if vecmath.enabled() and any(st.exp.op in vecmath.OPS for st in g.fused):
        return True
    return all(st.exp.op in VECTOR_OPS and st.pat[0].type.dtype in ("f64", "f32", "bool") for st in g.fused)


def emit_unrolled(fe, g, idx, inner, lanes, body) -> None:
    """See the module docstring. LLVM packs the eight copies into vector operations, where
    the blocks through a buffer stored and loaded every value once more."""
    fe.lines.pop()        # `for i_last in range(n_last):`, printed by the caller
    fe.line_locs.pop()
    n_last = int(g.shape[-1])
    n8 = n_last - n_last % LANES   # at least TINY_TRIP: printed as is, it is a size that a
    # shape-generic module reads at run time (note [shape-generic]), where a count below 16
    # (n8 // 8, n % 8) would stay a literal and make every size compile
    if n8:
        ibk, ib = fe.fresh("ibk"), fe.fresh("ib")
        fe.line(inner - 1, f"for {ibk} in range({n8} // {LANES}):")
        fe.line(inner, f"{ib} = {ibk} * {LANES}")
        for k in range(LANES):
            fe.line(inner, f"{idx[-1]} = {ib} + {k}" if k else f"{idx[-1]} = {ib}")
            body(inner, {v: f"{ls[k]} +=" for v, ls in lanes.items()})
    fe.line(inner - 1, f"# the last {n_last} % {LANES} elements, one per lane (sizes a shape-generic module may read)")
    for j in range(LANES - 1):   # element n8 + j to lane j
        fe.line(inner - 1, f"if {n8 + j} < {n_last}:")
        fe.line(inner, f"{idx[-1]} = {n8 + j}")
        body(inner, {v: f"{ls[j]} +=" for v, ls in lanes.items()})


def emit_strip(fe, g, idx, inner, depth, first_header, lanes, regs, body) -> dict:
    """See the module docstring. The inner index runs in blocks of STRIP whose lane sums go
    through a buffer, so the block's loop has no store through a computed index and LLVM
    vectorises it (note [vecmath]). A row sum (`regs`) gets lanes of its own, zeroed for each
    row and added into its local after the blocks (note [strip-sums], "Row sums")."""
    n_last = int(g.shape[-1])
    nb = n_last - n_last % STRIP
    bufs = {v: fe.fresh(f"{v.name}_buf") for v in [*lanes, *regs]}
    rows = {v: fe.fresh(f"{v.name}_rl") for v in regs}
    ib, ij, il = fe.fresh("ib"), fe.fresh("ij"), fe.fresh("il")
    header = fe.lines.pop()   # `for i_last in range(n_last):`, printed by the caller
    fe.line_locs.pop()        # (fe.lines and fe.line_locs stay parallel)
    allocs = [f"{b} = np.empty({STRIP}, dtype={ps._NP_DTYPE[v.type.dtype]})" for v, b in bufs.items()]
    allocs += [f"{rl} = np.zeros({LANES}, dtype={ps._NP_DTYPE[v.type.dtype]})" for v, rl in rows.items()]
    for text in allocs:   # allocated once, before the loop nest
        fe.line(depth, text)
        fe.lines.insert(first_header, fe.lines.pop())
        fe.line_locs.insert(first_header, fe.line_locs.pop())
    assert header.strip().startswith(f"for {idx[-1]} in range("), header
    for rl in rows.values():
        fe.line(inner - 1, f"for {il} in range({LANES}):")
        fe.line(inner, f"{rl}[{il}] = 0.0")
    # the blocks are counted from 0, not stepped through with range(0, nb, STRIP): with nb a
    # run-time value (a shape-generic module, note [shape-generic]) the stepped range hid from
    # LLVM that the index is never negative, and numba's negative-index wraparound stayed in
    # the loop (lse's gradient 3.9x slower)
    ibk = fe.fresh("ibk")
    fe.line(inner - 1, f"for {ibk} in range({nb} // {STRIP}):")
    fe.line(inner, f"{ib} = {ibk} * {STRIP}")
    fe.line(inner, f"for {ij} in range({STRIP}):")
    fe.line(inner + 1, f"{idx[-1]} = {ib} + {ij}")
    body(inner + 1, {v: f"{b}[{ij}] =" for v, b in bufs.items()})
    fe.line(inner, f"for {ij} in range(0, {STRIP}, {LANES}):")
    fe.line(inner + 1, f"for {il} in range({LANES}):")
    for v, b in bufs.items():
        fe.line(inner + 2, f"{lanes[v] if v in lanes else rows[v]}[{il}] += {b}[{ij} + {il}]")
    if not rows:
        fe.line(inner - 1, f"for {idx[-1]} in range({nb}, {n_last}):")   # the caller prints its body
        return rows
    # the last n_last % STRIP elements as one shorter block through the buffers (its element
    # nb + j goes to lane j & 7, as in the blocks), then each row sum's lanes added into its local
    tail = n_last - nb
    fe.line(inner - 1, f"for {ij} in range({tail}):")
    fe.line(inner, f"{idx[-1]} = {nb} + {ij}")
    body(inner, {**{v: f"{lanes[v]}[{idx[-1]} & {LANES - 1}] +=" for v in lanes},
                 **{v: f"{bufs[v]}[{ij}] =" for v in rows}}, own=False)
    fe.line(inner - 1, f"for {ij} in range({tail}):")
    for v, rl in rows.items():
        fe.line(inner, f"{rl}[{ij} & {LANES - 1}] += {bufs[v]}[{ij}]")
    for v, rl in rows.items():
        fe.line(inner - 1, f"{regs[v]} += " + " + ".join(f"{rl}[{k}]" for k in range(LANES)))
    return rows
