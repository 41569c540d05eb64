"""Activity analysis (Tapenade): which variables vary with the inputs.

Contract: `mark_body(body, varied)` adds to the set `varied` every variable
bound in `body` (nested bodies included) whose value depends on a variable
already in `varied`. Only differentiable values (float tensors, float stores)
are marked. It is idempotent, so passes may call it on re-executed copies.
A statement none of whose inputs vary gets no derivative code.
"""
from __future__ import annotations

from ..ir.core import Apply, If, Loop, Map, Prim, Var
from ._common import differentiable


def _any_varied(atoms, varied) -> bool:
    return any(isinstance(a, Var) and a in varied for a in atoms)


def mark_body(body, varied: set) -> None:
    for st in body.stmts:
        mark_stmt(st, varied)


def mark_stmt(st, varied: set) -> None:
    e = st.exp
    if isinstance(e, (Prim, Apply)):
        if _any_varied(e.args, varied):
            varied.update(v for v in st.pat if differentiable(v.type))
    elif isinstance(e, If):
        mark_body(e.then, varied)
        mark_body(e.else_, varied)
        for v, a, c in zip(st.pat, e.then.result, e.else_.result):
            if differentiable(v.type) and _any_varied((a, c), varied):
                varied.add(v)
    elif isinstance(e, Loop):
        for p, a in zip(e.params, e.init):
            if differentiable(p.type) and _any_varied((a,), varied):
                varied.add(p)
        while True:
            mark_body(e.body, varied)
            grew = False
            for p, r in zip(e.params, e.body.result):
                if differentiable(p.type) and p not in varied and _any_varied((r,), varied):
                    varied.add(p)
                    grew = True
            if not grew:
                break
        for v, p in zip(st.pat, e.params):
            if p in varied:
                varied.add(v)
    elif isinstance(e, Map):
        for p, a in zip(e.elems + e.acc_params, tuple(e.arrays) + tuple(e.accs)):
            if differentiable(p.type) and _any_varied((a,), varied):
                varied.add(p)
        k = e.n_out
        while True:
            mark_body(e.lam.body, varied)
            grew = False
            for p, r in zip(e.acc_params, e.lam.body.result[k:]):
                if differentiable(p.type) and p not in varied and _any_varied((r,), varied):
                    varied.add(p)
                    grew = True
            if not grew:
                break
        for v, r in zip(st.pat, e.lam.body.result):
            if differentiable(v.type) and _any_varied((r,), varied):
                varied.add(v)
    else:
        raise TypeError(type(e).__name__)
