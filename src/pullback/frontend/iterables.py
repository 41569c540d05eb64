"""Iterables that a `for` statement can stage as an IR loop.

Contract: `TracedIterable(n, element, what)` is something a `for` iterates with an
IR loop: its trip count `n` (an int or a traced i64) and `element(i)`, the item
at index `i` (a Python int when unrolling, a traced i64 in an IR loop).
`traced_range`, `traced_enumerate`, `traced_zip` and `traced_reversed` build
them for `range`/`enumerate`/`zip`/`reversed` over traced values (re-exported by
`control`); `as_loop_iter` turns any iterable into a `TracedIterable` or a
Python list to unroll.
"""
from __future__ import annotations

from ..errors import StagingError
from . import ops
from .views import latest, note_row
from .values import ConcreteNeeded, Poisoned, Traced, is_weak


class TracedIterable:
    """Something a `for` can iterate with an IR loop: `n` (int or Traced i64) and `element(idx)`."""

    def __init__(self, n, element, what):
        self.n, self.element, self.what = n, element, what

    @property
    def static(self):
        return not isinstance(self.n, Traced)


def traced_range(st, args):
    if not 1 <= len(args) <= 3:
        raise StagingError("range expects 1 to 3 arguments")
    start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) == 3 else 1)
    for v in (start, stop, step):
        if isinstance(v, Traced) and (v.ndim or v.type.dtype not in ("i64", "bool")):
            raise StagingError(f"range() arguments must be integer scalars, got a traced {v.type}",
                               hint="convert with int(...)")
    if isinstance(step, Traced):
        raise ConcreteNeeded("the step of a range must be known at staging time",
                             hint="pass it as a static argument")
    step = ops.static_int(step, "the step of a range")
    if step == 0:
        raise StagingError("range() step must not be zero")
    if not isinstance(start, Traced) and not isinstance(stop, Traced):
        return range(start, stop, step)
    start_t = start if isinstance(start, Traced) else start
    # trip count: max(0, ceil((stop - start) / step))
    if step > 0:
        span = ops.binary(st, "sub", stop, start_t)
        num = ops.binary(st, "add", span, step - 1) if step != 1 else span
    else:
        span = ops.binary(st, "sub", start_t, stop)
        num = ops.binary(st, "add", span, -step - 1) if step != -1 else span
    n = ops.binary(st, "floordiv", num, abs(step)) if abs(step) != 1 else num
    n = ops.binary(st, "maximum", n, 0)

    def element(i):
        r = i
        if step != 1:
            r = ops.binary(st, "mul", r, step) if isinstance(r, Traced) else r * step
        if not (is_weak(start) and start == 0):
            r = ops.binary(st, "add", start, r) if isinstance(r, Traced) or isinstance(start, Traced) else start + r
        return r

    return TracedIterable(n, element, "range")


def as_loop_iter(st, it):
    """A TracedIterable for IR loops, or a Python list of items to unroll."""
    if isinstance(it, TracedIterable):
        return it
    if isinstance(it, range):
        r = it

        def element(i):
            if not isinstance(i, Traced):
                return r[i]
            v = i
            if r.step != 1:
                v = ops.binary(st, "mul", v, r.step)
            if r.start != 0:
                v = ops.binary(st, "add", v, r.start)
            return v

        return TracedIterable(len(r), element, "range")
    if isinstance(it, Traced):
        if it.ndim == 0:
            raise StagingError("iteration over a 0-d (scalar) traced value")
        x = it
        def row(i):
            # a view of the array as it is now (NumPy iterates over its memory)
            cur = x if isinstance(i, Traced) else latest(st, x)
            return note_row(st, cur, i, ops.getitem(st, cur, i))

        ti = TracedIterable(x.shape[0], row, "array")
        ti.array = x
        return ti
    if isinstance(it, Poisoned):
        raise it.error()
    return list(it)


def traced_enumerate(st, seq, start=0):
    inner = as_loop_iter(st, seq)
    if isinstance(inner, list):
        return list(enumerate(inner, start))
    el = inner.element

    def element(i):
        k = i if (is_weak(start) and start == 0) else (ops.binary(st, "add", i, start) if isinstance(i, Traced) else i + start)
        return (k, el(i))

    return TracedIterable(inner.n, element, "enumerate")


def traced_zip(st, *seqs):
    its = [as_loop_iter(st, s) for s in seqs]
    if all(isinstance(i, list) for i in its):
        return list(zip(*its))
    ns = []
    for i in its:
        if isinstance(i, list):
            ns.append(len(i))
        elif i.static:
            ns.append(i.n)
        else:
            raise StagingError("zip() over a range with a traced length is not supported",
                               hint="index the arrays inside a `for i in range(n)` loop")
    n = min(ns)

    def element(k):
        out = []
        for i in its:
            if isinstance(i, list):
                if isinstance(k, Traced):
                    raise ConcreteNeeded("zip() mixes a Python list with traced arrays")
                out.append(i[k])
            else:
                out.append(i.element(k))
        return tuple(out)

    return TracedIterable(n, element, "zip")


def traced_reversed(st, seq):
    it = as_loop_iter(st, seq)
    if isinstance(it, list):
        return list(reversed(it))
    if not it.static:
        raise StagingError("reversed() over a range with a traced length is not supported")
    n, el = it.n, it.element
    return TracedIterable(n, lambda i: el(n - 1 - i if not isinstance(i, Traced) else ops.binary(st, "sub", n - 1, i)),
                          "reversed")


__all__ = ["TracedIterable", "as_loop_iter", "traced_enumerate", "traced_range", "traced_reversed", "traced_zip"]
