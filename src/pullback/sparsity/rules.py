"""Per-primitive dependency rules for `detect` (note [sparse-jacobian]).

Contract: `prim(e, args, out_types, ncols)` takes a `Prim` statement and, per
argument, its (dependency set, known value) pair (`deps`), and returns one
pair per result. The dependency rules are keyed by primitive name here, beside
the primitive table rather than in it:

- element-wise rows (`ELEMENTWISE`): element i of the result depends on the
  elements of the operands it broadcasts from;
- data movement (`MOVES`: reshape, transpose, broadcast_to, concatenate, full,
  and index / index_update "set" / take / where with known index or condition
  values): evaluated on the operands' *positions*, so each result element
  names the one element it copies (exact);
- scatter-adds (index_update "add", take_add), reductions along axes, prefix
  sums and matmul: exact structure matrices (matmul drops the terms a known
  constant zero factor removes);
- gathers and updates at indices not known while analysing (data-dependent):
  every element depends on the whole operand;
- rows with a zero derivative (`zero_deriv`) and non-float results: nothing;
- any other primitive (linalg factorisations, special multi-result rows,
  callbacks, stores of saved values, rows added later): conservative, every result element
  depends on every element of every operand. A rule that fails also falls
  back to that, so a pattern is never too sparse.

Known values: integer and boolean results of primitives whose operands are
all known are evaluated with the row's NumPy `impl` (indices computed from a
loop counter), as are small float results (constant matrices for matmul).
"""
from __future__ import annotations

import numpy as np

from ..ir.core import Prim
from ..ir.prims import TABLE
from ..ir.types import TensorType
from . import deps as D

KNOWN_MAX = 100_000      # known values larger than this are forgotten
MATMUL_MAX = 20_000_000  # matmul structure with more terms than this is taken whole

ELEMENTWISE = frozenset(("neg", "sin", "cos", "tan", "exp", "log", "log1p", "expm1", "sqrt", "tanh", "logistic",
                         "abs", "add", "sub", "mul", "div", "pow", "maximum", "minimum", "mod", "atan2", "erf",
                         "erfc", "erfinv", "gammaln", "gamma", "log_ndtr", "polygamma", "cast", "where"))
MOVES = frozenset(("reshape", "transpose", "broadcast_to", "concatenate", "full", "index", "index_update", "take",
                   "where"))


def is_float(t) -> bool:
    """Whether values of type `t` carry derivatives: float tensors, and stores of
    floats (a store's set is one row, everything pushed into it)."""
    return bool(getattr(t, "is_float", False))


def size_of(t) -> int:
    return t.size if isinstance(t, TensorType) else 1


def full_dep(ds, out_types, ncols):
    """The conservative rule: every float result element on every operand element."""
    return [D.whole(ds, size_of(t), ncols) if is_float(t) else None for t in out_types]


def fold(e: Prim, knowns, out_types):
    """Known result values, when every operand is known."""
    if any(k is None for k in knowns) or not all(isinstance(t, TensorType) for t in out_types):
        return [None] * len(out_types)
    if sum(t.size for t in out_types) > KNOWN_MAX:
        return [None] * len(out_types)
    row = TABLE.get(e.op)
    try:
        with np.errstate(all="ignore"):
            r = row.impl(*knowns, **e.p)
    except Exception:  # noqa: BLE001 - a row that cannot evaluate these: not known
        return [None] * len(out_types)
    rs = tuple(r) if row.multi else (r,)
    return [np.asarray(v) for v in rs]


def prim(e: Prim, args, out_types, ncols):
    knowns = [k for _, k in args]
    ds = [d if is_float(a.type) else None for a, (d, _) in zip(e.args, args)]
    kn = fold(e, knowns, out_types)
    if e.op not in TABLE:
        return list(zip(full_dep(ds, out_types, ncols), kn))
    row = TABLE.get(e.op)
    if row.zero_deriv or not any(is_float(t) for t in out_types) or all(d is None for d in ds):
        return [(None, k) for k in kn]
    try:
        outs = _rule(row, e, ds, knowns, out_types, ncols)
    except D.TooDense:
        raise
    except Exception:  # noqa: BLE001 - a rule that cannot tell: conservative
        outs = None
    if outs is None:
        outs = full_dep(ds, out_types, ncols)
    outs = [d if is_float(t) else None for d, t in zip(outs, out_types)]
    return list(zip(outs, kn))


def _rule(row, e, ds, knowns, out_types, ncols):
    if row.multi or len(out_types) != 1:
        return None
    (ot,) = out_types
    op = e.op
    moves = op in MOVES and not (op == "index_update" and e.p["mode"] == "add")
    if moves and all(knowns[i] is not None for i in _control_args(op, len(e.args))):
        return [_move(row, e, ds, knowns, ot, ncols)]
    if op in ELEMENTWISE:
        return [_elementwise(e, ds, ot)]
    if op in ("index", "take"):        # a data-dependent gather: the whole operand
        return [D.whole([ds[0]], ot.size, ncols)]
    if op == "index_update":
        x, v = e.args[0], e.args[1]
        mode = e.p["mode"]
        if mode == "add" and all(k is not None for k in knowns[2:]):
            return [D.union([ds[0], _scatter_add_index(e, ds[1], knowns[2:], x, v)])]
        return [D.union([ds[0], D.whole([ds[1]], ot.size, ncols)])]
    if op == "take_add":
        if knowns[1] is not None:
            return [D.union([ds[0], _scatter_add_take(e, ds[2], knowns[1])])]
        return [D.union([ds[0], D.whole([ds[2]], ot.size, ncols)])]
    if op in ("sum", "prod", "max", "min"):
        return [_reduce(e.args[0].type, e.p["axes"], ds[0])]
    if op in ("cumsum", "rcumsum"):
        return [_scan(e.args[0].type, ds[0], ncols, reverse=op == "rcumsum")]
    if op == "matmul":
        return [_matmul(e, ds, knowns, ot, ncols)]
    return None


def _positions(t):
    return np.arange(size_of(t), dtype=np.int64).reshape(t.shape)


def _elementwise(e, ds, ot):
    parts = []
    for a, d in zip(e.args, ds):
        if d is None:
            continue
        src = np.broadcast_to(_positions(a.type), ot.shape).ravel()
        parts.append(D.take_rows(d, src))
    return D.union(parts)


def _control_args(op, n):
    """The operands of a movement that say where elements go (indices, a condition):
    their values must be known; the others are moved."""
    return {"index": range(1, n), "index_update": range(2, n), "take": (1,), "where": (0,)}.get(op, ())


def _move(row, e, ds, knowns, ot, ncols):
    """Evaluate the row on operand positions: each result element names its source."""
    vals, parts, sizes, off = [], [], [], 0
    control = _control_args(e.op, len(e.args))
    for i, a in enumerate(e.args):
        if i not in control:
            if ds[i] is None:
                vals.append(np.full(a.type.shape, -1, dtype=np.int64))
            else:
                vals.append(off + _positions(a.type))
                parts.append(ds[i])
                sizes.append(a.type.size)
                off += a.type.size
        else:
            vals.append(knowns[i])
    out = np.asarray(row.impl(*vals, **e.p)).astype(np.int64).ravel()
    if out.size != ot.size:
        return None
    src = D.stack(parts, sizes, ncols)
    return None if src is None else D.take_rows(src, out)


def _scatter_add_index(e, dv, idx, x, v):
    from ..ir.prims.indexing import np_index

    if dv is None:
        return None
    spec = e.p["spec"]
    tgt = _positions(x.type)[np_index(spec, idx, tuple(x.type.shape))]
    tgt = np.asarray(tgt)
    vpos = np.broadcast_to(_positions(v.type), tgt.shape)
    m = D.structure(tgt.ravel(), vpos.ravel(), (x.type.size, v.type.size))
    return D.apply(m, dv)


def _scatter_add_take(e, dv, idx):
    if dv is None:
        return None
    x, v = e.args[0], e.args[2]
    tgt = np.take(_positions(x.type), idx, axis=e.p["axis"])
    m = D.structure(tgt.ravel(), np.arange(v.type.size), (x.type.size, v.type.size))
    return D.apply(m, dv)


def _reduce(t, axes, d):
    if d is None:
        return None
    shape = tuple(t.shape)
    if not axes:
        return d
    keep = [i for i in range(len(shape)) if i not in axes]
    coords = np.unravel_index(np.arange(t.size), shape)
    kshape = tuple(shape[i] for i in keep)
    out = np.ravel_multi_index([coords[i] for i in keep], kshape) if keep else np.zeros(t.size, dtype=np.int64)
    m = D.structure(out, np.arange(t.size), (int(np.prod(kshape)) if keep else 1, t.size))
    return D.apply(m, d)


def _scan(t, d, ncols, reverse):
    n = t.shape[0]
    if n * (n + 1) // 2 > MATMUL_MAX:
        return D.whole([d], n, ncols)
    i, j = np.tril_indices(n) if not reverse else np.triu_indices(n)
    return D.apply(D.structure(i, j, (n, n)), d)


def _matmul(e, ds, knowns, ot, ncols):
    a, b = e.args
    pa, pb = _positions(a.type), _positions(b.type)
    ka = _const(a, knowns[0])
    kb = _const(b, knowns[1])
    if a.type.ndim == 1:
        pa = pa[None, :]
        ka = None if ka is None else ka[None, :]
    if b.type.ndim == 1:
        pb = pb[:, None]
        kb = None if kb is None else kb[:, None]
    batch = np.broadcast_shapes(pa.shape[:-2], pb.shape[:-2])
    m, k = pa.shape[-2:]
    p = pb.shape[-1]
    nb = int(np.prod(batch))
    if nb * m * p * k > MATMUL_MAX:
        return D.whole([d for d in ds if d is not None], ot.size, ncols)
    full = (nb, m, p, k)
    pa = np.broadcast_to(pa, batch + (m, k)).reshape(nb, m, k)
    pb = np.broadcast_to(pb, batch + (k, p)).reshape(nb, k, p)
    rows = np.broadcast_to(np.arange(nb * m * p).reshape(nb, m, p)[..., None], full)
    ca = np.broadcast_to(pa[:, :, None, :], full)
    cb = np.broadcast_to(np.swapaxes(pb, 1, 2)[:, None, :, :], full)
    parts = []
    if ds[0] is not None:
        keep = np.ones(full, dtype=bool) if kb is None else np.broadcast_to(
            np.swapaxes(np.broadcast_to(kb, batch + (k, p)).reshape(nb, k, p), 1, 2)[:, None, :, :] != 0, full)
        parts.append(D.apply(D.structure(rows[keep], ca[keep], (ot.size, a.type.size)), ds[0]))
    if ds[1] is not None:
        keep = np.ones(full, dtype=bool) if ka is None else np.broadcast_to(
            np.broadcast_to(ka, batch + (m, k)).reshape(nb, m, k)[:, :, None, :] != 0, full)
        parts.append(D.apply(D.structure(rows[keep], cb[keep], (ot.size, b.type.size)), ds[1]))
    out = D.union(parts)
    return out if out is not None else D.empty(ot.size, ncols)


def _const(a, known):
    """A known float operand's values (to drop terms multiplied by a constant zero)."""
    if known is None:
        return None
    v = np.asarray(known)
    return v if v.shape == tuple(a.type.shape) else None
