"""In-place updates of staged arrays, and the aliasing they must respect.

Contract (Note [argument-mutation] in docs/design.md): during staging one Python
array is represented by one Python object, a `Traced` or a concrete
`np.ndarray`; every name and container slot bound to that array holds that same
object (operations that copy in NumPy, such as `a.copy()`, return a new object).
An in-place update (`a[k] = v`, `a[k] += v`) computes the new array functionally
and calls `replace(st, old, new)`, which rebinds every reference to `old` that
staging can reach: the variables of the current frame, of the frames it is
nested in, and of the callers of inlined closures, looking into lists, dicts and
tuples. Where a reference cannot be rebound exactly (a module global, a closure
cell of a Python function, an attribute of an object, a variable of an
enclosing frame while staging a traced `if` or loop) `replace` raises a
`StagingError` located at the update, with a hint, instead of letting the old
value be read later.

Calls to IR functions carry in-place updates of their arguments back to the
caller as hidden results (`calls`); the callee tracks its argument arrays in
hidden frame variables named by `hidden_name`.
"""
from __future__ import annotations

import types

import numpy as np

from ..errors import PullbackError, StagingError
from ..pytree import flatten
from .values import NeedUnroll, Poisoned, Traced

HIDDEN_PREFIX = "__pb_arg"

_HINT = "return the array and assign it in the caller (a = put(a, x)), or update a local copy"


def hidden_name(j: int) -> str:
    """The frame variable that follows argument array `j` of the function being staged."""
    return f"{HIDDEN_PREFIX}{j}"


def is_mutable_leaf(x) -> bool:
    """Leaves that are array objects an in-place update can change."""
    return isinstance(x, (Traced, np.ndarray))


def alias_pattern(leaves) -> tuple:
    """For each leaf, the index of the first leaf that is the same array object."""
    first: dict = {}
    return tuple(first.setdefault(id(x), i) if is_mutable_leaf(x) else i for i, x in enumerate(leaves))


class _Blocked(Exception):
    def __init__(self, where):
        self.where = where


def _frames(st):
    """(frame, writable) for every frame staging can reach from the current statement."""
    regions = st.regions
    if regions:
        rframe, ncallers = regions[-1]
        inside = {id(rframe), id(st.frame)} | {id(f) for f in st.callers[ncallers:]}
    else:
        inside = None
    out, seen = [], set()
    for start in [st.frame] + list(reversed(st.callers)):
        f = start
        while f is not None:
            if id(f) not in seen:
                seen.add(id(f))
                out.append((f, inside is None or id(f) in inside))
            f = f.parent
    return out


def replace(st, old, new):
    """Rebind every reachable reference to the array object `old` to `new` (see module doc), and
    carry the update through views (`views.write_through`, Note [view-mutation])."""
    if old is new or not is_mutable_leaf(old):
        return
    from .views import write_through
    pairs = write_through(st, old, new)
    for o, _ in pairs:
        check_ambiguous(st, o)
    frames = _frames(st)
    # first check, then write: a failed update changes nothing
    for o, _ in pairs:
        _check(frames, o)
    for o, n in pairs:
        st.updated.append(o)
        st.replaced[id(o)] = (o, n)
        for f, writable in frames:
            if writable:
                for k, v in list(f.vars.items()):
                    nv, changed = _subst(v, o, n, set())
                    if changed:
                        f.vars[k] = nv


def _check(frames, old):
    for f, writable in frames:
        if not writable and _holds(f.vars, old):
            raise StagingError(
                "an in-place update, inside an `if` or loop whose condition or trip count is traced, of an array "
                "that belongs to an enclosing function", hint=_HINT)
        if f.closure and _holds(f.closure, old):
            raise StagingError("an in-place update of an array that the function reads from an enclosing "
                               "Python function (a closure cell); pullback cannot change it there", hint=_HINT)
    if isinstance(old, np.ndarray):
        for f, _ in frames:
            if f.parent is None and any(v is old for v in f.globals.values()):
                raise StagingError("an in-place update of a module-level (global) array; pullback does not "
                                   "change global state", hint="copy it first (a = W.copy()) and update the copy")


def _holds(d, old):
    try:
        for v in d.values():
            _subst(v, old, None, set(), dry=True)
    except _Blocked:
        return True
    return False


_OPAQUE = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType, type,
           np.ndarray, np.generic, Traced, Poisoned, str, bytes, int, float, complex, bool, type(None))


def _subst(v, old, new, seen, dry=False, depth=0):
    """(v with `old` replaced by `new`, whether anything changed). Lists and dicts are updated in
    place, tuples rebuilt. `dry`: raise `_Blocked` on the first occurrence instead."""
    if v is old:
        if dry:
            raise _Blocked(None)
        return new, True
    if isinstance(v, _OPAQUE) or depth > 64:
        return v, False
    if id(v) in seen:
        return v, False
    seen.add(id(v))
    if isinstance(v, list):
        changed = False
        for i, x in enumerate(v):
            y, c = _subst(x, old, new, seen, dry, depth + 1)
            if c:
                v[i] = y
                changed = True
        return v, changed
    if isinstance(v, dict):
        changed = False
        for k, x in list(v.items()):
            y, c = _subst(x, old, new, seen, dry, depth + 1)
            if c:
                v[k] = y
                changed = True
        return v, changed
    if isinstance(v, tuple):
        items, changed = [], False
        for x in v:
            y, c = _subst(x, old, new, seen, dry, depth + 1)
            items.append(y)
            changed = changed or c
        if not changed:
            return v, False
        return (type(v)._make(items) if hasattr(type(v), "_make") else tuple(items)), True
    # an object holding the array in an attribute: staging cannot rebind it
    d = getattr(v, "__dict__", None)
    if isinstance(d, dict) and not dry and _holds(d, old):
        raise StagingError(f"an in-place update of an array that is also an attribute of a "
                           f"{type(v).__name__} object; pullback cannot update the attribute",
                           hint=_HINT)
    return v, False




# -- aliasing across traced `if`s and IR loops (used by `control`) ------------------------

def positions(env) -> dict:
    """{(name, leaf index): array object} for the array leaves of the variables in `env`."""
    out = {}
    for name, v in env.items():
        if isinstance(v, Poisoned) or not isinstance(v, (Traced, np.ndarray, list, tuple, dict)):
            continue
        try:
            leaves, _ = flatten(v)
        except PullbackError:  # a cycle, or too deep: not arguments of IR code either
            continue
        for i, x in enumerate(leaves):
            if is_mutable_leaf(x):
                out[(name, i)] = x
    return out


def groups(pos) -> dict:
    """{position: frozenset of the positions that hold the same object}."""
    by: dict = {}
    for p, x in pos.items():
        by.setdefault(id(x), set()).add(p)
    frozen = {k: frozenset(v) for k, v in by.items()}
    return {p: frozen[id(x)] for p, x in pos.items()}


def _benign(p) -> bool:
    """The early-return rewrite's value variable (`return a` inside a loop): once it
    holds an array, the flag it sets guards every later statement, so its aliasing
    never decides what an update changes."""
    from .rewrite import RV

    return p[0] == RV


def mark_ambiguous(st, objs, line):
    """After a traced `if`/loop, these arrays may or may not be the same object as another
    variable's, depending on run-time data: an in-place update of one of them is an error."""
    for o in objs:
        if is_mutable_leaf(o):
            st.ambiguous[id(o)] = (o, line)


def check_ambiguous(st, old):
    hit = st.ambiguous.get(id(old))
    if hit is not None and hit[0] is old:
        raise StagingError(
            f"an in-place update of an array that, after the `if`/loop at line {hit[1]} (whose condition or "
            "trip count is traced), may or may not be the same array as another variable; pullback cannot tell "
            "which variables the update changes", hint="copy the array where it is assigned (b = a.copy()), "
            "or " + _HINT)


def after_if(st, e1, e2, new, line):
    """Arrays that are the same object after one branch but not after the other become ambiguous
    (an in-place update of one of them is then an error, see `mark_ambiguous`)."""
    g1 = groups({p: o for p, o in positions(e1).items() if not _benign(p)})
    g2 = groups({p: o for p, o in positions(e2).items() if not _benign(p)})
    pn = positions(new)
    bad = set()
    for p in pn:
        a, c = g1.get(p, frozenset((p,))), g2.get(p, frozenset((p,)))
        if a != c:
            bad |= a | c
    mark_ambiguous(st, [pn[p] for p in bad if p in pn], line)


def loop_body(env0, start_pos, after, init, slots, updated):
    """Check that the body's staging respects aliasing (Note [argument-mutation]). Returns the ids
    of initial arrays whose shared parameter must be split (the body separates their aliases
    without updating them in place); raises `NeedUnroll` where an in-place update would need the
    aliasing to differ between iterations."""
    gS = groups(positions(env0))
    gB = groups(start_pos)
    pE = {p: o for p, o in positions(after).items() if p[0] in env0}
    gE = groups(pE)
    for p, o in start_pos.items():
        if id(o) in updated and (gB[p] != gS.get(p) or gE.get(p) != gB[p]):
            raise NeedUnroll(f"'{p[0]}' is updated in place in the loop body while it is, in some iterations "
                             "only, the same array as another variable",
                             hint="copy the array where the loop assigns it to another variable (b = a.copy())")
    split = set()
    owner: dict = {}
    leaves = {}
    for (name, i), j in slots.items():
        if name not in leaves:
            leaves[name] = flatten(after[name])[0] if name in after else []
        o = leaves[name][i] if i < len(leaves[name]) else None
        prev = owner.setdefault(j, (o,))
        if prev[0] is not o:
            split.add(id(init[j]))
    return split


def after_loop(st, env0, after, new_env, line):
    """After an IR loop: arrays whose aliasing at the end of the body differs from that at entry
    become ambiguous (it depends on whether the loop ran)."""
    gS = groups({p: o for p, o in positions(env0).items() if not _benign(p)})
    gE = groups({p: o for p, o in positions(after).items() if p[0] in env0 and not _benign(p)})
    pn = positions(new_env)
    bad = set()
    for p in pn:
        a, c = gS.get(p, frozenset((p,))), gE.get(p, frozenset((p,)))
        if a != c:
            bad |= a | c
    mark_ambiguous(st, [pn[p] for p in bad if p in pn], line)


__all__ = ["HIDDEN_PREFIX", "after_if", "after_loop", "alias_pattern", "check_ambiguous", "groups",
           "hidden_name", "is_mutable_leaf", "loop_body", "mark_ambiguous", "positions", "replace"]
