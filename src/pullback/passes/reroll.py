"""Reroll repeated statement groups into a loop: `reroll(prog) -> prog` (note [reroll]).

Contract: in every body, a run of at least `RMIN` consecutive groups of `P`
(at most `PMAX`) primitive statements, the groups alike statement by
statement (the same primitive, parameters, operand kinds and types) and with
an array result of at least `MIN_ELEMS` elements in each group, becomes one
`for` loop over the groups when every operand position varies in one of
these ways across the groups:

- the same atom in every group, defined before the run (an invariant);
- integer or float constants (read from a constant table, or computed from
  the loop index where they are affine in it);
- the result of the same statement of the same group (a loop-local value);
- the result of the same statement of an earlier group, or a value defined
  before the run (a recurrence, as `absolutes[parents[i]] @ rel[i]` with
  static parents): such results live in a stacked array, the values from
  before the run in its leading slots ("seeds"), read at a constant or affine
  slot (through a constant table bound before the loop when it is not affine).
  A value only the next group reads (the first reading one value from before
  the run), of which only the last is used after the run, is carried by the
  loop instead of stacked (an unrolled chain of updates of one array).

A run needs at least one recurrence: without one nothing shrinks (each result
would be stacked and read back where used), and the reads inserted after a
run could form the same run again. A stacked statement must cost at least its
result's size (`_writes_all`), so stacking an update is refused.

A statement whose result is used after the run is stacked too, and later
uses read their slot (`index`), or, for a statement that only indexes an
invariant array at constant positions, recompute that index where used. A
later `concatenate(reshape(v_0, (1,) + s), ..., axis=0)` of every slot of a
stack in order (NumPy's `np.stack` of the list the groups built) is the
stack itself. Each group's statements run in the same order on the same
values as before, so results are bitwise unchanged. The loop costs one slot
write per stacked result and one read per recurrence.

The numba backend runs it last in `numba_backend.lower`, after `hoist_maps`
moved direction-independent code out of maps (so a primal chain and its
tangent chain reroll separately, and the primal stays out of the map): a
Python loop over a static structure (GradBench ht's 22 bones, each bone's
transform the product of its parent's and its own) stages one group per
iteration, and the generated function, its forward-mode tangents and numba's
compile time grow with the trip count; rerolled they do not.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..ir.core import Body, Const, ForForm, Let, Loop, Prim, Prog, Var
from ..ir.names import NameSupply
from ..ir.traverse import all_names, dce, free_vars, map_exp, substitute
from ..ir.types import TensorType

RMIN = 4         # groups in a run worth a loop
PMAX = 32        # statements in a group
MIN_ELEMS = 8    # elements of the array result that makes a group worth rerolling
MAX_TRIES = 8    # shorter runs tried when a run's dataflow does not fit

_I64 = TensorType("i64", ())
_D = (("spec", (("d",),)),)


def reroll(prog: Prog) -> Prog:
    out, changed = [], False
    for f in prog.funcs:
        r = _Reroll(NameSupply(all_names(f)))
        body = r.body(f.body)
        if r.changed:
            changed = True
            f = dataclasses.replace(f, body=dce(body))
        out.append(f)
    return prog.with_funcs(out) if changed else prog


def _key(st: Let):
    """What must agree between corresponding statements of two groups, or None
    for a statement that is never part of a group."""
    e = st.exp
    if not (isinstance(e, Prim) and len(st.pat) == 1 and isinstance(st.pat[0].type, TensorType)
            and all(isinstance(a.type, TensorType) for a in e.args)):
        return None
    # an array constant by identity: comparing large constants' bytes at every statement is slow
    kinds = tuple(("c", a.type) if isinstance(a, Const) and not a.type.shape else
                  ("C", id(a)) if isinstance(a, Const) else ("v", a.type) for a in e.args)
    return (e.op, e.params, st.pat[0].type, kinds)


def _writes_all(st: Let) -> bool:
    """Does the statement cost at least its result's size (its primitive row's cost
    rule)? Stacking such a result at most doubles its writes; stacking an update
    (`index_update`, `take_add`: the work of the part written) would copy the
    whole array per group."""
    from ..ir.prims import TABLE

    e, t = st.exp, st.pat[0].type
    row = TABLE.get(e.op) if e.op in TABLE else None
    if row is None or row.cost is None:
        return False
    return int(row.cost([a.type for a in e.args], [t], **dict(e.params))) >= t.size


def _big(key) -> bool:
    t = key[2]
    return isinstance(t, TensorType) and t.size >= MIN_ELEMS


_FLAT = object()   # `fit`: the operands fit, but no recurrence


class _Where:
    """Statement results of a run by (group, position): `get(v)` for a result
    of the run's R groups of P statements from `s`, else None. Reads the
    positions `_keys` keeps per statement list, so trying a run builds no map."""

    __slots__ = ("pos", "s", "P", "end")

    def __init__(self, pos, s, P, R):
        self.pos, self.s, self.P, self.end = pos, s, P, s + R * P

    def get(self, v):
        j = self.pos.get(v)
        return None if j is None or not self.s <= j < self.end else divmod(j - self.s, self.P)


@dataclasses.dataclass
class _Run:
    start: int
    P: int
    R: int
    ops: dict            # (k, a) -> ("same", atom) | ("tab", values) | ("local", k') | ("stack", k', slots)
    seeds: dict          # k -> [outside vars], the leading slots of stack k
    stacked: set         # positions whose results are stacked
    remat: set           # positions recomputed where used after the run
    carried: set         # positions whose result the next group reads: loop-carried


class _Reroll:
    def __init__(self, names: NameSupply):
        self.names, self.changed = names, False

    def fresh(self, hint, t) -> Var:
        return Var(self.names.fresh(hint), t)

    # -- bodies -------------------------------------------------------------

    def body(self, body: Body) -> Body:
        stmts, result = list(body.stmts), tuple(body.result)
        made = set()
        i = 0
        while i < len(stmts):
            run = self.find(stmts, result, i)
            if run is None:
                i += 1
                continue
            new, rest, result = self.apply(stmts, result, run)
            made.add(id(new[-1]))
            stmts = stmts[:i] + new + rest
            i += len(new)
            self.changed = True
        out = [st if id(st) in made else
               Let(st.pat, map_exp(st.exp, lambda a: a, lambda bs, b: (bs, self.body(b))), st.loc)
               for st in stmts]
        return Body(tuple(out), result)

    # -- finding runs -------------------------------------------------------

    def find(self, stmts, result, s):
        keys, stop, bigs, _ = self._keys(stmts)
        if keys[s] is None:
            return None
        n = len(stmts)
        for P in range(1, PMAX + 1):
            if s + RMIN * P > n or stop[s] < s + P:   # too few statements left, or a non-group one
                break
            if keys[s + P] != keys[s] or bigs[s + P] == bigs[s]:
                continue
            grp = keys[s:s + P]
            R = 1
            while s + (R + 1) * P <= n and keys[s + R * P:s + (R + 1) * P] == grp:
                R += 1
            for r in range(R, max(RMIN, R - MAX_TRIES) - 1, -1):
                run = self.fit(stmts, result, s, P, r)
                if run is _FLAT:   # no recurrence in r groups: none in fewer either
                    break
                if run is not None:
                    return run
        return None

    def _keys(self, stmts):
        """Per statement: its key (as an int naming it), the position of the next statement without one,
        and the count of big results before it; and the position of each keyed
        statement's result (memoised per statement list)."""
        cached = getattr(self, "_kc", None)
        if cached is None or cached[0] is not stmts:
            full = [_key(st) for st in stmts]
            ids: dict = {}   # each distinct key as a small int: runs compare keys many times
            keys = [None if k is None else ids.setdefault(k, len(ids)) for k in full]
            stop, nxt = [0] * (len(keys) + 1), len(keys)
            stop[-1] = nxt
            for j in range(len(keys) - 1, -1, -1):
                if keys[j] is None:
                    nxt = j
                stop[j] = nxt
            bigs = [0]
            for k in full:
                bigs.append(bigs[-1] + (k is not None and _big(k)))
            pos = {st.pat[0]: j for j, (st, k) in enumerate(zip(stmts, keys)) if k is not None}
            self._kc = (stmts, (keys, stop, bigs, pos))
        return self._kc[1]

    def fit(self, stmts, result, s, P, R):
        """The run of R groups of P statements from `s`, if its dataflow fits (module
        docstring); `_FLAT` when its operands fit but none is a recurrence. A prefix of
        the groups then has none either (its operands read the same or fewer earlier
        groups), so `find` tries no shorter run."""
        groups = [stmts[s + g * P:s + (g + 1) * P] for g in range(R)]
        where = _Where(self._keys(stmts)[3], s, P, R)
        ops, seeds, refs = {}, {}, set()
        for k in range(P):
            for a in range(len(groups[0][k].exp.args)):
                atoms = [grp[k].exp.args[a] for grp in groups]
                op = self._operand(atoms, where, k, seeds)
                if op is None:
                    return None
                ops[(k, a)] = op
                if op[0] == "stack":
                    refs.add(op[1])
        if all(self._rematerialisable(ops, groups[0][kk], kk) for kk in refs):
            # no recurrence (or only a group boundary that splits the index read of an
            # invariant from its use): nothing shrinks (each result would be stacked and
            # read back where used), and the reads inserted after such a run could form
            # the same run again
            return _FLAT
        later = free_vars(Body(tuple(stmts[s + P * R:]), result))
        used = {k for k in range(P) if any(grp[k].pat[0] in later for grp in groups)}
        # a value read only by the next group (the first reading one value from before
        # the run), of which only the last is used after the run, is carried by the loop
        chain = [("seed", 0)] + [("out", g) for g in range(R - 1)]
        carried = {kk for kk in refs
                   if len(seeds[kk]) == 1 and not any(groups[g][kk].pat[0] in later for g in range(R - 1))
                   and all(op[2] == chain for op in ops.values() if op[0] == "stack" and op[1] == kk)}
        for key, op in ops.items():
            if op[0] == "stack" and op[1] in carried:
                ops[key] = ("carry", op[1])
        remat = {k for k in used - refs if self._rematerialisable(ops, groups[0][k], k)}
        stacked = (refs | used) - remat - carried
        if not all(_writes_all(groups[0][k]) for k in stacked):
            return None
        for k in stacked:
            seeds.setdefault(k, [])
        return _Run(s, P, R, ops, seeds, stacked, remat, carried)

    def _operand(self, atoms, where, k, seeds):
        if all(isinstance(a, Const) for a in atoms):
            if all(a is atoms[0] or a == atoms[0] for a in atoms):
                return ("same", atoms[0])
            if atoms[0].type.shape or atoms[0].type.dtype not in ("i64", "f64"):
                return None
            return ("tab", [a.value for a in atoms])
        if not all(isinstance(a, Var) for a in atoms):
            return None
        locs = [where.get(a) for a in atoms]
        if all(loc is None for loc in locs):
            return ("same", atoms[0]) if all(a == atoms[0] for a in atoms) else None
        inner = {loc[1] for loc in locs if loc is not None}
        if len(inner) != 1:
            return None
        kk = inner.pop()
        if all(loc is not None and loc[0] == g for g, loc in enumerate(locs)):
            return ("local", kk) if kk < k else None
        if any(loc is not None and loc[0] >= g for g, loc in enumerate(locs)):
            return None
        t = atoms[next(g for g, loc in enumerate(locs) if loc is not None)].type
        sd = seeds.setdefault(kk, [])
        slots = []
        for a, loc in zip(atoms, locs):
            if loc is None:
                if a.type != t:
                    return None
                if a not in sd:
                    sd.append(a)
                slots.append(("seed", sd.index(a)))
            else:
                slots.append(("out", loc[0]))
        return ("stack", kk, slots)

    @staticmethod
    def _rematerialisable(ops, st, k) -> bool:
        e = st.exp
        return (e.op == "index" and ops[(k, 0)][0] == "same" and isinstance(ops[(k, 0)][1], Var)
                and all(ops[(k, a)][0] in ("same", "tab") and isinstance(e.args[a], Const)
                        for a in range(1, len(e.args))))

    # -- the loop -----------------------------------------------------------

    def apply(self, stmts, result, run: _Run):
        s, P, R = run.start, run.P, run.R
        groups = [stmts[s + g * P:s + (g + 1) * P] for g in range(R)]
        first = groups[0]
        pre, params, inits, stacks = [], [], [], {}
        for k in sorted(run.stacked):
            t = first[k].pat[0].type
            m = len(run.seeds[k])
            st_t = TensorType(t.dtype, (m + R,) + tuple(t.shape))
            v = self.fresh(f"{first[k].pat[0].name}_stack", st_t)
            zero = Const(False if t.dtype == "bool" else 0, TensorType(t.dtype, ()))
            pre.append(Let((v,), Prim("full", (zero,), (("shape", st_t.shape),)), first[k].loc))
            for j, x in enumerate(run.seeds[k]):
                v2 = self.fresh(v.name, st_t)
                pre.append(Let((v2,), Prim("index_update", (v, x, Const(j, _I64)), _D + (("mode", "set"),)),
                               first[k].loc))
                v = v2
            inits.append(v)
            params.append(self.fresh(f"{first[k].pat[0].name}_stack", st_t))
            stacks[k] = m
        for k in sorted(run.carried):
            inits.append(run.seeds[k][0])
            params.append(self.fresh(first[k].pat[0].name, first[k].pat[0].type))
        order = sorted(run.stacked) + sorted(run.carried)
        i = self.fresh("g", _I64)
        body, local, cur = [], {}, dict(zip(order, params))
        memo = {}
        for k, st in enumerate(first):
            args = []
            for a in range(len(st.exp.args)):
                op = run.ops[(k, a)]
                if op[0] == "same":
                    args.append(op[1])
                elif op[0] == "tab":
                    args.append(self._table(op[1], st.exp.args[a].type, i, body, pre, memo))
                elif op[0] == "local":
                    args.append(local[op[1]])
                elif op[0] == "carry":
                    args.append(params[order.index(op[1])])
                else:
                    kk, slots = op[1], op[2]
                    ix = self._table([j if w == "seed" else stacks[kk] + j for w, j in slots], _I64, i, body, pre,
                                     memo)
                    x = self.fresh(first[kk].pat[0].name, first[kk].pat[0].type)
                    body.append(Let((x,), Prim("index", (cur[kk], ix), _D), st.loc))
                    args.append(x)
            out = self.fresh(st.pat[0].name, st.pat[0].type)
            body.append(Let((out,), Prim(st.exp.op, tuple(args), st.exp.params), st.loc))
            local[k] = out
            if k in run.stacked:
                ix = self._table([stacks[k] + g for g in range(R)], _I64, i, body, pre, memo)
                nxt = self.fresh(cur[k].name, cur[k].type)
                body.append(Let((nxt,), Prim("index_update", (cur[k], out, ix), _D + (("mode", "set"),)), st.loc))
                cur[k] = nxt
        for k in run.carried:
            cur[k] = local[k]
        finals = [self.fresh(f"{first[k].pat[0].name}_all" if k in run.stacked else groups[-1][k].pat[0].name,
                             p.type) for k, p in zip(order, params)]
        loop = Loop(tuple(params), tuple(inits), ForForm(i, Const(R, _I64)),
                    Body(tuple(body), tuple(cur[k] for k in order)))
        new = pre + [Let(tuple(finals), loop, first[0].loc)]
        final = dict(zip(order, finals))
        reads = {groups[-1][k].pat[0]: final[k] for k in run.carried}   # var -> its value after the loop
        for k in run.stacked:
            m = stacks[k]
            for j, x in enumerate(run.seeds[k]):
                reads.setdefault(x, Prim("index", (final[k], Const(j, _I64)), _D))
            for g, grp in enumerate(groups):
                reads[grp[k].pat[0]] = Prim("index", (final[k], Const(m + g, _I64)), _D)
        for k in run.remat:
            for grp in groups:
                reads[grp[k].pat[0]] = grp[k].exp
        rest, result = self._stacks(stmts[s + P * R:], result, run, groups, final)
        rest, result = self._rewrite(rest, result, reads)
        return new, rest, result

    def _table(self, values, t, i, out, pre, memo):
        """An atom equal to values[i] in the loop: i itself, an affine function of
        it, or a read of a constant table (memoised per loop body; the table is
        bound in `pre`, before the loop)."""
        key = (t.dtype, tuple(values))
        if key in memo:
            return memo[key]
        v0 = values[0]
        d = values[1] - v0 if len(values) > 1 else 0
        affine = all(v == v0 + d * g for g, v in enumerate(values))
        if t.dtype == "i64" and affine:
            x = i
            if d != 1:
                x2 = self.fresh("slot", _I64)
                out.append(Let((x2,), Prim("mul", (x, Const(int(d), _I64)))))
                x = x2
            if v0 != 0:
                x2 = self.fresh("slot", _I64)
                out.append(Let((x2,), Prim("add", (x, Const(int(v0), _I64)))))
                x = x2
        else:
            # the table is bound once before the loop (a constant operand is copied where used)
            n = len(values)
            tab = self.fresh("slots" if t.dtype == "i64" else "consts", TensorType(t.dtype, (n,)))
            pre.append(Let((tab,), Prim("index", (Const(np.asarray(values), tab.type),),
                                        (("spec", (("s", 0, n, 1),)),))))
            x = self.fresh("slot" if t.dtype == "i64" else "c", TensorType(t.dtype, ()))
            out.append(Let((x,), Prim("index", (tab, i), _D)))
        memo[key] = x
        return x

    @staticmethod
    def _stacks(rest, result, run, groups, final):
        """`rest` with each `concatenate` along axis 0 of the one-row reshapes of
        every slot of a stack, in order, replaced by the stack."""
        defs = {st.pat[0]: st.exp for st in rest if len(st.pat) == 1 and isinstance(st.exp, Prim)}
        whole = {}
        for k in run.stacked:
            whole[tuple(run.seeds[k]) + tuple(grp[k].pat[0] for grp in groups)] = final[k]
        subst, out = {}, []
        for st in rest:
            e = st.exp
            if isinstance(e, Prim) and e.op == "concatenate" and e.p.get("axis") == 0 and len(st.pat) == 1:
                pieces = [defs.get(a) if isinstance(a, Var) else None for a in e.args]
                if all(p is not None and p.op == "reshape" and isinstance(p.args[0], Var)
                       and tuple(p.p["shape"]) == (1,) + tuple(p.args[0].type.shape) for p in pieces):
                    hit = whole.get(tuple(p.args[0] for p in pieces))
                    if hit is not None and hit.type == st.pat[0].type:
                        subst[st.pat[0]] = hit
                        continue
            out.append(st)
        b = substitute(Body(tuple(out), result), subst)
        return list(b.stmts), b.result

    def _rewrite(self, rest, result, reads):
        """Uses of the run's values after it read them back where used."""

        def rewrite(stmts, res):
            out = []
            for st in stmts:
                pre, memo = [], {}

                def atom(a):
                    if isinstance(a, Var) and a in reads:
                        if isinstance(reads[a], Var):
                            return reads[a]
                        if a not in memo:
                            x = self.fresh(a.name, a.type)
                            pre.append(Let((x,), reads[a], st.loc))
                            memo[a] = x
                        return memo[a]
                    return a

                def scope(bs, b):
                    ss, rr = rewrite(b.stmts, b.result)
                    return bs, Body(tuple(ss), rr)

                e = map_exp(st.exp, atom, scope)
                out += pre + [Let(st.pat, e, st.loc)]
            pre, memo = [], {}
            res2 = []
            for a in res:
                if isinstance(a, Var) and isinstance(reads.get(a), Var):
                    a = reads[a]
                elif isinstance(a, Var) and a in reads:
                    if a not in memo:
                        x = self.fresh(a.name, a.type)
                        pre.append(Let((x,), reads[a]))
                        memo[a] = x
                    a = memo[a]
                res2.append(a)
            return out + pre, tuple(res2)

        return rewrite(rest, result)

