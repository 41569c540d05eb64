"""Contractions and products composed from `matmul`, reshapes and transposes
(issue 10): `tensordot`, `einsum` (any number of operands, batch indices, traces), `inner`, `kron`,
`cross`.

Contract: importing this module registers the handlers in `numpy_api.FUNCS`.
Also `polyval` (Horner), `convolve` (a Toeplitz gather and one `matmul`) and
`interp` (a segment search by comparisons, then the segment's line).
Every contraction is lowered to one `matmul` of 2-D reshapes of its operands
(3-D stacks for einsum's batch indices; BLAS on the compiled backend), so its cost and its derivative's cost are
those of the matrix product, not of a broadcast intermediate. Subscripts,
axes and shapes must be static.
"""
from __future__ import annotations

import numpy as np

from ..errors import ShapeError, StagingError
from . import ops
from .numpy_api import _reg
from .values import Traced


def _t(st, x) -> Traced:
    return x if isinstance(x, Traced) else ops.as_traced(st, x)


def _prod(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


@_reg(np.tensordot)
def _tensordot(st, a, b, axes=2):
    a, b = _t(st, a), _t(st, b)
    if isinstance(axes, (int, np.integer)):
        k = int(axes)
        ax_a, ax_b = list(range(a.ndim - k, a.ndim)), list(range(k))
    else:
        ax_a, ax_b = (list(np.atleast_1d(x).tolist()) for x in axes)
    ax_a = [ops.norm_axis(x, a.ndim) for x in ax_a]
    ax_b = [ops.norm_axis(x, b.ndim) for x in ax_b]
    if [a.shape[i] for i in ax_a] != [b.shape[i] for i in ax_b]:
        raise ShapeError(f"np.tensordot: contracted dimensions differ: {[a.shape[i] for i in ax_a]} vs "
                         f"{[b.shape[i] for i in ax_b]}")
    free_a = [i for i in range(a.ndim) if i not in ax_a]
    free_b = [i for i in range(b.ndim) if i not in ax_b]
    k = _prod([a.shape[i] for i in ax_a])
    at = ops.reshape(st, ops.transpose(st, a, tuple(free_a + ax_a)), (_prod([a.shape[i] for i in free_a]), k))
    bt = ops.reshape(st, ops.transpose(st, b, tuple(ax_b + free_b)), (k, _prod([b.shape[i] for i in free_b])))
    r = ops.matmul(st, at, bt)
    return ops.reshape(st, r, tuple(a.shape[i] for i in free_a) + tuple(b.shape[i] for i in free_b))


@_reg(np.inner)
def _inner(st, a, b):
    a, b = _t(st, a), _t(st, b)
    if a.ndim == 0 or b.ndim == 0:
        return ops.binary(st, "mul", a, b)
    return _tensordot(st, a, b, ([a.ndim - 1], [b.ndim - 1]))


@_reg(np.kron)
def _kron(st, a, b):
    a, b = _t(st, a), _t(st, b)
    nd = max(a.ndim, b.ndim)
    a = ops.reshape(st, a, (1,) * (nd - a.ndim) + a.shape)
    b = ops.reshape(st, b, (1,) * (nd - b.ndim) + b.shape)
    # a[i0, None, i1, None, ...] * b[None, j0, None, j1, ...] -> (i0 j0, i1 j1, ...)
    sa = sum(((d, 1) for d in a.shape), ())
    sb = sum(((1, d) for d in b.shape), ())
    prod = ops.binary(st, "mul", ops.reshape(st, a, sa), ops.reshape(st, b, sb))
    return ops.reshape(st, prod, tuple(x * y for x, y in zip(a.shape, b.shape)))


@_reg(np.cross)
def _cross(st, a, b, axis=-1):
    a, b = _t(st, a), _t(st, b)
    if a.shape[-1] != 3 or b.shape[-1] != 3 or axis not in (-1, max(a.ndim, b.ndim) - 1):
        raise StagingError("np.cross is supported for 3-vectors along the last axis",
                           hint="move the 3-component axis last")

    def c(x, i):
        return ops.getitem(st, x, (Ellipsis, i))

    def m(x, i, y, j):
        return ops.binary(st, "mul", c(x, i), c(y, j))

    parts = [ops.binary(st, "sub", m(a, 1, b, 2), m(a, 2, b, 1)),
             ops.binary(st, "sub", m(a, 2, b, 0), m(a, 0, b, 2)),
             ops.binary(st, "sub", m(a, 0, b, 1), m(a, 1, b, 0))]
    return ops.stack(st, parts, -1)


@_reg(np.einsum)
def _einsum(st, subscripts, *operands, optimize=False):
    """Any number of operands, batch indices (shared by operands and output) and
    repeated indices within an operand (diagonals, traces). Repeated indices are
    taken first (a product with an identity mask, then a sum), indices in one
    operand only and not in the output are summed out, then the operands are
    contracted pairwise, greedily the pair whose contraction costs the fewest
    multiplications first. Each pairwise contraction is one `matmul` (stacked for
    batch indices). `optimize` is accepted and ignored."""
    if not isinstance(subscripts, str):
        raise StagingError("np.einsum needs a subscripts string", hint="write np.einsum('ij,jk->ik', a, b)")
    spec = subscripts.replace(" ", "")
    if "..." in spec:
        raise StagingError("np.einsum with '...' is not supported", hint="spell out the indices")
    ins, out = (spec.split("->") + [None])[:2]
    terms = ins.split(",")
    if len(terms) != len(operands):
        raise StagingError(f"np.einsum: {len(terms)} operand subscripts for {len(operands)} operands")
    xs = [_t(st, x) for x in operands]
    size = {}
    for t, x in zip(terms, xs):
        if len(t) != x.ndim:
            raise ShapeError(f"np.einsum: '{t}' has {len(t)} indices for an array of {x.ndim} dimensions")
        for ch, d in zip(t, x.shape):
            if size.setdefault(ch, d) != d:
                raise ShapeError(f"np.einsum: index '{ch}' has sizes {size[ch]} and {d}")
    if out is None:
        counts = {}
        for t in terms:
            for ch in t:
                counts[ch] = counts.get(ch, 0) + 1
        out = "".join(sorted(ch for ch, n in counts.items() if n == 1))
    if len(set(out)) != len(out) or any(ch not in size for ch in out):
        raise ShapeError(f"np.einsum: bad output subscripts '{out}'")
    items = [_einsum_diag(st, t, x, size) for t, x in zip(terms, xs)]
    while len(items) > 1:
        best = None
        for i in range(len(items)):
            for j in range(i + 1, len(items)):
                union = set(items[i][0]) | set(items[j][0])
                cost = _prod([size[ch] for ch in union])
                if best is None or cost < best[0]:
                    best = (cost, i, j)
        _, i, j = best
        rest = "".join(items[k][0] for k in range(len(items)) if k not in (i, j))
        keep = set(out) | set(rest)
        r = _einsum_pair(st, items[i], items[j], keep, size)
        items = [it for k, it in enumerate(items) if k not in (i, j)] + [r]
    t, x = items[0]
    summed = tuple(i for i, ch in enumerate(t) if ch not in out)
    if summed:
        x = ops.reduce(st, "sum", x, summed)
        t = "".join(ch for ch in t if ch in out)
    return ops.transpose(st, x, tuple(t.index(ch) for ch in out)) if t != out else x


def _einsum_diag(st, t, x, size):
    """Operand `x` with indices `t` after taking the diagonal of each repeated index."""
    while len(set(t)) != len(t):
        ch = next(c for c in t if t.count(c) > 1)
        p = t.index(ch)
        q = t.index(ch, p + 1)
        n = size[ch]
        shape = [1] * len(t)
        shape[p] = shape[q] = n
        mask = np.eye(n).reshape(shape)
        mask = mask.astype({"f32": np.float32, "i64": np.int64}.get(x.type.dtype, np.float64))
        x = ops.reduce(st, "sum", ops.binary(st, "mul", x, ops.as_traced(st, mask)), (q,))
        t = t[:q] + t[q + 1:]
    return t, x


def _einsum_pair(st, A, B, keep, size):
    """Contract two (indices, operand) pairs, keeping the indices in `keep`."""
    (ta, a), (tb, b) = A, B
    for which in (0, 1):
        t, x, other = (ta, a, tb) if which == 0 else (tb, b, ta)
        lone = tuple(i for i, ch in enumerate(t) if ch not in other and ch not in keep)
        if lone:
            x = ops.reduce(st, "sum", x, lone)
            t = "".join(ch for ch in t if ch in other or ch in keep)
            if which == 0:
                ta, a = t, x
            else:
                tb, b = t, x
    batch = [ch for ch in ta if ch in tb and ch in keep]
    con = [ch for ch in ta if ch in tb and ch not in keep]
    fa = [ch for ch in ta if ch not in tb]
    fb = [ch for ch in tb if ch not in ta]
    if not batch:
        r = _tensordot(st, a, b, ([ta.index(ch) for ch in con], [tb.index(ch) for ch in con]))
        return "".join(fa + fb), r
    n = [_prod([size[ch] for ch in g]) for g in (batch, fa, con, fb)]
    at = ops.reshape(st, ops.transpose(st, a, tuple(ta.index(ch) for ch in batch + fa + con)), (n[0], n[1], n[2]))
    bt = ops.reshape(st, ops.transpose(st, b, tuple(tb.index(ch) for ch in batch + con + fb)), (n[0], n[2], n[3]))
    r = ops.matmul(st, at, bt)
    return "".join(batch + fa + fb), ops.reshape(st, r, tuple(size[ch] for ch in batch + fa + fb))


# -- polynomials, convolution, interpolation (found by tests/user_suite) -------------------

def _as_1d(st, v, what):
    if isinstance(v, (list, tuple)):
        from .numpy_api import lookup
        v = lookup(np.array)(st, list(v))
    v = _t(st, v)
    if v.ndim != 1:
        raise ShapeError(f"{what} must be 1-D, got an array of shape {v.shape}")
    return v


@_reg(np.polyval)
def _polyval(st, p, x):
    """Horner's rule over the (static number of) coefficients, highest power first."""
    p = _as_1d(st, p, "np.polyval's coefficients")
    r = ops.getitem(st, p, 0)
    if not isinstance(x, Traced):
        x = ops.as_traced(st, x)
    r = ops.binary(st, "add", ops.binary(st, "mul", x, 0), r)  # the shape of x
    for k in range(1, p.shape[0]):
        r = ops.binary(st, "add", ops.binary(st, "mul", r, x), ops.getitem(st, p, k))
    return r


@_reg(np.convolve)
def _convolve(st, a, v, mode="full"):
    """`full[k] = sum_j a[k - j] v[j]`: one gather of the zero-padded longer operand into a
    static (len(full), len(shorter)) Toeplitz index pattern, then one `matmul` with the shorter
    operand; 'same' and 'valid' are NumPy's slices of it."""
    a, v = _as_1d(st, a, "np.convolve's first argument"), _as_1d(st, v, "np.convolve's second argument")
    if a.shape[0] == 0 or v.shape[0] == 0:
        raise ShapeError("np.convolve: empty operand")
    if v.shape[0] > a.shape[0]:
        a, v = v, a
    n, m = a.shape[0], v.shape[0]
    if mode not in ("full", "same", "valid"):
        raise StagingError(f"np.convolve: mode must be 'full', 'same' or 'valid', got {mode!r}")
    if m > 1:
        z = ops.binary(st, "mul", ops.getitem(st, a, slice(0, m - 1)), 0)
        padded = ops.concatenate(st, [z, a, z], 0)
    else:
        padded = a
    idx = np.arange(n + m - 1)[:, None] - np.arange(m)[None, :] + (m - 1)
    full = ops.matmul(st, ops.getitem(st, padded, idx), v)
    if mode == "full":
        return full
    start, length = ((m - 1) // 2, n) if mode == "same" else (m - 1, n - m + 1)
    return ops.getitem(st, full, slice(start, start + length))


@_reg(np.interp)
def _interp(st, x, xp, fp, left=None, right=None, period=None):
    """Linear interpolation: the segment of each x is the number of interior knots at or below
    it (a comparison per knot, piecewise constant), then the segment's line; outside the knots
    the end values (NumPy's default `left`/`right`), with a zero derivative in x there."""
    if left is not None or right is not None or period is not None:
        raise StagingError("np.interp's left=, right= and period= are not supported with traced values")
    xp, fp = _as_1d(st, xp, "np.interp's xp"), _as_1d(st, fp, "np.interp's fp")
    if xp.shape != fp.shape or xp.shape[0] < 2:
        raise ShapeError(f"np.interp: xp and fp must have the same length >= 2, got {xp.shape} and {fp.shape}")
    x = _t(st, x)
    k = xp.shape[0]
    xe = ops.reshape(st, x, x.shape + (1,))
    inner = ops.reshape(st, ops.getitem(st, xp, slice(1, k - 1)), (1,) * x.ndim + (k - 2,))
    seg = ops.reduce(st, "sum", ops.cast(st, ops.binary(st, "ge", xe, inner), "i64"), (x.ndim,))
    x0, x1 = ops.getitem(st, xp, seg), ops.getitem(st, xp, ops.binary(st, "add", seg, 1))
    f0, f1 = ops.getitem(st, fp, seg), ops.getitem(st, fp, ops.binary(st, "add", seg, 1))
    t = ops.binary(st, "div", ops.binary(st, "sub", x, x0), ops.binary(st, "sub", x1, x0))
    line = ops.binary(st, "add", f0, ops.binary(st, "mul", t, ops.binary(st, "sub", f1, f0)))
    # outside the knots: the end values (a `where`, so at a knot the derivative is a segment's slope,
    # the right one's, never half of it as a clip's tie would give)
    lo, hi = ops.getitem(st, xp, 0), ops.getitem(st, xp, k - 1)
    r = ops.where(st, ops.binary(st, "gt", x, hi), ops.getitem(st, fp, k - 1), line)
    return ops.where(st, ops.binary(st, "lt", x, lo), ops.getitem(st, fp, 0), r)
