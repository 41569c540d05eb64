"""Borrowed views for the numba dialect: static slices of a function's parameters
that never leave their body print without a reference of their own (note
[borrowed-views]).

Every array view numba makes takes a new reference to its base's meminfo, and
drops it when the view dies: an atomic increment and decrement through calls
of NRT_incref / NRT_decref, which LLVM's reference-count pruning removes only
in straight-line code. In a loop that slices the same parameter each
iteration (lstm's weight rows, sliced four ways per layer and step) those
calls were 39% of the gradient's time.

Contract:
- `rooted(func, own) -> set[Var]`: the values of `func` whose array is one of
  its parameters' arrays: the parameters, and the results of `index`
  statements (at any depth) that view a rooted value (not copied:
  `own.copied`). A parameter's array lives for the whole call: the caller
  holds it.
- `borrowable(body, rooted, own, push_copies) -> set[Var]`: the results of
  `index` statements of `body` (not nested bodies) that view a rooted value
  and whose array stays in `body`: every statement of the rest of the body
  that reads it, or a value sharing its array, is a primitive or a `Loop`
  whose body does the same (`numba_scratch`'s sharing rules: views, updates
  in place, loop-carried values to a fixed point), none is a call, a
  callback or a compound statement of another kind, no sharer is pushed to a
  store that keeps references, and none is among the body's results. Such a
  view dies in the body, while its parameter lives, so it needs no reference
  of its own: the numba dialect prints it as `numba_views._pb_view_cb` /
  `_pb_view_ab` where it prints the slice as a view at all.
- `local_stores(body, own, push_copies) -> set[Var]`: the results of
  `store_new` statements of `body` (not nested bodies) whose store stays in
  `body` by the same rules, where the values sharing the store's buffer are
  also the stores its pushes and pops give and the values popped from it (views
  of its slots). The numba dialect gives such a buffer store an owner array
  that lives until the function returns, and the store a borrowed view of it
  (note [borrowed-views], "Store buffers").
"""
from __future__ import annotations

from ..ir.core import Loop, Prim, Var
from ..ir.traverse import exp_scopes, free_vars
from .numba_scratch import spread

_OPAQUE = frozenset({"callback", "revolve_split"})   # may hand an array to code outside the IR


def _views(st, own, of) -> bool:
    """Whether statement `st` makes a view (not a copy) of a value in `of`."""
    from .pysource.ownership import _aliasing_args

    e = st.exp
    return (isinstance(e, Prim) and e.op == "index" and len(st.pat) == 1 and isinstance(e.args[0], Var)
            and e.args[0] in of and st.pat[0] not in own.copied and e.args[0] in _aliasing_args(e))


def rooted(func, own) -> set:
    out = set(func.params)

    def visit(body):
        for st in body.stmts:
            if _views(st, own, out):
                out.add(st.pat[0])
            for _, b in exp_scopes(st.exp):
                visit(b)

    visit(func.body)
    return out


def _contained(stmts, share: set) -> bool:
    """Whether every reader of `share` in `stmts` is a primitive (not opaque) or a Loop whose
    body is the same, recursively (`numba_scratch.spread` follows the sharing)."""
    for st in stmts:
        e = st.exp
        if isinstance(e, Prim):
            if e.op in _OPAQUE and share & set(e.args):
                return False
            continue
        if isinstance(e, Loop):
            if not _contained(e.body.stmts, share | set(e.params)):
                return False
            continue
        if share & free_vars(e):
            return False
    return True


def _stays(rest, v, result: set, own, push_copies, stores: bool = False) -> bool:
    """Whether the array of v (made before `rest`, the rest of its body, whose results are
    `result`) stays in the body: no sharer is a result or pushed to a store that keeps
    references, and every reader is contained (`_contained`)."""
    share = {v}
    return spread(rest, share, push_copies, own, stores) and not share & result and _contained(rest, share)


def borrowable(body, roots: set, own, push_copies) -> set:
    stmts = body.stmts
    result = {a for a in body.result if isinstance(a, Var)}
    return {st.pat[0] for k, st in enumerate(stmts)
            if _views(st, own, roots) and _stays(stmts[k + 1:], st.pat[0], result, own, push_copies)}


def local_stores(body, own, push_copies) -> set:
    """See the module docstring."""
    stmts = body.stmts
    result = {a for a in body.result if isinstance(a, Var)}
    return {st.pat[0] for k, st in enumerate(stmts)
            if isinstance(st.exp, Prim) and st.exp.op == "store_new" and len(st.pat) == 1
            and _stays(stmts[k + 1:], st.pat[0], result, own, push_copies, stores=True)}
