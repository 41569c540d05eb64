"""Iterables that a `for` statement can stage as an IR loop.

Contract: `TracedIterable(n, element, what)` is something a `for` iterates with an
IR loop: its trip count `n` (an int or a traced i64) and `element(i)`, the item
at index `i` (a Python int when unrolling, a traced i64 in an IR loop).
`traced_range`, `traced_enumerate`, `traced_zip` and `traced_reversed` build
them for `range`/`enumerate`/`zip`/`reversed` over traced values (re-exported by
`control`); `as_loop_iter` turns any iterable into a `TracedIterable` or a
Python list to unroll; `static_items` is the Python list of an iterable's items
(traced arrays unrolled up to the fallback cap, note [unroll-cap]), used by
comprehensions and by the builtins `builtin_map`, `builtin_reduce` (for
`functools.reduce`) and `builtin_sorted`, which `calls.call` stages.
"""
from __future__ import annotations

import numpy as np

from ..errors import StagingError, UnsupportedSyntaxError
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


def static_items(st, it, what: str) -> list:
    """The items of `it` as a Python list: a Python iterable's own; a traced array's
    rows or a traced range/enumerate/zip's items when its length is static and at most
    the fallback unroll cap (what the user wrote builds that many values)."""
    from .control import FALLBACK_UNROLL_LIMIT
    loop = as_loop_iter(st, it)
    if isinstance(loop, list):
        return loop
    if not loop.static:
        raise UnsupportedSyntaxError(f"{what} over a range with a traced length is not supported",
                                     hint="use a for loop (it becomes an IR loop)")
    if loop.n > FALLBACK_UNROLL_LIMIT:
        raise UnsupportedSyntaxError(
            f"{what} over {loop.n} traced items would be unrolled into {loop.n} copies "
            f"(pullback unrolls at most {FALLBACK_UNROLL_LIMIT})",
            hint="write it with array operations (np.sin(x) * x instead of [np.sin(v) * v for v in x]), "
                 "or as a for loop accumulating into an array or a scalar")
    return [loop.element(k) for k in range(loop.n)]


def builtin_map(st, call, fn, *seqs):
    """`map(fn, *seqs)` with traced items or a staged function: the list of calls."""
    if not seqs:
        raise StagingError("map() must have at least two arguments")
    cols = [static_items(st, q, "map()") for q in seqs]
    return [call(st, fn, list(items), {}) for items in zip(*cols)]


def builtin_reduce(st, call, fn, seq, *init):
    """`functools.reduce(fn, seq[, initial])`, unrolled over the items."""
    items = static_items(st, seq, "functools.reduce()")
    if init:
        acc = init[0]
    elif items:
        acc, items = items[0], items[1:]
    else:
        raise StagingError("reduce() of empty iterable with no initial value")
    for x in items:
        acc = call(st, fn, [acc, x], {})
    return acc


def builtin_sorted(st, seq, key=None, reverse=False):
    """`sorted(seq)` of traced scalars (or a 1-D traced array): np.sort of their array, as a
    list; the derivative follows the permutation, as np.sort's does."""
    from .numpy_api import lookup
    if key is not None:
        raise StagingError("sorted(..., key=...) with traced values is not supported",
                           hint="sort an array of the keys with np.argsort and index with it")
    if isinstance(reverse, Traced):
        raise StagingError("sorted(reverse=...) must be a Python bool")
    if isinstance(seq, Traced) and seq.ndim == 1:
        arr = seq
    else:
        items = static_items(st, seq, "sorted()")
        if not items:
            return []
        if any(isinstance(v, Traced) and v.ndim for v in items):
            raise StagingError("sorted() of arrays is not supported (NumPy arrays have no order)",
                               hint="sort numbers, or use np.sort on an array")
        arr = lookup(np.array)(st, items)
    s = lookup(np.sort)(st, arr)
    n = s.shape[0]
    order = range(n - 1, -1, -1) if reverse else range(n)
    return [ops.getitem(st, s, k) for k in order]


__all__ = ["TracedIterable", "as_loop_iter", "static_items", "builtin_map", "builtin_reduce", "builtin_sorted", "traced_enumerate", "traced_range", "traced_reversed", "traced_zip"]
