"""Contractions: `sum(mul(x, y), axes)` over broadcast operands becomes one
`matmul` (note [vectorize] in docs/design.md).

Contract: `contract_body(body, supply) -> Body` rewrites, in `body` and every
body nested in it, each statement ``s = sum(t, axes)`` where

- ``t = mul(x, y)``, or the strong product of the derivative rules
  (``where(isnan(r) & ((x == 0) | (y == 0)), 0, r)`` with ``r = mul(x, y)``,
  `ir.prims._util.smul`), read by nothing but this sum;
- ``x`` and ``y`` are arrays seen through `reshape`s that only add or drop
  unit axes, `broadcast_to` and `transpose` (traced back to their base
  arrays, so each axis of ``t`` is an axis of x's base, of y's base, of both
  or of neither);
- at least one summed axis is an axis of both bases (a contracted index), and
  the product is larger than its two bases and the result together (the
  rewrite saves memory; it never costs more arithmetic);

into transposes and reshapes of the two bases, one `matmul` (2-D, or stacked
over the axes both keep: batch indices), a reshape/transpose to the result's
axis order, a broadcast for the axes of neither and a product with the size of
the summed axes of neither. An axis summed in one base only is summed there
first. The product `t` is never built; `dce` then drops it. The rewritten sum
differs from the original by rounding only, and by the strong product's
guard: a contraction is a sum of plain products, as `matmul`'s own rules
(note [edge-numerics]: a 0 cotangent against an inf gives NaN there).
Statements are otherwise unchanged; the pass is pure.
"""
from __future__ import annotations

import math

from ..ir.builder import Builder
from ..ir.core import Body, Const, Let, Prim, Var
from ..ir.traverse import dce, free_vars, map_exp
from ..ir.types import TensorType

_VIEWS = ("reshape", "broadcast_to", "transpose")


def contract_body(body: Body, supply) -> Body:
    """`body` with every contraction (module docstring) made a `matmul`."""
    out, changed = _body(body, supply, {})
    return dce(out) if changed else body


def _uses(body: Body) -> dict:
    """How many times each var is read in `body` (nested bodies included)."""
    n: dict = {}
    for st in body.stmts:
        for v in _exp_reads(st.exp):
            n[v] = n.get(v, 0) + 1
    for a in body.result:
        if isinstance(a, Var):
            n[a] = n.get(a, 0) + 1
    return n


def _exp_reads(e) -> list:
    if isinstance(e, Prim):
        return [a for a in e.args if isinstance(a, Var)]
    return list(free_vars(e))


def _body(body: Body, supply, defs: dict):
    defs = dict(defs)
    uses = _uses(body)
    uses["__local__"] = local = set()
    changed = False
    stmts: list[Let] = []
    for st in body.stmts:
        e = st.exp
        if not isinstance(e, Prim):
            flag = [False]

            def scope(binders, b):
                nb, ch = _body(b, supply, defs)
                flag[0] |= ch
                return binders, nb

            e2 = map_exp(e, lambda a: a, scope)
            if flag[0]:
                changed = True
                st = Let(st.pat, e2, st.loc)
            stmts.append(st)
            continue
        if e.op == "sum" and st.pat[0].type.is_float:
            new = _contract(st, defs, uses, supply)
            if new is not None:
                stmts.extend(new)
                changed = True
                for s in new:
                    for v in s.pat:
                        defs[v] = s
                continue
        stmts.append(st)
        for v in st.pat:
            defs[v] = st
            local.add(v)
    return Body(tuple(stmts), body.result), changed


# -- recognising the product ------------------------------------------------------

def _def(defs, a, op=None):
    if not isinstance(a, Var):
        return None
    st = defs.get(a)
    if st is None or not isinstance(st.exp, Prim) or (op is not None and st.exp.op != op):
        return None
    return st


def _is_zero(a) -> bool:
    return isinstance(a, Const) and not a.type.shape and a.value == 0


def _product(t, defs, uses):
    """(x, y) when `t` is mul(x, y) or its strong product (made in this body),
    read only by the sum."""
    local = uses["__local__"]
    if uses.get(t, 0) != 1 or t not in local:
        return None
    st = _def(defs, t)
    if st is None:
        return None
    e = st.exp
    if e.op == "mul":
        return e.args
    if e.op != "where" or not _is_zero(e.args[1]):
        return None
    cond, r = e.args[0], e.args[2]
    m = _def(defs, r, "mul")
    c = _def(defs, cond, "and")
    if m is None or c is None:
        return None
    x, y = m.exp.args
    # where(isnan(r) & z, 0, r) differs from r only where r is NaN, whatever z is
    # (the strong product's `(x == 0) | (y == 0)`): a contraction drops the guard
    if not any((q := _def(defs, a, "isnan")) is not None and q.exp.args[0] == r for a in c.exp.args):
        return None
    if uses.get(r, 0) != 2 or r not in local:
        return None
    return x, y


def _trace(a, defs):
    """(base atom, axis map): each axis of `a` is an axis of the base, or None
    (a broadcast or unit axis)."""
    base = a
    chain = []
    while True:
        st = _def(defs, base)
        if st is None or st.exp.op not in _VIEWS:
            break
        src = st.exp.args[0]
        if st.exp.op == "reshape":
            ns = [d for d in src.type.shape if d != 1]
            if ns != [d for d in base.type.shape if d != 1]:
                break
        chain.append(st)
        base = src
    # replay the views from the base up to `a`
    m = [None if d == 1 else i for i, d in enumerate(base.type.shape)]
    for st in reversed(chain):
        src, out = st.exp.args[0], st.pat[0]
        op = st.exp.op
        if op == "transpose":
            m = [m[p] for p in st.exp.p["perm"]]
        elif op == "broadcast_to":
            shape = tuple(out.type.shape)
            lead = len(shape) - len(m)
            m = [None] * lead + [None if src.type.shape[j] == 1 and shape[lead + j] != 1 else m[j]
                                 for j in range(len(m))]
        else:  # reshape adding/dropping unit axes: non-unit axes in order
            it = iter(x for x, d in zip(m, src.type.shape) if d != 1)
            m = [None if d == 1 else next(it) for d in out.type.shape]
    return base, m


# -- the rewrite ---------------------------------------------------------------------

def _contract(st: Let, defs, uses, supply):
    (t,) = st.exp.args
    axes = tuple(st.exp.p["axes"])
    prod = _product(t, defs, uses)
    if prod is None:
        return None
    x, y = prod
    R = t.type.ndim
    if not all(isinstance(a.type, TensorType) and a.type.is_float for a in (x, y)):
        return None     # BLAS products are of floats
    xb, mx = _trace(x, defs)
    yb, my = _trace(y, defs)
    mx = [None] * (R - len(mx)) + mx
    my = [None] * (R - len(my)) + my
    shape = tuple(t.type.shape)
    # each base axis of size > 1 is seen by exactly one axis of t
    for base, m in ((xb, mx), (yb, my)):
        seen = [a for a in m if a is not None]
        if len(seen) != len(set(seen)) or len(seen) != sum(1 for d in base.type.shape if d != 1):
            return None
    K = [i for i in range(R) if i in axes and mx[i] is not None and my[i] is not None]
    if not K or math.prod(shape[i] for i in K) == 1:
        return None
    out = st.pat[0]
    if t.type.size <= xb.type.size + yb.type.size + out.type.size:
        return None
    B = [i for i in range(R) if i not in axes and mx[i] is not None and my[i] is not None]
    M = [i for i in range(R) if i not in axes and mx[i] is not None and my[i] is None]
    N = [i for i in range(R) if i not in axes and mx[i] is None and my[i] is not None]
    SX = [i for i in range(R) if i in axes and mx[i] is not None and my[i] is None]
    SY = [i for i in range(R) if i in axes and mx[i] is None and my[i] is not None]
    Z = [i for i in range(R) if i in axes and mx[i] is None and my[i] is None]
    b = Builder(supply, st.loc)
    size = lambda ax: math.prod(shape[i] for i in ax)  # noqa: E731
    bsz, msz, ksz, nsz = size(B), size(M), size(K), size(N)
    if B:
        fx, fy = (bsz, msz, ksz), (bsz, ksz, nsz)
    else:
        fx, fy = ((msz, ksz) if M else (ksz,)), ((ksz, nsz) if N else (ksz,))
    r = b.matmul(_operand(b, xb, mx, [B, M, K, SX], size, fx), _operand(b, yb, my, [B, K, N, SY], size, fy))
    # axes B, M, N of t, in that order -> the kept axes of t in their order
    order = B + M + N
    r = _reshape(b, r, tuple(shape[i] for i in order))
    kept = [i for i in range(R) if i not in axes]
    live = [i for i in kept if i in order]
    r = _transpose(b, r, tuple(order.index(i) for i in live))
    want = tuple(out.type.shape)
    if len(live) != len(kept):
        r = _reshape(b, r, tuple(shape[i] if i in order else 1 for i in kept))
        r = b.broadcast_to(r, shape=want)
    if Z and size(Z) != 1:
        r = b.mul(r, Const(float(size(Z)), TensorType(r.type.dtype)))
    if r.type.dtype != out.type.dtype:
        r = b.cast(r, dtype=out.type.dtype)
    if not isinstance(r, Var) or not b.stmts or b.stmts[-1].pat[0] != r:
        r = b.reshape(r, shape=want)
    assert tuple(r.type.shape) == want and r.type.dtype == out.type.dtype, (r.type, out.type)
    last = b.stmts[-1]
    b.stmts[-1] = Let((out,), last.exp, last.loc)
    return b.stmts


def _operand(b, base, m, groups, size, final):
    """`base` transposed to the axis groups' order (each group in t's axis
    order), summed over the last group when that is not empty (axes summed in
    this operand only), reshaped to `final`."""
    order = [m[i] for g in groups for i in g]
    rest = [a for a in range(base.type.ndim) if a not in order]   # unit axes
    v = _transpose(b, base, tuple(order + rest))
    if groups[-1]:
        keep = tuple(size(g) for g in groups[:-1] if g)
        v = b.sum(_reshape(b, v, keep + (size(groups[-1]),)), axes=(len(keep),))
    return _reshape(b, v, final)


def _reshape(b, v, shape):
    shape = tuple(int(d) for d in shape)
    return v if tuple(v.type.shape) == shape else b.reshape(v, shape=shape)


def _transpose(b, v, perm):
    perm = tuple(perm)
    return v if perm == tuple(range(len(perm))) else b.transpose(v, perm=perm)
