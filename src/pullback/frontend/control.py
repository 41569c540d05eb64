"""Control flow: `if`, conditional expressions, `for` and `while`.

Contract:
- `stage_if`: a concrete condition runs only the taken branch; a traced one
  stages both branches in sub-builders and emits an IR `If` whose results are
  the variables the branches changed (merged by `Merger`; a variable defined in
  only one branch becomes `Poisoned`, an error when read). Both branches ending
  in `return` (see `rewrite`) merge their return values instead.
- `stage_for`: Python iterables are unrolled; `range(...)` and arrays become an
  IR `Loop` (`ForForm`) whose parameters are the variables the body changes
  (found by trial stagings until their types are stable). A static trip count
  of at most `FALLBACK_UNROLL_LIMIT` falls back to unrolling when the body needs
  concrete values (`ConcreteNeeded`) or changes structure/shapes (`NeedUnroll`);
  a longer loop is a located error saying why (the body's line) and what to
  write instead. (Dynamic slices `x[i:i+k]` need no unrolling.)
- `stage_while`: a loop that carries traced values becomes an IR `Loop`
  (`WhileForm`) whose bool condition parameter is computed before the loop and
  at the end of the body, even when the condition is concrete at entry (its
  concrete variables are then carried as traced ones). A loop over Python
  values only iterates at staging time, until its condition becomes traced;
  one that carries traced values but cannot be an IR loop iterates at staging
  time at most `FALLBACK_UNROLL_LIMIT` times (then a located error).
Variables first assigned inside an IR loop are `Poisoned` after it.
"""
from __future__ import annotations

from ..errors import ShapeError, StagingError
from ..ir.builder import Builder
from ..ir.core import Body, Const
from ..ir.names import NameSupply
from ..ir.types import I64, TensorType, promote
from ..pytree import flatten, unflatten
from . import alias, ops, views
from .iterables import (TracedIterable, as_loop_iter, traced_enumerate, traced_range,  # noqa: F401  (calls, staging)
                        traced_reversed, traced_zip)
from .values import (UNSET, ConcreteNeeded, NeedUnroll, Poisoned, Traced, copy_containers, is_weak,
                     join_dtype, leaf_type, same_concrete, to_atom)

UNROLL_LIMIT = 10000  # Python iterables (lists, tuples), comprehensions, while loops over Python values
# A loop over range(...) or an array that cannot be an IR loop (its body needs the index as a
# Python value, or changes shapes or Python structures) is unrolled up to this many iterations;
# above it, a located error says why (never a silent unrolling of a long loop: compile time grows
# with the copies of the body, and a derivative multiplies them again).
FALLBACK_UNROLL_LIMIT = 64
_NO_TRACED = "the loop carries no traced values"
_MISSING = object()


class LoopExit(Exception):
    """Reserved (not raised in normal operation)."""


# -- merging values of two branches ---------------------------------------------------

class _Slot:
    __slots__ = ("k",)

    def __init__(self, k):
        self.k = k


def _same(a, c):
    if a is c:
        return True
    f = getattr(a, "_pb_same", None)
    if f is not None:
        return f(c)
    if isinstance(a, Traced) and isinstance(c, Traced):
        return a.atom == c.atom
    if isinstance(a, Traced) or isinstance(c, Traced):
        return False
    return same_concrete(a, c)


def _numeric(v):
    if isinstance(v, Traced):
        return True
    try:
        leaf_type(v)
        return True
    except Exception:
        return False


class Merger:
    """Joins the values of the two branches of an `If` into slots of the `If`'s results."""

    def __init__(self, b1, b2, line):
        self.b1, self.b2, self.line = b1, b2, line
        self.r1, self.r2, self.names = [], [], []
        self._memo = {}  # (id a, id c) -> (a, c, slot): one array in both branches stays one array

    def leaf(self, name, a, c, strict):
        if alias.is_mutable_leaf(a) and alias.is_mutable_leaf(c):
            hit = self._memo.get((id(a), id(c)))
            if hit is not None and hit[0] is a and hit[1] is c:
                return hit[2]
            r = self._leaf(name, a, c, strict)
            if isinstance(r, _Slot):
                self._memo[(id(a), id(c))] = (a, c, r)
            return r
        return self._leaf(name, a, c, strict)

    def _poison(self, name, msg, strict, hint=None):
        if strict:
            raise StagingError(msg, hint=hint)
        return Poisoned(name, msg, hint)

    def _leaf(self, name, a, c, strict):
        if _same(a, c):
            return a
        if a is _MISSING or c is _MISSING or isinstance(a, Poisoned) or isinstance(c, Poisoned):
            if isinstance(a, Poisoned):
                return a
            if isinstance(c, Poisoned):
                return c
            return self._poison(name, f"'{name}' is assigned in only one branch of the `if` at line {self.line}, "
                                      "whose condition is traced, and is used after it",
                                strict, "assign it before the `if` or in both branches")
        if a is UNSET:
            return c if not isinstance(c, Traced) else self._slot(name, None, c)
        if c is UNSET:
            return a if not isinstance(a, Traced) else self._slot(name, a, None)
        if not (_numeric(a) and _numeric(c)):
            return self._poison(name, f"'{name}' holds different Python values in the branches of the `if` at line "
                                      f"{self.line}, whose condition is traced", strict,
                                "only numbers and arrays can differ between traced branches")
        ta, tc = leaf_type(a), leaf_type(c)
        if ta.shape != tc.shape and (ta.shape == () or tc.shape == ()):
            return self._slot(name, a, c, shape=ta.shape or tc.shape)  # a scalar broadcasts
        if ta.shape != tc.shape:
            msg = (f"'{name}' has shape {ta.shape} in one branch and {tc.shape} in the other branch of the `if` "
                   f"at line {self.line}, whose condition is traced")
            if strict:
                raise ShapeError(msg, hint="both branches must produce the same shape")
            return Poisoned(name, msg, "both branches must produce the same shape")
        return self._slot(name, a, c)

    def _slot(self, name, a, c, shape=None):
        ref = c if a is None else a
        dt = join_dtype(a, c) if a is not None and c is not None else leaf_type(ref).dtype
        t = leaf_type(ref).with_dtype(dt)
        if shape is not None:
            t = t.with_shape(shape)
        z = Const(0, TensorType(dt)) if not t.shape else None
        aa = to_atom(self.b1, a, dt) if a is not None else (z or self.b1.zeros(t))
        cc = to_atom(self.b2, c, dt) if c is not None else (z or self.b2.zeros(t))
        if aa.type.shape != t.shape:
            aa = self.b1.emit("broadcast_to", aa, shape=t.shape)
        if cc.type.shape != t.shape:
            cc = self.b2.emit("broadcast_to", cc, shape=t.shape)
        self.r1.append(aa)
        self.r2.append(cc)
        self.names.append(_name_hint(name))
        return _Slot(len(self.r1) - 1)

    def value(self, name, v1, v2, strict=False):
        if v1 is v2:
            return v1
        if v1 is _MISSING or v2 is _MISSING or isinstance(v1, Poisoned) or isinstance(v2, Poisoned):
            return self.leaf(name, v1, v2, strict)
        l1, t1 = flatten(v1)
        l2, t2 = flatten(v2)
        if t1 != t2:
            if v1 is UNSET:
                l1, t1 = [UNSET] * len(l2), t2
            elif v2 is UNSET:
                l2, t2 = [UNSET] * len(l1), t1
            else:
                return self._poison(name, f"'{name}' has a different structure ({t1} vs {t2}) in the branches of the "
                                          f"`if` at line {self.line}, whose condition is traced", strict)
        return unflatten(t1, [self.leaf(name, a, c, strict) for a, c in zip(l1, l2)])

    @staticmethod
    def fill(v, outs, cache=None):
        """`v` with its slots replaced by the `If`'s results (one `Traced` per slot across calls
        sharing `cache`, so that arrays aliased in both branches stay aliased)."""
        cache = {} if cache is None else cache
        leaves, t = flatten(v, is_leaf=lambda x: isinstance(x, _Slot))
        return unflatten(t, [cache.setdefault(x.k, Traced(outs[x.k])) if isinstance(x, _Slot) else x
                             for x in leaves])


def _name_hint(name):
    from .assign import _hint
    return _hint(name)


def _emit_if(st, cond, m, b1, b2):
    if not m.r1:
        return ()
    then = Body(tuple(b1.stmts), tuple(m.r1))
    else_ = Body(tuple(b2.stmts), tuple(m.r2))
    return st.b.if_(cond.atom, then, else_, names=m.names)


def _copy_env(env):
    return {k: copy_containers(v) for k, v in env.items()}


def stage_if(st, s):
    c = ops.to_bool(st, st.eval(s.test))
    if not isinstance(c, Traced):
        return st.exec_block(s.body if c else s.orelse)
    env0 = st.frame.vars
    results = []
    for branch in (s.body, s.orelse):
        b = st.b.sub()
        env = _copy_env(env0)
        with st.using(b, env), st.traced_region():
            r = st.exec_block(branch)
            env = st.frame.vars
        results.append((b, env, r))
    (b1, e1, r1), (b2, e2, r2) = results
    m = Merger(b1, b2, s.lineno)
    if r1 is not None and r2 is not None:
        merged = m.value("return value", r1[1], r2[1], strict=True)
        outs = _emit_if(st, c, m, b1, b2)
        ret = Merger.fill(merged, outs)
        alias.after_if(st, {"": r1[1]}, {"": r2[1]}, {"": ret}, s.lineno)
        views.after_if(st, {"": r1[1]}, {"": r2[1]}, {"": ret}, s.lineno)
        return ("return", ret)
    if r1 is not None or r2 is not None:
        raise StagingError("internal: only one branch of a traced `if` returned")
    merged = {}
    for name in list(e1) + [n for n in e2 if n not in e1]:
        v1, v2 = e1.get(name, _MISSING), e2.get(name, _MISSING)
        v0 = env0.get(name, _MISSING)
        if v0 is not _MISSING and _same_tree(v0, v1) and _same_tree(v0, v2):
            merged[name] = v0
            continue
        merged[name] = m.value(name, v1, v2)
    outs = _emit_if(st, c, m, b1, b2)
    cache: dict = {}
    new = {k: Merger.fill(v, outs, cache) for k, v in merged.items()}
    alias.after_if(st, e1, e2, new, s.lineno)
    views.after_if(st, e1, e2, new, s.lineno)
    env0.clear()
    env0.update(new)
    return None


def _same_tree(a, c):
    if a is c:
        return True
    if isinstance(a, (Poisoned,)) or isinstance(c, Poisoned) or a is _MISSING or c is _MISSING:
        return False
    la, ta = flatten(a)
    lc, tc = flatten(c)
    return ta == tc and all(_same(x, y) for x, y in zip(la, lc))


def stage_ifexp(st, e):
    c = ops.to_bool(st, st.eval(e.test))
    if not isinstance(c, Traced):
        return st.eval(e.body if c else e.orelse)
    vals = []
    for node in (e.body, e.orelse):
        b = st.b.sub()
        with st.using(b), st.traced_region():
            vals.append((b, st.eval(node)))
    (b1, v1), (b2, v2) = vals
    m = Merger(b1, b2, e.lineno)
    merged = m.value("conditional expression", v1, v2, strict=True)
    out = Merger.fill(merged, _emit_if(st, c, m, b1, b2))
    views.after_if(st, {"": v1}, {"": v2}, {"": out}, e.lineno)
    return out


# -- loops ------------------------------------------------------------------------------

def _unroll(st, target, items, body):
    for k, item in enumerate(items):
        if k >= UNROLL_LIMIT:
            raise StagingError(f"loop has more than {UNROLL_LIMIT} iterations to unroll at staging time",
                               hint="make the loop's body work with a traced index (avoid Python lists indexed by it), "
                                    "or iterate over an array")
        st.assign(target, item)
        r = st.exec_block(body)
        if r is not None:
            raise StagingError("internal: return inside a loop body")


class UnrollLimitError(ConcreteNeeded):
    """A loop that is not an IR loop and too long to unroll. A `ConcreteNeeded`: an enclosing
    loop may still unroll (making what the body needed concrete) when it is short enough."""


def _unroll_error(s, kind, n, why) -> StagingError:
    """The located error for a loop that would need unrolling beyond `FALLBACK_UNROLL_LIMIT`:
    why (the body's first failure, with its line) and what to write instead."""
    if isinstance(why, UnrollLimitError):
        return why  # an inner loop's: it says more
    loc = getattr(why, "loc", None)
    where = ""
    if loc is not None:
        where = f" (line {loc.line}" + (f": {loc.text.strip()}" if getattr(loc, "text", "") else "") + ")"
    reason = getattr(why, "msg", str(why))
    many = f"would copy its body {n} times" if kind == "for" else \
        f"ran it more than {FALLBACK_UNROLL_LIMIT} times at staging time"
    msg = (f"the `{kind}` loop at line {s.lineno} cannot be staged as an IR loop: {reason}{where}; unrolling it "
           f"{many} (pullback unrolls at most {FALLBACK_UNROLL_LIMIT} iterations)")
    hint = getattr(why, "hint", None) or "keep shapes and Python structures the same in every iteration"
    hint += ("; write the body so that it works with a traced loop index (x[i], x[i:i+k] with a static k, "
             "arrays instead of Python lists), or make the trip count a static argument")
    return UnrollLimitError(msg, loc=loc, hint=hint)


def stage_for(st, s):
    it = as_loop_iter(st, st.eval(s.iter))
    if isinstance(it, list):
        _unroll(st, s.target, it, s.body)
        return None
    if it.static:
        if it.n == 0:
            return None
        env0 = st.frame.vars
        try:
            _ir_loop(st, s, it, None)
        except (NeedUnroll, ConcreteNeeded) as why:
            st.frame.vars = env0
            if it.n > FALLBACK_UNROLL_LIMIT:
                raise _unroll_error(s, "for", it.n, why) from None
            _unroll(st, s.target, (it.element(k) for k in range(it.n)), s.body)
        return None
    try:
        _ir_loop(st, s, it, None)
    except NeedUnroll as e:
        raise StagingError(e.msg + " in a loop whose trip count is traced",
                           hint=e.hint or "keep shapes and Python structures the same in every iteration") from None
    return None


def stage_while(st, s):
    count = 0
    why = None  # why the loop, which carries traced values, is not an IR loop
    while True:
        c = ops.to_bool(st, st.eval(s.test))
        if count == 0 and c is True:
            # A loop that carries traced state becomes an IR loop even when its
            # condition is concrete at entry (`t = 0.0; while t < T:` in a
            # simulation): the concrete values it changes are carried as traced
            # ones. Loops over Python values only still run at staging time.
            env0 = st.frame.vars
            try:
                _ir_loop(st, s, None, Traced(Const(True, TensorType("bool"))), require_traced=True)
                return None
            except (NeedUnroll, ConcreteNeeded) as e:
                st.frame.vars = env0
                if not (isinstance(e, NeedUnroll) and e.msg == _NO_TRACED):
                    why = e
        if isinstance(c, Traced):
            try:
                _ir_loop(st, s, None, c)
            except NeedUnroll as e:
                raise StagingError(e.msg + " in a while loop with a traced condition",
                                   hint=e.hint or "keep shapes and Python structures the same in every iteration") from None
            return None
        if not c:
            return None
        count += 1
        if why is not None and count > FALLBACK_UNROLL_LIMIT:
            raise _unroll_error(s, "while", count, why)
        if count > UNROLL_LIMIT:
            raise StagingError(f"while loop ran more than {UNROLL_LIMIT} iterations at staging time",
                               hint="its condition only depends on Python values; make it depend on traced data "
                                    "or check that it terminates")
        r = st.exec_block(s.body)
        if r is not None:
            raise StagingError("internal: return inside a loop body")


def _leafspec_join(name, b0, prev, after):
    """The param type of one carried leaf, or None if it stays concrete."""
    if prev is None and b0 is not UNSET and _same(b0, after):
        return None
    if isinstance(after, (Poisoned,)):
        raise NeedUnroll(after.msg)
    if not _numeric(after) or (b0 is not UNSET and not _numeric(b0)):
        raise NeedUnroll(f"'{name}' takes a different Python value in each iteration")
    ta = leaf_type(after)
    if prev is not None:
        base = prev
        dt = base.dtype if is_weak(after) else promote(base.dtype, ta.dtype)
    elif b0 is UNSET:
        return ta
    else:
        base = leaf_type(b0)
        dt = join_dtype(b0, after)
    if base.shape != ta.shape:
        raise NeedUnroll(f"the shape of '{name}' changes from {base.shape} to {ta.shape}")
    return TensorType(dt, base.shape)


def _analyze(env0, start, after, carry):
    new = {}
    for name, v0 in env0.items():
        if isinstance(v0, Poisoned):
            continue
        a = after.get(name, _MISSING)
        if a is _MISSING:
            continue
        prev = carry.get(name)
        if prev is None and _same_tree(start[name], a):
            continue
        l0, t0 = flatten(v0)
        la, ta = flatten(a)
        if v0 is UNSET:
            l0, t0 = [UNSET] * len(la), ta
        if t0 != ta:
            if a is UNSET:
                continue
            raise NeedUnroll(f"the structure of '{name}' changes in the loop body ({t0} -> {ta})")
        pspecs = prev[1] if prev is not None else [None] * len(l0)
        specs = [_leafspec_join(name, b0, p, x) for b0, p, x in zip(l0, pspecs, la)]
        if any(sp is not None for sp in specs):
            new[name] = (t0, specs)
    return new


def _start_env(st, b, env0, carry, unshare=frozenset()):
    """The body's entry environment: a parameter per carried leaf, one shared parameter for the
    carried leaves that are the same array object (unless its id is in `unshare`). Returns
    (env, params, init, slots) where slots[(name, i)] is the parameter index of carried leaf i."""
    env = _copy_env(env0)
    params, init, slots, shared = [], [], {}, {}
    for name, (tdef, specs) in carry.items():
        v0 = env0[name]
        l0 = flatten(v0)[0] if v0 is not UNSET else [UNSET] * len(specs)
        leaves = []
        for i, (leaf, sp) in enumerate(zip(l0, specs)):
            if sp is None:
                leaves.append(leaf)
                continue
            share = alias.is_mutable_leaf(leaf) and id(leaf) not in unshare
            hit = shared.get(id(leaf)) if share else None
            if hit is not None and hit[0] is leaf and hit[1].type == sp:
                slots[(name, i)] = hit[2]
                leaves.append(hit[1])
                continue
            p = b.fresh(_name_hint(name), sp)
            params.append(p)
            init.append(leaf)
            t = Traced(p)
            slots[(name, i)] = len(params) - 1
            if share:
                shared[id(leaf)] = (leaf, t, len(params) - 1)
            leaves.append(t)
        env[name] = unflatten(tdef, leaves)
    views.enter_loop(st, env0, env)
    return env, params, init, slots


def _run_body(st, s, it, bb, env, idx):
    with st.using(bb, env), st.traced_region():
        if it is not None:
            st.assign(s.target, it.element(Traced(idx)))
        r = st.exec_block(s.body)
        if r is not None:
            raise StagingError("internal: return inside a loop body")
        cond = None
        if it is None:
            cond = ops.to_bool(st, st.eval(s.test))
        return st.frame.vars, cond


def _ir_loop(st, s, it, cond0, require_traced=False):
    env0 = st.frame.vars
    carry = {}
    for attempt in range(8):
        sup = NameSupply(st.b.supply.used)
        tb = Builder(sup, st.b.loc)
        env, params, _, _ = _start_env(st, tb, env0, carry)
        idx = tb.fresh("i", I64)
        start = _copy_env(env)
        after, _ = _run_body(st, s, it, tb, env, idx)
        new = _analyze(env0, start, after, carry)
        if new == carry:
            break
        # keep previously carried names (types only grow)
        for k, v in carry.items():
            new.setdefault(k, v)
        if new == carry:
            break
        carry = new
    else:
        raise StagingError("the types of the loop's variables do not stabilise")
    if require_traced and not any(isinstance(leaf, Traced) for name in carry if env0[name] is not UNSET
                                  for leaf in flatten(env0[name])[0]):
        raise NeedUnroll(_NO_TRACED)
    # final staging (again without sharing a parameter between aliased leaves that the body separates)
    unshare: set = set()
    for _ in range(2):
        bb = st.b.sub()
        env, params, init, slots = _start_env(st, bb, env0, carry, unshare)
        idx = bb.fresh("i", I64) if it is not None else None
        start_pos = alias.positions(env)
        start_env = _copy_env(env)
        mark = len(st.updated)
        after, cond = _run_body(st, s, it, bb, env, idx)
        updated = {id(o) for o in st.updated[mark:]}
        split = alias.loop_body(env0, start_pos, after, init, slots, updated)
        bad_views = views.loop_end(st, start_env, after, updated)
        src = getattr(it, "array", None)
        if src is not None and (id(src) in updated or any(
                o is src and id(start_pos.get(p)) in updated for p, o in alias.positions(env0).items())):
            raise NeedUnroll("the loop updates in place the array it iterates over",
                             hint="iterate over the indices (for i in range(len(a)): ...)")
        if not split:
            break
        unshare |= split
    else:
        raise StagingError("internal: loop aliasing does not stabilise")
    results = [None] * len(params)
    for name, (tdef, specs) in carry.items():
        la, ta = flatten(after[name])
        if ta != tdef:
            raise StagingError(f"internal: structure of '{name}' changed between loop stagings")
        for i, (leaf, sp) in enumerate(zip(la, specs)):
            if sp is None or results[slots[(name, i)]] is not None:
                continue
            if leaf is UNSET:
                results[slots[(name, i)]] = _zero_atom(bb, sp)
                continue
            if leaf_type(leaf).shape != sp.shape:
                raise ShapeError(f"the shape of '{name}' changes in the loop body")
            results[slots[(name, i)]] = to_atom(bb, leaf, sp.dtype)
    pinit = []
    ptypes = [p.type for p in params]
    for leaf, t in zip(init, ptypes):
        pinit.append(_zero_atom(st.b, t) if leaf is UNSET else to_atom(st.b, leaf, t.dtype))
    if it is not None:
        bound = it.n.atom if isinstance(it.n, Traced) else Const(int(it.n), I64)
        outs = st.b.for_loop(params, pinit, idx, bound, Body(tuple(bb.stmts), tuple(results)))
    else:
        cp = bb.fresh("cond", TensorType("bool"))
        cres = cond.atom if isinstance(cond, Traced) else Const(bool(cond), TensorType("bool"))
        outs = st.b.while_loop([cp] + params, [cond0.atom] + pinit, cp,
                               Body(tuple(bb.stmts), (cres,) + tuple(results)))
        outs = outs[1:]
    # rebind (one Traced per loop result: leaves sharing a parameter stay one array)
    new_env = dict(env0)
    out_vals: dict = {}
    for name, (tdef, specs) in carry.items():
        v0 = env0[name]
        l0 = flatten(v0)[0] if v0 is not UNSET else [UNSET] * len(specs)
        leaves = []
        for i, (leaf, sp) in enumerate(zip(l0, specs)):
            if sp is None:
                leaves.append(leaf)
            else:
                j = slots[(name, i)]
                leaves.append(out_vals.setdefault(j, Traced(outs[j])))
        new_env[name] = unflatten(tdef, leaves)
    alias.after_loop(st, env0, after, new_env, s.lineno)
    views.after_loop(st, env0, start_env, new_env, bad_views, s.lineno)
    for name in after:
        if name not in env0:
            new_env[name] = Poisoned(name, f"'{name}' is assigned inside the loop at line {s.lineno}, which is staged "
                                           "as an IR loop, and is not available after it",
                                     "assign it before the loop so that it becomes a loop variable")
    env0.clear()
    env0.update(new_env)
    st.frame.vars = env0


def _zero_atom(b, t):
    if not t.shape:
        return Const(0, TensorType(t.dtype))
    return b.zeros(t)
