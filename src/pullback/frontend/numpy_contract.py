"""Contractions and products composed from `matmul`, reshapes and transposes
(issue 10): `tensordot`, `einsum` (one or two operands), `inner`, `kron`,
`cross`.

Contract: importing this module registers the handlers in `numpy_api.FUNCS`.
Every contraction is lowered to one `matmul` of 2-D reshapes of its operands
(BLAS on the compiled backend), so its cost and its derivative's cost are
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
    """One operand: transpose and sum. Two: a `tensordot` over the indices that
    appear in both and not in the output, then a transpose. Indices shared by both
    operands and the output (batch indices) and repeated indices within an operand
    (traces) are refused with a hint."""
    if not isinstance(subscripts, str):
        raise StagingError("np.einsum needs a subscripts string", hint="write np.einsum('ij,jk->ik', a, b)")
    spec = subscripts.replace(" ", "")
    if "..." in spec:
        raise StagingError("np.einsum with '...' is not supported", hint="spell out the indices")
    ins, out = (spec.split("->") + [None])[:2]
    terms = ins.split(",")
    if len(terms) != len(operands) or len(terms) > 2:
        raise StagingError("np.einsum is supported for one or two operands",
                           hint="nest calls: np.einsum('ij,jk->ik', np.einsum(...), c)")
    xs = [_t(st, x) for x in operands]
    for t, x in zip(terms, xs):
        if len(t) != x.ndim:
            raise ShapeError(f"np.einsum: '{t}' has {len(t)} indices for an array of {x.ndim} dimensions")
        if len(set(t)) != len(t):
            raise StagingError(f"np.einsum: repeated index in '{t}' (a trace) is not supported",
                               hint="use np.trace or np.diagonal")
    if out is None:
        counts = {}
        for t in terms:
            for ch in t:
                counts[ch] = counts.get(ch, 0) + 1
        out = "".join(sorted(ch for ch, n in counts.items() if n == 1))
    if len(xs) == 1:
        (t,), (x,) = terms, xs
        summed = tuple(i for i, ch in enumerate(t) if ch not in out)
        r = ops.reduce(st, "sum", x, summed) if summed else x
        kept = [ch for ch in t if ch in out]
        return ops.transpose(st, r, tuple(kept.index(ch) for ch in out)) if kept != list(out) else r
    (ta, tb), (a, b) = terms, xs
    batch = [ch for ch in ta if ch in tb and ch in out]
    if batch:
        raise StagingError(f"np.einsum: index '{batch[0]}' is in both operands and the output (a batch index)",
                           hint="use np.matmul on stacked arrays, or a loop")
    # sum out indices that occur in only one operand and not in the output first
    for which, t in ((0, ta), (1, tb)):
        other = tb if which == 0 else ta
        lone = [i for i, ch in enumerate(t) if ch not in out and ch not in other]
        if lone:
            x = ops.reduce(st, "sum", xs[which], tuple(lone))
            t = "".join(ch for ch in t if ch in out or ch in other)
            if which == 0:
                a, ta = x, t
            else:
                b, tb = x, t
    con = [ch for ch in ta if ch in tb]
    r = _tensordot(st, a, b, ([ta.index(ch) for ch in con], [tb.index(ch) for ch in con]))
    order = [ch for ch in ta if ch not in con] + [ch for ch in tb if ch not in con]
    if sorted(order) != sorted(out):
        raise ShapeError(f"np.einsum: output '{out}' does not match the free indices '{''.join(order)}'")
    return ops.transpose(st, r, tuple(order.index(ch) for ch in out)) if order != list(out) else r
