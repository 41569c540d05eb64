"""Ownership analysis: which functional updates may be done in place.

Contract: `_Ownership(func).inplace` holds `id(Let)` of every `index_update` /
`take_add` statement whose input array the emitted code may update in place:
the array was made fresh by this function (never a parameter, constant or
view), nothing aliases it, and it is dead after the update. `loop_owned` and
`loop_copy` say which loop-carried arrays a loop owns (copying the initial
value once at entry where needed); `copied` are slices copied when read, and
`push_only` those whose one use is a push. `_aliasing_args(prim)` lists the
arguments a primitive's result may share memory with.

Donated parameters (`Func.donated`, note [split-calls]) are owned by the
function. At a call, an argument for a donated parameter is passed as is when
the caller owns it and this call is its last use; otherwise `call_copy` says to
pass a copy. The result the callee returns for it is owned by the caller.
"""
from __future__ import annotations

from collections import Counter

from ...ir.core import Apply, Body, ForForm, Func, If, Let, Loop, Map, Prim, Var
from .tables import _STORE_OPS, _VIEW_OPS, KNOWN_PRIMS, _ndim


def _aliasing_args(e: Prim) -> list:
    """Arguments whose array the result may share (views, store contents)."""
    op = e.op
    if op in _VIEW_OPS:
        return [e.args[0]]
    if op == "index":
        spec = e.p["spec"]
        x = e.args[0]
        n_out = _ndim(x) - sum(1 for s in spec if s[0] == "d")
        return [x] if spec and n_out > 0 else []
    if op == "take":
        return [e.args[0]] if _ndim(e.args[1]) == 0 and _ndim(e.args[0]) > 1 else []
    if op == "store_push":
        return [e.args[1]]
    if op not in KNOWN_PRIMS:
        # an elementwise library form (numba's `smul`, special functions) computes a
        # new array; any other unknown primitive may return one of its arguments
        return [] if _elementwise_libcall(op) else list(e.args)
    return []


def _elementwise_libcall(op: str) -> bool:
    from ..libcalls import LIBCALLS

    lc = LIBCALLS.get(op)
    return lc is not None and lc.elementwise


def _fresh_result(e: Prim) -> bool:
    """Does the emitted expression always build a new, writeable array?"""
    if _elementwise_libcall(e.op):   # numba's forms of these build new arrays (libcalls)
        return True
    return e.op in KNOWN_PRIMS and e.op not in _STORE_OPS and not _aliasing_args(e) and e.op not in _VIEW_OPS


# ---------------------------------------------------------------------------
# ownership analysis: which updates may be done in place
# ---------------------------------------------------------------------------


class _Ownership:
    """Decides, for one function, which `index_update`/`take_add` statements
    may update their input array in place (`inplace`, by `id(Let)`)."""

    def __init__(self, f: Func, donated_of: dict | None = None):
        from ...ir.traverse import exp_atoms, exp_scopes, iter_lets, use_counts

        self.donated_of = donated_of or {}   # function name -> its `donated` pairs
        self.call_copy: dict = {}            # id(Let of an Apply) -> positions passed as a copy

        self.count: Counter = Counter()  # aliasing uses, all kinds
        self.base: Counter = Counter()   # aliasing uses other than loop inits / loop-body results
        self.inits: Counter = Counter()  # uses as a loop's initial value (the inner loop owns or copies it)
        # Slices of an array that is updated somewhere in the function, and slices
        # saved in a store (undo logs), are copied when read: copying the slice
        # lets the array itself be updated in place instead of copied whole.
        prims = [st for st in iter_lets(f.body) if isinstance(st.exp, Prim)]
        pushed = {st.exp.args[1] for st in prims if st.exp.op == "store_push"}
        updated = {st.exp.args[0] for st in prims if st.exp.op in ("index_update", "take_add")}
        self.copied: set = {st.pat[0] for st in prims
                            if st.exp.op == "index" and _aliasing_args(st.exp)
                            and (st.pat[0] in pushed or st.exp.args[0] in updated)}
        # those whose one use is a push: a store that copies on push (numba's buffers)
        # needs no copy of its own (`push_only`)
        uses = use_counts(f.body)
        self.push_only: set = {v for v in self.copied if v in pushed and uses[v] == 1}
        for st in iter_lets(f.body):
            e = st.exp
            if isinstance(e, Prim):
                if e.op == "index" and st.pat[0] in self.copied:
                    continue
                for a in _aliasing_args(e):
                    self._use(a, True)
            elif isinstance(e, Apply):
                for a in e.args:
                    self._use(a, True)
                # an argument for a donated parameter hands its array on, as a loop's
                # initial value does: a loop parameter passed there can stay loop-owned
                for i, _ in self.donated_of.get(e.func, ()):
                    if isinstance(e.args[i], Var):
                        self.inits[e.args[i]] += 1
            elif isinstance(e, If):
                for b in (e.then, e.else_):
                    for a in b.result:
                        self._use(a, True)
            elif isinstance(e, Loop):
                for a in e.init:
                    self._use(a, False)
                    if isinstance(a, Var):
                        self.inits[a] += 1
                for a in e.body.result:
                    self._use(a, False)
            elif isinstance(e, Map):
                # elements are views of the mapped arrays; stacked results are copied
                # into the output; accumulators are carried like loop parameters
                for a in e.arrays:
                    self._use(a, True)
                for a in e.accs:
                    self._use(a, False)
                    if isinstance(a, Var):
                        self.inits[a] += 1
                for a in e.lam.body.result[e.n_out:]:
                    self._use(a, False)
            else:
                for a in exp_atoms(e):
                    self._use(a, True)
                for _, b in exp_scopes(e):
                    for a in b.result:
                        self._use(a, True)
        mine = tuple(f.params[i] for i, _ in f.donated if _ndim(f.params[i]) > 0)
        self.owned: set = set(mine)
        self.inplace: set = set()
        self.inplace_add: dict = {}  # id(Let of an array `add`) -> the operand it accumulates into
        self.loop_owned: dict = {}  # id(Let of a Loop) -> set of owned param indices
        self.loop_copy: dict = {}   # id(Let of a Loop) -> owned params whose init is copied at entry
        self.body(f.body, mine)

    def _transient_views(self, body: Body) -> Counter:
        """Per array, the views of it that `body` makes at its top level and that die
        in the iteration: nothing aliases them (they are only read) and the body does
        not yield them. They do not keep the array from being carried in place: the
        next iteration updates it after they are dead (note [ownership])."""
        out: Counter = Counter()
        results = {a for a in body.result if isinstance(a, Var)}
        for st in body.stmts:
            e = st.exp
            if (isinstance(e, Prim) and e.op == "index" and st.pat[0] not in self.copied and _aliasing_args(e)
                    and isinstance(e.args[0], Var) and self.count[st.pat[0]] == 0 and st.pat[0] not in results):
                out[e.args[0]] += 1
        return out

    def _local(self, body: Body) -> Counter:
        """Aliasing uses (as counted in `count`) inside `body`, nested bodies included
        (memoised per body: `body` and `if_` ask for the same branches)."""
        memo = self.__dict__.setdefault("_local_memo", {})
        hit = memo.get(id(body))
        if hit is None:
            hit = memo[id(body)] = (body, self._count_local(body))
        return hit[1]

    def _count_local(self, body: Body) -> Counter:
        from ...ir.traverse import exp_atoms, exp_scopes, iter_lets

        out: Counter = Counter()
        for st in iter_lets(body):
            e = st.exp
            if isinstance(e, Prim):
                if not (e.op == "index" and st.pat[0] in self.copied):
                    out.update(a for a in _aliasing_args(e) if isinstance(a, Var))
            elif isinstance(e, Apply):
                out.update(a for a in e.args if isinstance(a, Var))
            elif isinstance(e, Loop):
                out.update(a for a in tuple(e.init) + tuple(e.body.result) if isinstance(a, Var))
            elif isinstance(e, Map):
                out.update(a for a in tuple(e.arrays) + tuple(e.accs) + tuple(e.lam.body.result[e.n_out:])
                           if isinstance(a, Var))
            else:
                if not isinstance(e, If):
                    out.update(a for a in exp_atoms(e) if isinstance(a, Var))
                for _, b in exp_scopes(e):
                    out.update(a for a in b.result if isinstance(a, Var))
        return out

    def _use(self, a, base: bool):
        if isinstance(a, Var):
            self.count[a] += 1
            if base:
                self.base[a] += 1

    def body(self, body: Body, binders) -> None:
        from ...ir.traverse import exp_scopes, free_vars

        stmts = body.stmts
        last: dict = {}
        for k, st in enumerate(stmts):
            for v in free_vars(st.exp):
                last[v] = k
        for a in body.result:
            if isinstance(a, Var):
                last[a] = len(stmts)
        here = set(binders)
        # aliasing uses inside this body: an array bound here (or owned on entry)
        # has all its uses in it, so these decide (the other branch of an `if` never runs with it)
        local = self._local(body)
        made_here = {v for s in stmts for v in s.pat}
        for k, st in enumerate(stmts):
            e = st.exp
            if isinstance(e, Prim):
                if e.op in ("index_update", "take_add") and e.args and isinstance(e.args[0], Var):
                    x = e.args[0]
                    if (x in here and x in self.owned and local[x] == 0 and last.get(x) == k
                            and x not in e.args[1:] and _ndim(x) > 0):
                        self.inplace.add(id(st))
                if e.op == "add" and _ndim(st.pat[0]) > 0:
                    # `acc + g` with acc owned and dead: `acc += g`; prefer an accumulator
                    # that came in (a donated adjoint) over a temporary made here, which
                    # numba's loop fusion may never materialise
                    for x in sorted(e.args, key=lambda a: a in made_here):
                        if (isinstance(x, Var) and x.type == st.pat[0].type and x in here and x in self.owned
                                and local[x] == 0 and last.get(x) == k and e.args.count(x) == 1):
                            self.inplace_add[id(st)] = x
                            break
                if _fresh_result(e) or (e.op == "index" and st.pat and st.pat[0] in self.copied):
                    for v in st.pat:
                        if _ndim(v) > 0:
                            self.owned.add(v)
            elif isinstance(e, Loop):
                self.loop(st, k, last, here)
            elif isinstance(e, Map):
                self.loop(st, k, last, here, as_loop(e))
            elif isinstance(e, If):
                self.if_(st, k, last, here)
            elif isinstance(e, Apply):
                self.call(st, k, last, here, local)
            else:
                for bs, b in exp_scopes(e):
                    self.body(b, bs)
            here.update(st.pat)

    def call(self, st: Let, k: int, last: dict, here: set, local: Counter) -> None:
        """Arguments for donated parameters: passed as is only when owned here and
        dead after the call (else copied); the results returned for them are owned."""
        e: Apply = st.exp
        pairs = self.donated_of.get(e.func, ())
        for i, j in pairs:
            x = e.args[i]
            if not (isinstance(x, Var) and x in here and x in self.owned and local[x] == 1
                    and last.get(x) == k and sum(1 for a in e.args if a == x) == 1):
                self.call_copy.setdefault(id(st), set()).add(i)
            if _ndim(st.pat[j]) > 0:
                self.owned.add(st.pat[j])

    def if_(self, st: Let, k: int, last: dict, here: set) -> None:
        """Arrays owned here that die at this `if` are owned inside its branches,
        and an `if` result is owned when each branch returns an array it owns
        (bound in the branch, or one of those dying arrays), all distinct."""
        e: If = st.exp
        # all of v's aliasing uses are in this `if`: its branches and what they yield
        inner = self._local(e.then) + self._local(e.else_)
        inner.update(a for br in (e.then, e.else_) for a in br.result if isinstance(a, Var))
        dying = tuple(v for v in here if v in self.owned and self.count[v] == inner[v] and last.get(v) == k
                      and _ndim(v) > 0)
        ok = [True] * len(st.pat)
        for b in (e.then, e.else_):
            self.body(b, dying)
            inner = {v for s in b.stmts for v in s.pat} | set(dying)
            seen = set()
            for j, r in enumerate(b.result):
                if not (isinstance(r, Var) and r in inner and r in self.owned and r not in seen):
                    ok[j] = False
                if isinstance(r, Var):
                    seen.add(r)
        for j, v in enumerate(st.pat):
            if ok[j] and _ndim(v) > 0:
                self.owned.add(v)

    def loop(self, st: Let, k: int, last: dict, here: set, e: Loop | None = None) -> None:
        """`e`: the loop `st` is analysed as (a map's accumulators, `as_loop`)."""
        from ...ir.traverse import free_vars

        e = e or st.exp
        body_free = free_vars(e.body)
        res = e.body.result
        bound_in_body = {v for s in e.body.stmts for v in s.pat}
        cand = set()
        copy = set()   # params whose initial array is copied once at loop entry to own it
        passes = Counter(a for st in e.body.stmts if isinstance(st.exp, If)
                         for br in (st.exp.then, st.exp.else_) for a in br.result
                         if isinstance(a, Var) and a in e.params)
        transient = self._transient_views(e.body)
        for j, (p, x0) in enumerate(zip(e.params, e.init)):
            if _ndim(p) == 0 or j >= len(res):
                continue
            r = res[j]
            if not (isinstance(x0, Var) and x0 in here and x0 in self.owned and self.count[x0] == 1
                    and last.get(x0) == k and x0 not in body_free):
                if r == p:
                    continue
                copy.add(j)
            # a use as an inner loop's initial value is safe: that loop copies it
            # at entry unless it is the last use (then ownership passes on); so is
            # a branch of an `if` in the body yielding it unchanged (the `if` then
            # owns it, or the check below drops the candidate)
            if self.count[p] - self.inits[p] - passes[p] > (1 if r == p else 0):
                continue
            if r != p and not (isinstance(r, Var) and r in bound_in_body
                               and self.count[r] - transient[r] == 1):
                continue
            cand.add(j)
        binders = tuple(e.params) + ((e.form.index,) if isinstance(e.form, ForForm) else ())
        while True:
            # every decision the body's analysis records is undone with a rejected candidate:
            # an accumulation in place (`inplace_add`) left from a try where a parameter was
            # owned updated its read-only initial array (a broadcast seed) in the next
            snap = (set(self.owned), set(self.inplace), dict(self.inplace_add))
            self.owned.update(e.params[j] for j in cand)
            self.body(e.body, binders)
            bad = {j for j in cand if res[j] != e.params[j] and res[j] not in self.owned}
            if not bad:
                break
            self.owned, self.inplace, self.inplace_add = snap
            cand -= bad
        self.loop_owned[id(st)] = cand
        self.loop_copy[id(st)] = cand & copy
        off = st.exp.n_out if isinstance(st.exp, Map) else 0
        for j in cand:
            self.owned.add(st.pat[off + j])
        if isinstance(st.exp, Map):   # the stacked results are made fresh
            self.owned.update(v for v in st.pat[:off] if _ndim(v) > 0)


def as_loop(e: Map) -> Loop:
    """A map seen as the loop over its accumulators (ownership of in-place updates):
    the index and elements are further binders, the stacked results are copied out."""
    body = e.lam.body
    return Loop(tuple(e.acc_params), tuple(e.accs), ForForm(e.index, e.width),
                Body(body.stmts, tuple(body.result[e.n_out:])))
