"""Sequencing: the forward sweep and the return sweep of a body.

Contract: `fwd_body(ctx, b, body)` emits the primal statements of `body` into
`b` (loops additionally save what their return sweep needs) and returns the
tapes (per loop statement) that `rev_body` consumes. `rev_body(ctx, b, body,
adj, tapes)` emits adjoint statements in reverse order, reading and updating
the adjoint environment `adj`.
"""
from __future__ import annotations

import dataclasses

from ...ir.core import Apply, Body, If, Let, Loop, Map, Prim


def fwd_body(ctx, b, body, lazy: bool = False) -> dict:
    """With `lazy` (a body re-executed by a return sweep), a loop with independent
    iterations whose results nothing after it reads is not run forward: its return
    sweep starts from the state before it (note [independent-loops])."""
    from . import independent, loop

    tapes = {}
    later = _read_after(body) if lazy else None
    for i, st in enumerate(body.stmts):
        if isinstance(st.exp, Loop):
            tape = None
            if lazy and not (set(st.pat) & later[i]):
                tape = independent.lazy_tape(ctx, b, st)
            tapes[id(st)] = tape if tape is not None else loop.fwd(ctx, b, st)
        else:
            b.stmts.append(st)
    return tapes


def _read_after(body) -> list:
    """For each statement, the variables the statements after it read."""
    from ...ir.traverse import free_vars

    out, seen = [], set()
    for st in reversed(body.stmts):
        out.append(set(seen))
        seen |= free_vars(st)
    return out[::-1]


def rev_body(ctx, b, body, adj, tapes) -> None:
    from . import call, if_, loop, map_, prim

    for st in reversed(body.stmts):
        b.loc = dataclasses.replace(st.loc, role="adjoint") if st.loc is not None else None
        e = st.exp
        if isinstance(e, Prim):
            prim.rev(ctx, b, st, adj)
        elif isinstance(e, Apply):
            call.rev(ctx, b, st, adj)
        elif isinstance(e, If):
            if_.rev(ctx, b, st, adj)
        elif isinstance(e, Loop):
            loop.rev(ctx, b, st, adj, tapes[id(st)])
        elif isinstance(e, Map):
            map_.rev(ctx, b, st, adj)
        else:
            raise TypeError(type(e).__name__)


def recomputed(body: Body) -> Body:
    """Mark a re-executed copy of a forward sweep, so the readable source says
    `# recompute of file:line` above it."""
    return Body(tuple(Let(st.pat, st.exp, dataclasses.replace(st.loc, role="recompute") if st.loc else None)
                      for st in body.stmts), body.result)
