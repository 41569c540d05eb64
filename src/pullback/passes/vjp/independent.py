"""Loops with independent iterations, reversed without re-running them forward.

Contract (note [independent-loops] in docs/design.md): `lazy_tape(ctx, b, st)`
returns a `LoopTape` for loop statement `st` of a re-executed body, or None.
It answers only for a `for` loop whose every parameter is an array that the body
changes in place (or not at all) such that iteration k reads and writes only

- its own *slab*: one axis indexed by `k + c` (c the same loop-invariant,
  non-negative value in every access), and
- elsewhere, locations no iteration writes: on the slab axis, a non-negative
  loop-invariant index `r` with `(k + c) - r` provably at least 1.

Then the state every iteration sees equals the state before the loop on all it
touches, so the return sweep can start from the array as it was *before* the
loop: the forward re-execution and its undo log are not emitted at all, and the
return sweep's re-executed iterations read the entry state. The caller
(`body.fwd_body` with `lazy=True`) asks only where nothing after the loop in
the re-executed body reads the loop's results, so no forward run is needed.

`commutes(ctx, b, st)` is that condition alone: the store-all reversal of such
a loop runs its return sweep forward (`LoopTape.forward`).

`final_state(ctx, b, st, p)` says, for any `for` loop, whether every location of
its in-place array `p` that iteration k reads is written by no iteration k' >= k
("triangular" loops, Gaussian elimination): then the store-all reversal logs
nothing for `p` and its return sweep reads the loop's result (`LoopTape.final`).

Facts about indices come from the statements of the enclosing builders
(`Builder.parent`) and `ctx.nonneg` (reverse-loop counters and restored
indices, which are in [0, n)). Anything not understood answers None, which
keeps the store-all reversal.
"""
from __future__ import annotations

from ...ir.core import Const, ForForm, Loop, Prim
from ...ir.traverse import exp_scopes, free_vars, iter_lets
from ...ir.types import TensorType


class _Fail(Exception):
    pass


def lazy_tape(ctx, b, st):
    from .loop import LoopTape

    if not commutes(ctx, b, st):
        return None
    e = st.exp
    return LoopTape(count=e.form.bound, entry={p: e.init[j] for j, p in enumerate(e.params)}, forward=True)


def commutes(ctx, b, st) -> bool:
    """Whether `for` loop `st`'s iterations are independent as described in the
    module docstring (each touches only its own slab and locations no iteration
    writes): then its return sweep may also run them in increasing order, the
    adjoint contributions to shared locations being sums (note
    [independent-loops], "forward return sweeps")."""
    e = st.exp
    if not isinstance(e, Loop) or not isinstance(e.form, ForForm):
        return False
    facts = _loop_facts(ctx, b, e)
    try:
        found = []
        for j, p in enumerate(e.params):
            if e.body.result[j] == p:
                continue  # unchanged: every iteration sees the value before the loop
            if not isinstance(p.type, TensorType) or p.type.ndim == 0:
                return False
            writes, reads = [], []
            _accesses(e.body, p, e.body.result[j], writes, reads)
            found.append((writes, reads))
        for writes, reads in found:
            _check(e.form.index, writes, reads, facts)
    except _Fail:
        return False
    return True


def final_state(ctx, b, st, p) -> bool:
    """Whether every location of in-place array `p` that iteration k of `for` loop
    `st` reads is written by no iteration k' >= k: then what iteration k read is
    what the loop leaves, and its return sweep may read the loop's result instead
    of undoing each iteration's writes (note [independent-loops], "triangular
    loops"). Proved per (read, write) pair on one axis where both index with
    coefficient 1 on k, both provably non-negative (no wrap-round): the write's
    index minus the read's (k' >= k read as k) is a constant >= 1 plus
    non-negative terms."""
    e = st.exp
    if not isinstance(e, Loop) or not isinstance(e.form, ForForm) or p not in e.params:
        return False
    index = e.form.index
    j = e.params.index(p)
    writes, reads = [], []
    try:
        _accesses(e.body, p, e.body.result[j], writes, reads)
        facts = _loop_facts(ctx, b, e)
        return bool(writes) and all(_before_writes(index, r, w, facts) for r in reads for w in writes)
    except _Fail:
        return False


def _before_writes(index, read, write, facts) -> bool:
    (rspec, ridx), (wspec, widx) = read, write
    for axis in range(min(len(rspec), len(wspec))):
        r, w = _axis_operand(rspec, ridx, axis), _axis_operand(wspec, widx, axis)
        if r is None or w is None:
            continue
        fr, fw = facts.lin(r), facts.lin(w)
        if fr.get(index) != 1 or fw.get(index) != 1 or not (facts.nonneg(r) and facts.nonneg(w)):
            continue   # (a negative index wraps round to the end: a[i - 1] at i = 0 is a[n - 1])
        gap = _plus(fw, _scale(fr, -1))
        if gap.get(1, 0) >= 1 and all(k == 1 or (c > 0 and facts.nonneg(k)) for k, c in gap.items()):
            return True
    return False


def _accesses(body, p, result, writes, reads) -> None:
    """Collect `(spec, idx)` of every write and read of `p`'s in-place chain in `body`
    (nested loops the chain passes through included); fail on any other use."""
    chain = {p}
    for st in body.stmts:
        x = st.exp
        used = free_vars(st) & chain
        if not used:
            continue
        if isinstance(x, Prim) and x.op == "index_update" and x.args[0] in chain \
                and not (set(x.args[1:]) & chain):
            writes.append((x.p["spec"], x.args[2:]))
            chain.add(st.pat[0])
        elif isinstance(x, Prim) and x.op == "index" and x.args[0] in chain and not (set(x.args[1:]) & chain):
            reads.append((x.p["spec"], x.args[1:]))
        elif isinstance(x, Loop):
            inner_free = free_vars(x.body) - set(x.params) - (
                {x.form.index} if isinstance(x.form, ForForm) else set())
            if inner_free & chain:
                raise _Fail
            pos = [j for j, a in enumerate(x.init) if a in chain]
            if len(pos) != 1 or (set(x.init) & chain) - {x.init[pos[0]]}:
                raise _Fail
            j = pos[0]
            _accesses(x.body, x.params[j], x.body.result[j], writes, reads)
            chain.add(st.pat[j])
        else:
            raise _Fail
    if result not in chain or sum(1 for r in body.result if r in chain) != 1:
        raise _Fail


def _loop_facts(ctx, b, e: Loop) -> _Facts:
    """The facts for loop `e` built in `b`: its index and inner loops' indices are
    non-negative, as are `ctx.nonneg`; every var bound in its body varies."""
    known = set(getattr(ctx, "nonneg", ())) | {e.form.index}
    body_defs, variant = {}, set()   # definitions in the body; every var bound in it
    for s in iter_lets(e.body):
        for v in s.pat:
            body_defs[v] = s
        variant.update(s.pat)
        for binders, _ in exp_scopes(s.exp):
            variant.update(binders)
        if isinstance(s.exp, Loop) and isinstance(s.exp.form, ForForm):
            known.add(s.exp.form.index)
    return _Facts(b, body_defs, variant, known)


class _Facts:
    """Definitions (loop body, then enclosing builders) and known non-negative values."""

    def __init__(self, b, body_defs, variant, known):
        self.variant = variant
        self.known = known
        self.defs = dict(body_defs)
        bb = b
        while bb is not None:
            for s in bb.stmts:
                for v in s.pat:
                    self.defs.setdefault(v, s)
            bb = getattr(bb, "parent", None)

    def lin(self, a, depth=0) -> dict:
        """`a` as an integer affine form {atom: coeff, 1: const}."""
        if isinstance(a, Const):
            if _is_int(a):
                return {1: int(a.value)}
            raise _Fail
        st = self.defs.get(a)
        x = st.exp if st is not None else None
        if depth < 40 and isinstance(x, Prim) and x.op in ("add", "sub", "neg") and _is_int(a):
            forms = [self.lin(y, depth + 1) for y in x.args]
            if x.op == "neg":
                return _scale(forms[0], -1)
            return _plus(forms[0], forms[1] if x.op == "add" else _scale(forms[1], -1))
        if depth < 40 and isinstance(x, Prim) and x.op == "mul" and _is_int(a):
            for c, y in ((x.args[0], x.args[1]), (x.args[1], x.args[0])):
                if isinstance(c, Const):
                    return _scale(self.lin(y, depth + 1), int(c.value))
        return {a: 1}

    def nonneg(self, a, depth=0) -> bool:
        if isinstance(a, Const):
            return _is_int(a) and int(a.value) >= 0
        if a in self.known:
            return True
        st = self.defs.get(a)
        x = st.exp if st is not None else None
        if depth > 40 or not isinstance(x, Prim):
            return False
        if x.op in ("add", "mul", "minimum"):
            return all(self.nonneg(y, depth + 1) for y in x.args)
        if x.op == "maximum":
            return any(self.nonneg(y, depth + 1) for y in x.args)
        return False

    def invariant(self, form: dict, index) -> bool:
        return all(v == 1 or (v != index and v not in self.variant) for v in form)


def _is_int(a) -> bool:
    t = a.type
    return isinstance(t, TensorType) and t.ndim == 0 and t.dtype in ("i64", "i32")


def _plus(f, g) -> dict:
    out = dict(f)
    for k, c in g.items():
        out[k] = out.get(k, 0) + c
    return {k: c for k, c in out.items() if c != 0}


def _scale(f, s) -> dict:
    return {k: c * s for k, c in f.items() if c * s != 0}


def _axis_operand(spec, idx, axis):
    """The index operand of spec entry `axis` if it is a single index ("d"), else None."""
    if axis >= len(spec) or spec[axis][0] != "d":
        return None
    it = iter(idx)
    for a, s in enumerate(spec):
        if s[0] in ("d", "ds"):
            v = next(it)
            if a == axis:
                return v
    return None


def _check(index, writes, reads, facts: _Facts) -> None:
    if not writes:
        return
    spec0, idx0 = writes[0]
    slab = None
    for axis in range(len(spec0)):
        w = _axis_operand(spec0, idx0, axis)
        if w is None:
            continue
        f = facts.lin(w)
        rest = {k: c for k, c in f.items() if k != index}
        if f.get(index) == 1 and facts.invariant(rest, index) and facts.nonneg(w):
            slab = (axis, f)
            break
    if slab is None:
        raise _Fail
    axis, form = slab
    for spec, idx in writes:
        w = _axis_operand(spec, idx, axis)
        if w is None or facts.lin(w) != form:
            raise _Fail
    for spec, idx in reads:
        r = _axis_operand(spec, idx, axis)
        if r is None:
            raise _Fail
        f = facts.lin(r)
        if f == form:
            continue
        gap = _plus(form, _scale(f, -1))   # (k + c) - r
        if not (facts.invariant(f, index) and facts.nonneg(r) and set(gap) <= {index, 1}
                and gap.get(index) == 1 and gap.get(1, 0) >= 1):
            raise _Fail
