"""Lower maps to sequential loops: `lower_maps(prog) -> prog`.

Contract: every `Map` becomes a `for` loop over its width that reads the
elements with `index`, writes each iteration's results into zero-initialised
arrays with `index_update` (done in place by the backends) and carries the
accumulators as loop parameters. The semantics are the map's (note
[combinators]): its iterations are independent, so running them in order is
one valid schedule. Passes that know loops but not maps use it: the CPS
step machine of whole-program checkpointing (`passes.cps`). Backends emit
maps themselves (`backends.pysource.maps`), in parallel where they can.
"""
from __future__ import annotations

import dataclasses

from ..ir.builder import Builder
from ..ir.core import Body, Const, Func, Let, Map, Prog
from ..ir.names import NameSupply
from ..ir.traverse import all_names, map_bodies
from ..ir.types import I64

_ROW = (("d",),)


def lower_maps(prog: Prog) -> Prog:
    return prog.with_funcs([lower_maps_func(f) for f in prog.funcs])


def lower_maps_func(f: Func) -> Func:
    if not _has_map(f.body):
        return f
    supply = NameSupply(all_names(f))

    def fn(body: Body) -> Body:
        if not any(isinstance(st.exp, Map) for st in body.stmts):
            return body
        stmts = []
        for st in body.stmts:
            if isinstance(st.exp, Map):
                b = Builder(supply, st.loc)
                _lower(b, st)
                stmts.extend(b.stmts)
            else:
                stmts.append(st)
        return Body(tuple(stmts), body.result)

    return dataclasses.replace(f, body=map_bodies(f.body, fn))


def _has_map(body: Body) -> bool:
    from ..ir.traverse import iter_lets

    return any(isinstance(st.exp, Map) for st in iter_lets(body))


def _lower(b: Builder, st: Let) -> None:
    e: Map = st.exp
    k = e.n_out
    outs0 = [b.zeros(v.type, name=v.name) for v in st.pat[:k]]
    lb = b.child()
    outp = [lb.fresh(v.name, v.type) for v in st.pat[:k]]
    reads = [Let((p,), _index(a, e.index), st.loc) for p, a in zip(e.elems, e.arrays)]
    lb.stmts.extend(reads)
    lb.stmts.extend(e.lam.body.stmts)
    nxt = [lb.emit("index_update", o, r, e.index, spec=_ROW, mode="set", name=o.name)
           for o, r in zip(outp, e.lam.body.result[:k])]
    body = lb.body(nxt + list(e.lam.body.result[k:]))
    params = outp + list(e.acc_params)
    b.for_loop(params, outs0 + list(e.accs), e.index, Const(int(e.width.value), I64), body)
    b.stmts[-1] = Let(tuple(st.pat), b.stmts[-1].exp, st.loc)   # bind the map's own results


def _index(a, i):
    from ..ir.core import Prim

    return Prim("index", (a, i), (("spec", _ROW),))
