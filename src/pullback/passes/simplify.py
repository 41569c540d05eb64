"""Clean-up of generated code: common-subexpression elimination and dead code.

Contract: `simplify_func(f) -> Func` returns an equivalent function. Scalar
primitives on constants are folded, and so is arithmetic on arrays known to
be all zeros or all ones (`_zero_rule`: notes [const-args] and
[symbolic-zeros]; exact up to the sign of a zero). CSE
reuses an earlier identical primitive application (same op, operands and
params) that is in scope; store primitives are effects and are never merged,
nor are fresh arrays (`full`), which are usually updated in place.
Then `ir.traverse.dce` drops statements nobody reads. The derivative passes
run it on the functions they create: re-executed forward sweeps otherwise
recompute values the surrounding code already has.
"""
from __future__ import annotations

import dataclasses

from ..ir.core import Body, Const, Func, Let, Prim, Var
from ..ir.prims import TABLE
from ..ir.prims._util import _safe_const
from ..ir.prims.indexing import region_shape, regions_disjoint, static_ranges
from ..ir.traverse import dce, map_exp
from ..ir.types import TensorType
from .strong_mul import strong_guard

_EFFECTS = frozenset({"store_new", "store_push", "store_pop", "store_zeros_like", "store_copy"})


class _Known:
    """What the walk knows of the values bound so far: `full` zeros (and shape
    changes of them), ones, and each variable's defining Prim."""

    def __init__(self):
        self.zeros: set = set()
        self.ones: set = set()
        self.defs: dict = {}


def cse_body(body: Body, avail: dict, m: dict, known: _Known | None = None) -> Body:
    avail = dict(avail)
    known = _Known() if known is None else known
    zeros = known.zeros

    def atom(a):
        return m.get(a, a) if isinstance(a, Var) else a

    def scope(binders, b):
        return binders, cse_body(b, avail, m, known)

    stmts = []
    for st in body.stmts:
        e = map_exp(st.exp, atom, scope)
        z = _zero_rule(e, st.pat, known)
        if isinstance(z, Prim):
            e = z
        elif z is not None:
            m[st.pat[0]] = z
            continue
        folded = _fold(e, st.pat)
        if folded is None:
            folded = _scalar_rule(e, st.pat, known)
        if isinstance(folded, Prim):
            e = folded
        elif folded is not None:
            m[st.pat[0]] = folded
            continue
        if isinstance(e, Prim) and len(st.pat) == 1:
            known.defs[st.pat[0]] = e
            _note_units(e, st.pat[0], known)
        if isinstance(e, Prim) and e.op not in _EFFECTS and len(st.pat) == 1 and not _fresh_array(e, st.pat[0]):
            key = (e.op, e.args, e.params)
            try:
                hit = avail.get(key)
            except TypeError:  # unhashable params
                hit, key = None, None
            if hit is not None and hit.type == st.pat[0].type:
                m[st.pat[0]] = hit
                continue
            if key is not None:
                avail[key] = st.pat[0]
        stmts.append(Let(st.pat, e, st.loc))
    return Body(tuple(stmts), tuple(atom(a) for a in body.result))


def _note_units(e: Prim, v: Var, known: _Known) -> None:
    """Record v as zeros or ones: a `full` or broadcast of the constant, or a
    shape change of such an array."""
    if e.op in ("full", "broadcast_to") and e.args and _is_zero(e.args[0], known.zeros):
        known.zeros.add(v)
    elif e.op in ("full", "broadcast_to") and e.args and _is_const(e.args[0], 1):
        known.ones.add(v)
    elif e.op in _SHAPE_OF_ONE and e.args and isinstance(e.args[0], Var) and e.args[0] in known.ones:
        known.ones.add(v)


def _is_const(a, c) -> bool:
    return isinstance(a, Const) and not a.type.shape and a.value == c


def _fresh_array(e, v) -> bool:
    """`full` of an array is never merged: each copy is usually updated in place
    (an accumulator), so sharing one makes all uses but the last copy it, and
    the readable output named one accumulator after another (`x_adj` printed
    as `y`)."""
    return e.op == "full" and bool(getattr(v.type, "shape", ()))


def _is_zero(a, zeros) -> bool:
    return (isinstance(a, Var) and a in zeros) or (isinstance(a, Const) and not a.type.shape and a.value == 0)


_SHAPE_OF_ZERO = frozenset({"index", "broadcast_to", "reshape", "transpose", "sum", "neg"})
_SHAPE_OF_ONE = frozenset({"index", "broadcast_to", "reshape", "transpose"})


def _zero_rule(e, pat, known: _Known):
    """Arithmetic on arrays known to be `full` zeros or ones (note
    [const-args]): an atom the statement equals, a simpler Prim, or None.
    Exact rules up to the sign of a zero (note [symbolic-zeros]): `x + 0`,
    `x - 0`, `0 - x`, shape changes of zeros, adding zeros into an
    array, the strong product of a zero or a one (never the plain `x * 0`,
    which is NaN for an infinite x), and a region read from zeros that one
    update wrote: zeros outside the update, its value inside."""
    if not (isinstance(e, Prim) and len(pat) == 1 and isinstance(pat[0].type, TensorType)):
        return None
    zeros, defs = known.zeros, known.defs
    t = pat[0].type
    zero = lambda: Prim("full", (Const(0, TensorType(t.dtype)),), (("shape", tuple(t.shape)),))
    args = e.args
    if e.op in _SHAPE_OF_ZERO and args and isinstance(args[0], Var) and args[0] in zeros:
        return zero()
    if (e.op == "index_update" and e.p["mode"] == "add" and isinstance(args[1], Var) and args[1] in zeros
            and None not in static_ranges(e.p["spec"], args[2:], tuple(args[0].type.shape))):
        return _as_type(args[0], t)   # (indices known to be in bounds: no error is dropped)
    if e.op == "where" and _is_zero(args[1], ()) and isinstance(args[2], Var):
        ad = strong_guard(args[0], args[2], defs)   # the strong product of note [edge-numerics]
        if ad is not None:
            if any(isinstance(a, Var) and a in zeros for a in ad):
                return zero()
            for a, b in (ad, ad[::-1]):
                if isinstance(a, Var) and a in known.ones:
                    return _as_type(b, t)
    if e.op == "index" and isinstance(args[0], Var):
        u = defs.get(args[0])
        shape = tuple(args[0].type.shape)
        # both regions static and in bounds: no bounds check is dropped with the update or the read
        if (_reads_zeros(u, zeros) and None not in static_ranges(u.p["spec"], u.args[2:], shape)
                and None not in static_ranges(e.p["spec"], args[1:], shape)):
            if regions_disjoint(shape, u.p["spec"], u.args[2:], e.p["spec"], args[1:]):
                return zero()
            v = u.args[1]
            if (_same_elements(shape, u.p["spec"], u.args[2:], e.p["spec"], args[1:]) and v.type.dtype == t.dtype
                    and tuple(v.type.shape) == region_shape(shape, u.p["spec"])):
                return v if v.type == t else Prim("reshape", (v,), (("shape", tuple(t.shape)),))
    if e.op in ("add", "sub") and len(args) == 2:
        x, y = args
        if isinstance(y, Var) and y in zeros:
            return _as_type(x, t)
        if isinstance(x, Var) and x in zeros:
            if e.op == "add":
                return _as_type(y, t)
            if y.type.dtype == t.dtype:
                return Prim("neg", (y,), ()) if tuple(y.type.shape) == tuple(t.shape) else None
    return None


def _reads_zeros(u, zeros) -> bool:
    """Is `u` an `index_update` of zeros (its other elements stay zeros)?"""
    return (u is not None and u.op == "index_update" and isinstance(u.args[0], Var) and u.args[0] in zeros)


def _same_elements(shape, spec_a, idx_a, spec_b, idx_b) -> bool:
    """Do two regions select the same elements, in the same order, known statically?"""
    ra, rb = static_ranges(spec_a, idx_a, shape), static_ranges(spec_b, idx_b, shape)
    return None not in ra and ra == rb


def _as_type(x, t):
    """`x` itself if it has type `t`, its broadcast if only the shape differs, else None."""
    if x.type == t:
        return x
    if x.type.dtype == t.dtype:
        return Prim("broadcast_to", (x,), (("shape", tuple(t.shape)),))
    return None


def _identity(e, pat):
    """`x + 0`, `x - 0`, `x * 1`, `x / 1` -> `x` when the type does not change."""
    if not (isinstance(e, Prim) and e.op in ("add", "sub", "mul", "div") and len(pat) == 1):
        return None
    x, y = e.args
    unit = 1 if e.op in ("mul", "div") else 0
    for a, c in ((x, y), (y, x)) if e.op in ("add", "mul") else ((x, y),):
        if isinstance(c, Const) and c.type.shape == () and c.value == unit and a.type == pat[0].type:
            return a
    return None


def _fold(e, pat):
    """Constant folding of scalar primitives on constants (e.g. `n - 1` for a static n)."""
    ident = _identity(e, pat)
    if ident is not None:
        return ident
    if not (isinstance(e, Prim) and e.op not in _EFFECTS and len(pat) == 1 and pat[0].type.shape == ()
            and e.args and all(isinstance(a, Const) and a.type.shape == () for a in e.args)):
        return None
    row = TABLE.get(e.op)
    if row.multi:
        return None
    try:
        return Const(row.impl(*[a.value for a in e.args], **e.p), pat[0].type)
    except Exception:
        return None


def _scalar_rule(e, pat, known: _Known):
    """Scalar logic and strong products on constants (note [seed-constants]): what
    a derivative's guards fold to when a tangent is a known 0 or 1 (jacfwd's
    one-hot seeds, constant once its map is unrolled): an atom, a simpler Prim,
    or None. Exact up to the sign of a zero:

    - `c | x`, `c & x` for a constant c: c or x;
    - `isnan(r) & (x == 0)` with r = x or r = k * x, k finite and non-zero:
      False (a zero x makes r a zero);
    - `where(c, x, y)` for a constant c: x or y; `where(c, x, x)`: x;
    - `where(isnan(r), 0, r)` with r = 0 * d (the strong product of a zero
      constant, its `(0 == 0) | ...` folded away): 0;
    - `smul(0, d)`: 0, `smul(1, d)`: d."""
    if not (isinstance(e, Prim) and len(pat) == 1 and isinstance(pat[0].type, TensorType) and not pat[0].type.shape
            and e.args and all(isinstance(a.type, TensorType) and not a.type.shape for a in e.args)):
        return None
    t = pat[0].type
    args, defs = e.args, known.defs
    if e.op in ("and", "or") and t.dtype == "bool" and len(args) == 2:
        for a, b in (args, args[::-1]):
            if isinstance(a, Const) and b.type == t:
                return Const(bool(a.value), t) if bool(a.value) == (e.op == "or") else b
        if e.op == "and" and _never_both(args, defs):
            return Const(False, t)
        return None
    if e.op == "where":
        c, x, y = args
        if isinstance(c, Const):
            r = x if c.value else y
            return r if r.type == t else None
        if x == y and x.type == t:
            return x
        if _is_const(x, 0) and isinstance(y, Var) and isinstance(c, Var):
            rd, cd = defs.get(y), defs.get(c)
            if (rd is not None and rd.op == "mul" and any(_is_const(a, 0) for a in rd.args)
                    and cd is not None and cd.op == "isnan" and cd.args[0] == y and t.is_float):
                return Const(0.0, t)
        return None
    if e.op == "smul" and t.is_float:
        for a, b in (args, args[::-1]):
            if _is_const(a, 0):
                return Const(0.0, t)
            if _is_const(a, 1) and b.type == t:
                return b
    return None


def _never_both(args, defs) -> bool:
    """Is `p & q` with p = isnan(r), q = (x == 0) always False: r = x, or r = k * x
    for a finite non-zero constant k (a zero x makes r a zero, never NaN)?"""
    for p, q in (args, args[::-1]):
        pd, qd = (defs.get(a) if isinstance(a, Var) else None for a in (p, q))
        if pd is None or qd is None or pd.op != "isnan" or qd.op != "eq" or not _is_const(qd.args[1], 0):
            continue
        r, x = pd.args[0], qd.args[0]
        if r == x:
            return True
        rd = defs.get(r) if isinstance(r, Var) else None
        if rd is not None and rd.op == "mul" and any(
                a == x and _safe_const(k) for a, k in (rd.args, rd.args[::-1])):
            return True
    return False


def simplify_func(f: Func) -> Func:
    return dataclasses.replace(f, body=dce(cse_body(f.body, {}, {})))
