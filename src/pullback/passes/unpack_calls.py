"""Small arrays cross calls as their elements: `unpack_calls(prog) -> prog`
(note [unpack-calls]).

Contract: for a function of the program other than the entry (`entry`, by
default the program's; and the chain of functions the entry only forwards
to, `numba_opt.forward_chain`), without
derivative rules, not named as anyone's rule and with no donated parameters:

- a parameter of small static array type (`scalarize.small_type`, at least
  one element) that `scalarize` reads only element by element (each use a
  static `index` of one element) becomes one scalar parameter per element,
  in row-major order; the body starts by packing them into the array
  (`full` and `index_update`, which `scalarize` then folds away);
- a result of small static array type that the function builds from its
  elements (after `scalarize`: a pack, or a constant) becomes one scalar
  result per element;
- every call passes the argument's elements (static `index` reads, which
  `scalarize` folds where the caller holds the elements) and packs the
  results back into the array the call bound.

Values are unchanged: only where the elements travel changes. The numba
backend runs it just before `scalarize`; a call that passed or returned a
two-element point allocated an array for it at every call (GradBench's
particle: the force's vjp at every Euler step, and its vjp in the reverse
sweep).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..ir.core import Apply, Body, Const, Func, Let, Prim, Prog, Var
from ..ir.names import NameSupply
from ..ir.traverse import all_names, exp_atoms, iter_bodies, iter_lets, map_exp
from ..ir.types import TensorType
from .scalarize import _coords, _Func, pack_elements, read_elements, small_type


def unpack_calls(prog: Prog, entry: str | None = None) -> Prog:
    """`entry`: the function called from outside (default: the program's entry)."""
    plans = _plans(prog, entry or prog.entry)
    if not plans:
        return prog
    out = []
    for f in prog.funcs:
        names = NameSupply(all_names(f))
        body = _calls(f.body, plans, names)
        if f.name in plans:
            f = _unpacked(dataclasses.replace(f, body=body), plans[f.name], names)
        elif body is not f.body:
            f = dataclasses.replace(f, body=body)
        out.append(f)
    return prog.with_funcs(out)


def _plans(prog: Prog, entry: str) -> dict:
    """Function name -> (parameter flags, result flags): which to unpack."""
    from ..backends.numba_opt import forward_chain

    keep = {g.name for g in forward_chain(prog, prog.func(entry))}
    ruled = {g for f in prog.funcs for _, g in f.rules}
    plans = {}
    for f in prog.funcs:
        if f.name in keep or f.name in ruled or f.rules or f.donated:
            continue
        if not any(_small(p.type) for p in f.params) and not any(_small(t) for t in f.ret_types):
            continue
        scal = _Func(f).run()
        params = tuple(_small(p.type) and _read_by_element(scal.body, p) for p in f.params)
        defs = {v: st.exp for st in iter_lets(scal.body) for v in st.pat}
        results = tuple(_small(t) and _packed(a, defs) for t, a in zip(f.ret_types, scal.body.result))
        if any(params) or any(results):
            plans[f.name] = (params, results)
    return plans


def _small(t) -> bool:
    return small_type(t) and t.size >= 1


def _read_by_element(body: Body, p: Var) -> bool:
    """Is every use of `p` in `body` a static `index` of one of its elements?"""
    for st in iter_lets(body):
        e = st.exp
        atoms = exp_atoms(e)
        if p not in atoms:
            continue
        if not (isinstance(e, Prim) and e.op == "index" and e.args[0] == p and p not in e.args[1:]
                and len(e.args) == 1 + len(p.type.shape) and all(isinstance(a, Const) for a in e.args[1:])
                and all(s[0] == "d" for s in e.p["spec"])):
            return False
    return all(p not in b.result for b in iter_bodies(body))


def _packed(a, defs: dict) -> bool:
    """Is the result atom `a` a constant, or built element by element (a `full`
    and static `index_update`s, as `scalarize` packs a value it scalarised)?"""
    if isinstance(a, Const):
        return True
    e = defs.get(a)
    while isinstance(e, Prim) and e.op == "index_update" and all(isinstance(x, Const) for x in e.args[2:]):
        e = defs.get(e.args[0])
    return isinstance(e, Prim) and e.op == "full"


def _unpacked(f: Func, plan, names: NameSupply) -> Func:
    """`f` with the planned parameters and results as elements."""
    pflags, rflags = plan
    head: list = []
    params = _scalar_vars(f.params, pflags, names, head, f.loc, "")
    stmts, result, rets = list(f.body.stmts), [], []
    for a, t, flag in zip(f.body.result, f.ret_types, rflags):
        if not flag:
            result.append(a)
            rets.append(t)
        else:
            result += _elements(a, names, stmts)
            rets += [TensorType(t.dtype, ())] * t.size
    return dataclasses.replace(f, params=tuple(params), ret_types=tuple(rets),
                               body=Body(tuple(head + stmts), tuple(result)))


def _scalar_vars(vs, flags, names: NameSupply, out: list, loc, suffix: str) -> list:
    """`vs` with each flagged array variable replaced by one scalar variable per
    element; appends to `out` the statements that pack those into the array."""
    new = []
    for v, flag in zip(vs, flags):
        if not flag:
            new.append(v)
            continue
        es = [Var(names.fresh(f"{v.name}{suffix}"), TensorType(v.type.dtype, ())) for _ in range(v.type.size)]
        new += es
        pack_elements(v, es, names, out, into=v, loc=loc)
    return new


def _elements(a, names: NameSupply, out: list) -> list:
    """The element atoms of small array atom `a`: a constant's values, or reads appended to `out`."""
    if isinstance(a, Const):
        t = a.type
        v = np.broadcast_to(np.asarray(a.value), t.shape)
        return [Const(v[c].item(), TensorType(t.dtype, ())) for c in _coords(t.shape)]
    return read_elements(a, names, out)


def _calls(body: Body, plans: dict, names: NameSupply) -> Body:
    """`body` with every call of a planned function passing and receiving elements."""
    stmts, changed = [], False
    for st in body.stmts:
        e = st.exp
        if isinstance(e, Apply) and e.func in plans:
            pflags, rflags = plans[e.func]
            args = []
            for a, flag in zip(e.args, pflags):
                args += _elements(a, names, stmts) if flag else [a]
            packs: list = []
            pat = _scalar_vars(st.pat, rflags, names, packs, st.loc, "_e")
            stmts.append(Let(tuple(pat), Apply(e.func, tuple(args)), st.loc))
            stmts += packs
            changed = True
            continue
        subs = []

        def scope(bs, b):
            nb = _calls(b, plans, names)
            subs.append(nb is not b)
            return bs, nb

        new = map_exp(e, lambda a: a, scope)
        if any(subs):
            changed = True
            stmts.append(Let(st.pat, new, st.loc))
        else:
            stmts.append(st)
    return Body(tuple(stmts), body.result) if changed else body
