"""Views: arrays that share memory with another array, and in-place updates through them.

Contract (Note [view-mutation]): NumPy's basic indexing (`A[i]`, `A[1:3]`,
`A[:, j]`, traced integer indices, steps, `None`), transposes (`.T`,
`transpose`, `swapaxes`, `moveaxis`) and reshapes (`reshape`/`ravel` of a
contiguous array, `squeeze`, `expand_dims`) return *views*: an in-place update
of the view changes its base, and one of the base changes the view. Staging
keeps a `View` record per view object (`register`, kept in `st.views` and
`st.view_kids`); `write_through(st, old, new)`, called by `alias.replace`,
returns every (array object, its new value) pair an in-place update of `old`
implies: the bases up to the root (an `index_update`, inverse transpose or
reshape of the new value) and the views below the root that staging can still
reach, re-derived from the new base. Each new value is registered as a view of
its new base, so views keep working after updates. Read-only views
(`np.broadcast_to`, `np.diag` of a matrix) and views that NumPy may or may not
make (`reshape` of a non-contiguous array, the rows of an IR loop over an
array) raise a located `StagingError` when an update would have to reach them.
Operations that copy in NumPy (integer-array indexing, `.copy()`, `flatten`,
arithmetic) make no record. `after_if`, `enter_loop`, `loop_end` and
`after_loop` carry the records across traced `if`s and IR loops (or mark the
arrays ambiguous, `alias.mark_ambiguous`, when the relation depends on run-time
data).
"""
from __future__ import annotations

import numpy as np

from ..errors import StagingError
from ..ir.core import Const, Prim
from . import ops
from .values import NeedUnroll, Traced

_RESHAPES = {"reshape", "ravel", "squeeze", "expand_dims"}
_ALWAYS_VIEW = {"squeeze", "expand_dims"}  # views whatever the strides of the base
_TRANSPOSES = {"transpose", "T", "swapaxes", "moveaxis"}
_READONLY = {"broadcast_to", "diag", "diagonal"}

_COPY_HINT = "copy it first with .copy(), or update the base array"


class View:
    """`view` shares memory with `base`. kind: 'index' (data: the key), 'transpose' (the
    permutation), 'reshape' (the view's shape), 'readonly' ((what, forward function)),
    'unknown' ((what, why)), 'row' (a row of the array a `for` iterates over in an IR loop). `contig`: the view is C-contiguous in NumPy."""

    __slots__ = ("view", "base", "kind", "data", "contig")

    def __init__(self, view, base, kind, data, contig):
        self.view, self.base, self.kind, self.data, self.contig = view, base, kind, data, contig


def _is_array(v):
    return isinstance(v, (Traced, np.ndarray))


def record(st, obj):
    rec = st.views.get(id(obj))
    return rec if rec is not None and rec.view is obj else None


def is_contig(st, obj) -> bool:
    rec = record(st, obj)
    return True if rec is None else rec.contig


def register(st, view, base, kind, data, contig):
    if view is base or not (_is_array(view) and _is_array(base)):
        return
    rec = View(view, base, kind, data, contig)
    st.views[id(view)] = rec
    kids = st.view_kids.setdefault(id(base), [])
    kids[:] = [k for k in kids if k.view is not view]
    kids.append(rec)


def _unknown(st, view, base, what, why):
    register(st, view, base, "unknown", (what, why), False)


# -- making views -------------------------------------------------------------------------

def _entries(key):
    return key if isinstance(key, tuple) else (key,)


def _basic(key) -> bool:
    for k in _entries(key):
        if isinstance(k, Traced):
            if k.ndim:
                return False
        elif isinstance(k, (np.ndarray, list, bool, np.bool_)):
            return False
        elif not (k is None or k is Ellipsis or isinstance(k, (slice, int, np.integer))):
            return False
    return True


def _index_contig(key, ndim) -> bool:
    """Whether base[key] is C-contiguous for a C-contiguous base (conservative)."""
    try:
        ents = [k for k in ops._expand_key(key, ndim) if k is not None]
    except Exception:
        return False
    ents += [slice(None)] * (ndim - len(ents))
    state = 0  # 0: leading integers, 1: after the first slice
    for k in ents:
        if isinstance(k, slice):
            full = k == slice(None)
            if state == 1 and not full:
                return False
            if state == 0 and k.step not in (None, 1):
                return False
            state = 1
        elif state == 1:
            return False
    return True


def note_index(st, base, key, result):
    """`result` = base[key] (staged or NumPy): record it as a view when NumPy makes one."""
    if result is base or not _is_array(base) or not _is_array(result) or not _basic(key):
        return result
    if isinstance(result, np.ndarray) and not (isinstance(base, np.ndarray) and np.may_share_memory(result, base)):
        return result
    if not isinstance(result, np.ndarray):
        ents = [k for k in _entries(key) if k is not None]
        if Ellipsis not in ents and len(ents) == np.ndim(base) and not any(isinstance(k, slice) for k in ents):
            return result  # a[i, j] of every axis is a scalar, not a view
    register(st, result, base, "index", key, is_contig(st, base) and _index_contig(key, np.ndim(base)))
    return result


def latest(st, x):
    """The array object `x` became through in-place updates (`alias.replace`)."""
    for _ in range(100000):
        hit = st.replaced.get(id(x))
        if hit is None or hit[0] is not x:
            return x
        x = hit[1]
    return x


def note_row(st, base, i, result):
    """`result` is row `i` of `base` in a `for` over the array."""
    if isinstance(i, Traced):
        register(st, result, base, "row", None, False)
        return result
    return note_index(st, base, i, result)


def note_call(st, name, base, result, redo=None):
    """`result` = a NumPy function or method `name` applied to `base` (the remaining arguments
    are in `redo(b)`, which applies the same call to another base)."""
    if result is base or not _is_array(base) or not _is_array(result):
        return result
    if isinstance(base, np.ndarray) and not (isinstance(result, np.ndarray) and np.may_share_memory(result, base)):
        return result
    if isinstance(result, np.ndarray) and not isinstance(base, np.ndarray):
        return result
    if name in _RESHAPES:
        contig = is_contig(st, base)
        if contig or name in _ALWAYS_VIEW:
            register(st, result, base, "reshape", tuple(np.shape(result)), contig)
        else:
            _unknown(st, result, base, f"'{name}' of a non-contiguous array",
                     "NumPy returns a view or a copy depending on the strides")
    elif name in _TRANSPOSES:
        perm = _perm(st, base, result, name, redo)
        if perm is None:
            _unknown(st, result, base, f"'{name}'", "pullback cannot tell which axes it permutes")
        else:
            register(st, result, base, "transpose", perm, False)
    elif name in _READONLY and redo is not None:
        register(st, result, base, "readonly", (f"np.{name}", redo), False)
    return result


def _perm(st, base, result, name, redo):
    nd = np.ndim(base)
    if name == "T":
        return tuple(reversed(range(nd)))
    if isinstance(result, Traced):
        stmts = st.b.stmts
        if stmts and stmts[-1].pat == (result.atom,) and isinstance(stmts[-1].exp, Prim) \
                and stmts[-1].exp.op == "transpose":
            return tuple(stmts[-1].exp.p["perm"])
        return None
    if redo is None or nd > 7:
        return None
    dims = tuple(range(2, nd + 2))
    try:
        r = redo(np.empty(dims, dtype=np.int8))
    except Exception:
        return None
    return tuple(dims.index(d) for d in r.shape) if isinstance(r, np.ndarray) and r.ndim == nd else None


# -- in-place updates ---------------------------------------------------------------------

def _concrete(*xs):
    return all(not isinstance(x, Traced) for x in xs)


def _key_concrete(key):
    return all(not isinstance(k, Traced) and not (isinstance(k, slice) and any(
        isinstance(p, Traced) for p in (k.start, k.stop, k.step))) for k in _entries(key))


def _row(rec):
    # the loop is unrolled (static trip count, exact) or fails with a located error
    return NeedUnroll("the rows of the array the loop iterates over are updated in place, or the array is",
                      hint="iterate over the indices (for i in range(len(a)): a[i] *= 2)")


def _forward(st, rec, b):
    """The view `rec` makes of the (new) base `b`."""
    if rec.kind == "row":
        raise _row(rec)
    if rec.kind == "index":
        key = rec.data
        if isinstance(b, np.ndarray) and _key_concrete(key):
            return b[key]
        return ops.getitem(st, b, key)
    if rec.kind == "transpose":
        return np.transpose(b, rec.data) if isinstance(b, np.ndarray) else ops.transpose(st, b, rec.data)
    if rec.kind == "reshape":
        return np.reshape(b, rec.data) if isinstance(b, np.ndarray) else ops.reshape(st, b, rec.data)
    if rec.kind == "readonly":
        return rec.data[1](b)
    raise StagingError(f"an in-place update of an array while a view of it made by {rec.data[0]} is still in use "
                       f"({rec.data[1]}); pullback cannot update that view", hint=_COPY_HINT)


def _backward(st, rec, new):
    """The base of `rec` after its view was set to `new`."""
    if rec.kind == "row":
        raise _row(rec)
    b = rec.base
    if rec.kind == "index":
        key = rec.data
        if _concrete(b, new) and _key_concrete(key):
            nb = b.copy()
            nb[key] = new
            return nb
        if any(k is None for k in _entries(key)):
            key, new = _drop_newaxes(st, b, key, new)
        return ops.setitem(st, b, key, new)
    if rec.kind == "transpose":
        inv = tuple(int(i) for i in np.argsort(rec.data))
        return np.transpose(new, inv).copy() if _concrete(new) else ops.transpose(st, new, inv)
    if rec.kind == "reshape":
        shape = tuple(np.shape(b))
        return np.reshape(new, shape).copy() if _concrete(new) else ops.reshape(st, new, shape)
    if rec.kind == "readonly":
        raise StagingError(f"an in-place update of a read-only view made by {rec.data[0]} "
                           "(NumPy does not allow writing to it either)", hint="copy it first with .copy()")
    raise StagingError(f"an in-place update of a view made by {rec.data[0]} ({rec.data[1]}); pullback cannot "
                       "carry the update over to the array it views", hint=_COPY_HINT)


def _drop_newaxes(st, b, key, new):
    """(key without `None`s, `new` without the axes they added)."""
    ents = ops._expand_key(key, np.ndim(b))
    out, drop = 0, []
    for k in ents:
        if k is None:
            drop.append(out)
            out += 1
        elif isinstance(k, slice):
            out += 1
    shape = [d for i, d in enumerate(np.shape(new)) if i not in drop]
    key2 = tuple(k for k in _entries(key) if k is not None)
    new = np.reshape(new, shape) if not isinstance(new, Traced) else ops.reshape(st, new, tuple(shape))
    return key2, new


def write_through(st, old, new):
    """[(array object, new value)] for an in-place update of `old` to `new`: `old` itself, the
    arrays it is a view of, and the live views of the root array (see module doc)."""
    pairs = [(old, new)]
    rec = record(st, old)
    cur, curnew = old, new
    while rec is not None:
        bnew = _backward(st, rec, curnew)
        register(st, curnew, bnew, rec.kind, rec.data, rec.contig)
        cur, curnew = rec.base, bnew
        pairs.append((cur, curnew))
        rec = record(st, cur)
    kids = st.view_kids
    if not any(kids.get(id(o)) for o, _ in pairs):
        return pairs
    fixed = {id(o): n for o, n in pairs}
    live = _live_ids(st)
    seen = set()
    todo = [(cur, curnew)]
    while todo:
        o, n = todo.pop()
        for child in list(kids.get(id(o), ())):
            c = child.view
            if child.base is not o or id(c) in seen:
                continue
            seen.add(id(c))
            if id(c) in fixed:
                todo.append((c, fixed[id(c)]))
                continue
            if id(c) not in live:
                continue
            cn = _forward(st, child, n)
            if cn is c or cn is n:
                cn = Traced(cn.atom) if isinstance(cn, Traced) else cn.copy()
            register(st, cn, n, child.kind, child.data, child.contig)
            pairs.append((c, cn))
            todo.append((c, cn))
    return pairs


def _live_ids(st):
    from .alias import _frames
    out: set = set()
    seen: set = set()

    def walk(v, depth=0):
        if _is_array(v):
            out.add(id(v))
            return
        if depth > 64 or id(v) in seen:
            return
        if isinstance(v, (list, tuple)):
            seen.add(id(v))
            for x in v:
                walk(x, depth + 1)
        elif isinstance(v, dict):
            seen.add(id(v))
            for x in v.values():
                walk(x, depth + 1)

    for f, _ in _frames(st):
        for v in f.vars.values():
            walk(v)
    return out


# -- traced `if`s and IR loops ---------------------------------------------------------------

def _sig(data):
    if isinstance(data, tuple) and len(data) == 2 and callable(data[1]):
        return ("fn", data[0], id(data[1]))
    def part(k):
        if isinstance(k, Traced):
            a = k.atom
            return ("C", repr(a.value)) if isinstance(a, Const) else ("V", a)
        return ("K", repr(k))

    out = []
    for k in _entries(data):
        if isinstance(k, slice):  # a dynamic slice's bounds are traced
            out.append(("S", part(k.start), part(k.stop), part(k.step)))
        else:
            out.append(part(k))
    return (type(data).__name__, tuple(out))


def _relations(st, env):
    """{position: (base descriptor, kind, signature, record)} for the array leaves of `env` that are
    views; the base is ('pos', its first position in env) or ('obj', id) when env does not hold it."""
    from .alias import positions
    pos = positions(env)
    where: dict = {}
    for p in sorted(pos):
        where.setdefault(id(pos[p]), p)
    out = {}
    for p, o in pos.items():
        rec = record(st, o)
        if rec is None:
            continue
        q = where.get(id(rec.base))
        out[p] = (("pos", q) if q is not None else ("obj", id(rec.base)), rec.kind, _sig(rec.data), rec)
    return out


def _rebase(st, new_pos, p, rel, obj_base):
    bd, _, _, rec = rel
    base = new_pos.get(bd[1]) if bd[0] == "pos" else obj_base
    if base is not None:
        register(st, new_pos[p], base, rec.kind, rec.data, rec.contig)


def after_if(st, e1, e2, new, line):
    """After a traced `if` (see module doc): a merged array that is the same view in both branches is
    that view of the merged base; one that is a view in one branch only, or a different view, is
    ambiguous, and so is its base."""
    from .alias import mark_ambiguous, positions
    r1, r2 = _relations(st, e1), _relations(st, e2)
    if not r1 and not r2:
        return
    p1, p2, pn = positions(e1), positions(e2), positions(new)
    bad = []
    for p, o in pn.items():
        a, c = r1.get(p), r2.get(p)
        if (a is None and c is None) or (p1.get(p) is o and p2.get(p) is o):
            continue
        if a is not None and c is not None and a[:3] == c[:3]:
            _rebase(st, pn, p, a, a[3].base)
            continue
        bad.append(o)
        for rel in (a, c):
            if rel is not None:
                bad.append(pn.get(rel[0][1]) if rel[0][0] == "pos" else rel[3].base)
    mark_ambiguous(st, [b for b in bad if b is not None], line)


def enter_loop(st, env0, env):
    """The loop body's entry environment: its parameters are views as the arrays they replace were."""
    from .alias import positions
    r0 = _relations(st, env0)
    if not r0:
        return
    pe = positions(env)
    for p, rel in r0.items():
        if p in pe and pe[p] is not rel[3].view:
            _rebase(st, pe, p, rel, rel[3].base)


def loop_end(st, start, after, updated):
    """Positions whose view relation differs between the entry and the end of the body; raises
    `NeedUnroll` if one of those arrays was updated in place in the body."""
    from .alias import positions
    ends = {k: v for k, v in after.items() if k in start}
    rs, ra = _relations(st, start), _relations(st, ends)
    if not rs and not ra:
        return set()
    ps, pa = positions(start), positions(ends)
    none = (None, None, None)
    bad = {p for p in set(rs) | set(ra) if (rs.get(p) or none)[:3] != (ra.get(p) or none)[:3]}
    for p in bad:
        objs = [ps.get(p), pa.get(p)] + [r[3].base for r in (rs.get(p), ra.get(p)) if r is not None]
        if any(o is not None and id(o) in updated for o in objs):
            raise NeedUnroll(f"'{p[0]}' is a view of another array in some iterations only, or of different "
                             "parts of it, and the loop updates it in place", hint=_COPY_HINT)
    return bad


def after_loop(st, env0, start, new_env, bad, line):
    """After an IR loop: its results are views as at the entry of the body, except at the positions
    `bad` (from `loop_end`), which become ambiguous."""
    from .alias import mark_ambiguous, positions
    rs = _relations(st, start)
    if not rs and not bad:
        return
    p0, pn = positions(env0), positions(new_env)
    amb = []
    for p, o in pn.items():
        if p in bad:
            amb.append(o)
            rel = rs.get(p)
            if rel is not None and rel[0][0] == "pos":
                amb.append(pn.get(rel[0][1]))
            continue
        rel = rs.get(p)
        if rel is not None and p0.get(p) is not o:
            _rebase(st, pn, p, rel, rel[3].base)
    mark_ambiguous(st, [a for a in amb if a is not None], line)


__all__ = ["View", "after_if", "after_loop", "enter_loop", "is_contig", "loop_end", "note_call", "note_index",
           "note_row", "record", "register", "write_through"]


# -- calls -----------------------------------------------------------------------------------

def arg_pattern(st, leaves):
    """(pattern, related) for the argument leaves of a call: pattern lists (k, j, kind, data,
    contig) for leaf k a view of leaf j that the callee can re-make (static index, transpose,
    reshape); `related` says whether other argument leaves share memory in a way it cannot follow."""
    first: dict = {}
    for i, x in enumerate(leaves):
        if _is_array(x):
            first.setdefault(id(x), i)
    roots: dict = {}
    pat, related = [], False
    for k, x in enumerate(leaves):
        if not _is_array(x) or first[id(x)] != k:
            continue
        rec = record(st, x)
        root, direct = x, None
        while rec is not None:
            if direct is None and id(rec.base) in first:
                direct = rec
            root = rec.base
            rec = record(st, root)
        roots.setdefault(id(root), []).append(k)
        if direct is not None and direct.base is record(st, x).base and direct.kind in ("index", "transpose", "reshape") \
                and (direct.kind != "index" or _key_concrete(direct.data)):
            pat.append((k, first[id(direct.base)], direct.kind, direct.data, direct.contig))
    covered = {k for k, *_ in pat}
    for ks in roots.values():
        # leaves with a common root: fine only if each is a re-made view of another one
        if len(ks) > 1 and len([k for k in ks if k not in covered]) > 1:
            related = True
    return pat, related


def pattern_key(pat):
    return tuple((k, j, kind, _sig(data)) for k, j, kind, data, _ in pat)


def enter_call(st, pleaves, pat):
    """In the callee: its parameters are views of each other as the caller's arguments were."""
    for k, j, kind, data, contig in pat:
        register(st, pleaves[k], pleaves[j], kind, data, contig)
