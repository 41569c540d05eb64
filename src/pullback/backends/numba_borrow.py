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
  that reads it, or a value sharing its array, is a primitive or a `Loop` or
  `If` whose bodies do the same (`numba_scratch`'s sharing rules, followed
  into the bodies: views, updates in place, loop-carried values to a fixed
  point), none is a call, a callback or a compound statement of another
  kind, no sharer is pushed to a
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
- `store_versions(body, v, own) -> set[Var] | None`: for such a store `v`,
  the store values at any depth of `body` that hold its buffer (its pushes'
  and pops' results, loop parameters carrying it), or None where a push into
  it saves a value sharing its buffer. The dialect then grows the buffer into
  the owner array itself: no value but the store can still view the old
  buffer when a push grows it (`numba_stores.pop_copies` copies a popped slot
  read after a later push).
"""
from __future__ import annotations

from ..ir.core import If, Loop, Prim, Var
from ..ir.traverse import exp_scopes, free_vars
from ..ir.types import StoreType
from .numba_scratch import spread
from .numba_stores import carried_params, sharing

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


def _walk(stmts, share: set, own, stores: bool, visit, seen: set | None = None) -> bool:
    """Call `visit(st, share)` on every statement of `stmts` that reads a value sharing
    memory with `share`, at any depth of `Loop` and `If` bodies, growing the sharing as
    `numba_scratch.spread`'s walk does: the values a body derives from a shared one (a
    view, a popped slot, a loop parameter that may carry one) are shared too. False as
    soon as a visit is; `seen` (when given) gets every value found sharing."""
    share = set(share)
    for st in stmts:
        e = st.exp
        reads = set(e.args) if isinstance(e, Prim) else free_vars(e)
        if not reads & share:
            continue
        if not visit(st, share):
            return False
        if isinstance(e, Loop):
            carried = carried_params(e, share, own, None, stores)
            if seen is not None:
                seen |= carried
            if not _walk(e.body.stmts, share | carried, own, stores, visit, seen):
                return False
        elif isinstance(e, If):
            if not all(_walk(b.stmts, share, own, stores, visit, seen) for b in (e.then, e.else_)):
                return False
        more = sharing(st, share, own, None, stores)
        share.update(more)
        if seen is not None:
            seen.update(more)
    return True


def _inside(st, share) -> bool:
    """A statement that cannot hand a shared array to code outside the function: a
    primitive (not opaque), or a `Loop` or `If` (whose bodies `_walk` visits)."""
    e = st.exp
    return e.op not in _OPAQUE if isinstance(e, Prim) else isinstance(e, (Loop, If))


def _contained(stmts, share: set, own, stores: bool = False) -> bool:
    """Whether every statement of `stmts` reading a value that shares memory with `share`
    is `_inside`, at any depth (so a call inside a loop that reads a view of a popped
    slot is found)."""
    return _walk(stmts, share, own, stores, _inside)


def _stays(rest, v, result: set, own, push_copies, stores: bool = False) -> bool:
    """Whether the array of v (made before `rest`, the rest of its body, whose results are
    `result`) stays in the body: no sharer is a result or pushed to a store that keeps
    references, and every reader is contained (`_contained`)."""
    share = {v}
    return spread(rest, share, push_copies, own, stores) and not share & result and _contained(rest, share, own, stores)


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


def store_versions(body, v, own) -> set | None:
    """The values of `body`, at any depth, that are the local store `v` (made by a
    `store_new` of `body`; `local_stores`) after its pushes and pops, `v` included; None
    where a push into it saves a value sharing its buffer (a popped slot pushed back),
    whose copy reads the buffer that the push may have just replaced (note
    [borrowed-views], "Store buffers")."""
    stmts = body.stmts
    k = next(i for i, st in enumerate(stmts) if st.pat and st.pat[0] is v)
    seen = {v}

    def visit(st, share):
        e = st.exp
        return not (isinstance(e, Prim) and e.op == "store_push" and e.args[0] in share and e.args[1] in share)

    if not _walk(stmts[k + 1:], {v}, own, True, visit, seen):
        return None
    return {x for x in seen if isinstance(x.type, StoreType)}
