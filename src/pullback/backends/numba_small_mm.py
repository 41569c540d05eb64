"""Small matrix products inside loops, printed as loop nests where they are
used (note [small-matmul], "Inside loops").

Contract:
- `inline(body) -> set[int]`: the ids of the statements of `body` (a body
  that runs more than once per call, `numba_scratch.repeated_bodies`) that
  are `matmul`s of operands of rank 1 or 2 and static shapes that
  `libcalls.linalg` prints as loops (`_loops`: at most `SMALL_MATMUL`
  multiply-adds, or integers).
- `scratches(body, ids, own, push_copies) -> set[int]`: those of `ids` whose
  array result has a static shape of at most `numba_scratch.SCRATCH_BYTES` and
  dies in the iteration (`numba_scratch.local_values`): they are written into
  a scratch array allocated once per call.
- `emit(fe, st, depth, scratch)`: prints such a statement: its result array
  (the scratch array, or a new ``np.empty``) under a name of its own, the loop
  nest, then the result bound to the statement's name (which may be an
  operand's: `a = a @ r` in a loop). Each entry sums its products left to
  right from zero in the result's dtype, exactly as the shared helper of
  `libcalls.linalg` does, so values are the same bit for bit; the sizes are
  literals. A dot product is a scalar.

Why: the shared helper, called once per iteration, allocated its result and
took its operands through a call: ht's rerolled bone chain (note [reroll])
makes two 4 x 4 products per bone and direction: with them printed in place
(and the narrow products of `numba_narrow`) its warm Jacobian is 14-21%
faster, 6-18% with the narrow products alone
(benchmarks/results/ht-narrow-matmul-2026-12-06.md).
"""
from __future__ import annotations

from ..ir.core import Const, Prim
from . import numba_scratch
from .libcalls.linalg import _loops, _nd


def _small(st) -> bool:
    e = st.exp
    if not (isinstance(e, Prim) and e.op == "matmul" and len(st.pat) == 1):
        return False
    x, y = e.args
    if not (1 <= x.type.ndim <= 2 and 1 <= y.type.ndim <= 2):
        return False
    if not all(isinstance(n, int) for a in (x, y) for n in a.type.shape):
        return False
    return _loops((x.type.shape, y.type.shape), (x.type.dtype, y.type.dtype), st.pat[0].type.dtype)


def inline(body) -> set:
    """See the module docstring."""
    return {id(st) for st in body.stmts if _small(st)}


def scratches(body, ids, own, push_copies) -> set:
    """See the module docstring."""
    stmts = body.stmts
    return {id(st) for k, st in enumerate(stmts)
            if id(st) in ids and st.pat[0].type.shape and numba_scratch.small_static(st.pat[0].type)
            and numba_scratch.local_values(stmts[k + 1:], body.result, {st.pat[0]}, push_copies, own)}


def _operand(fe, a, depth) -> str:
    """The text of operand `a`, bound to a name first unless it is one (a
    constant's text makes a copy: once, not per element)."""
    text = fe.a(a)
    if isinstance(a, Const) or not text.isidentifier():
        name = fe.fresh("mm_arg")
        fe.line(depth, f"{name} = {text}")
        return name
    return text


def emit(fe, st, depth, scratch: bool) -> None:
    """See the module docstring."""
    from .pysource import text

    x, y = st.exp.args
    v = st.pat[0]
    want = v.type.dtype
    nd = _nd(want)
    buf = numba_scratch.scratch(fe, v.type.shape, want) if scratch else None   # a line at the top: before n0
    n0 = len(fe.lines)
    xt, yt = _operand(fe, x, depth), _operand(fe, y, depth)
    rx, ry = x.type.ndim, y.type.ndim
    k = int(x.type.shape[-1])
    m = int(x.type.shape[0]) if rx == 2 else 1
    n = int(y.type.shape[1]) if ry == 2 else 1
    i, j, l, s = (fe.fresh(h) for h in ("i", "j", "l", "s"))
    xi = f"{xt}[{i}, {l}]" if rx == 2 else f"{xt}[{l}]"
    yi = f"{yt}[{l}, {j}]" if ry == 2 else f"{yt}[{l}]"
    xi, yi = (t if a.type.dtype == want else f"{nd}({t})" for t, a in ((xi, x), (yi, y)))
    if rx == ry == 1:   # a dot product: a scalar
        fe.line(depth, f"{s} = {nd}(0)")
        fe.line(depth, f"for {l} in range({k}):")
        fe.line(depth + 1, f"{s} += {xi} * {yi}")
        fe.line(depth, f"{fe.bind(v)} = {s}")
    else:
        direct = buf is not None and numba_scratch.unnamed(fe, v)   # written straight into its scratch array
        name = buf if direct else fe.fresh("mm")   # else bound to the result's name after the loops: it may be an operand's
        if not direct:
            fe.line(depth, f"{name} = {buf}" if buf else
                    f"{name} = np.empty({text._shape_lit(tuple(v.type.shape))}, dtype={nd})")
        loops = [(i, m)] * (rx == 2) + [(j, n)] * (ry == 2)   # the result's axes
        for d, (q, extent) in enumerate(loops):
            fe.line(depth + d, f"for {q} in range({extent}):")
        inner = depth + len(loops)
        fe.line(inner, f"{s} = {nd}(0)")
        fe.line(inner, f"for {l} in range({k}):")
        fe.line(inner + 1, f"{s} += {xi} * {yi}")
        fe.line(inner, f"{name}[{', '.join(q for q, _ in loops)}] = {s}")
        if direct:
            fe.py[v] = buf
        else:
            fe.line(depth, f"{fe.bind(v)} = {name}")
    for q in range(n0, len(fe.lines)):
        fe.lines[q] += "  # pb:matmul"
