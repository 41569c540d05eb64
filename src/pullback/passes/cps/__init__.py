"""CPS with defunctionalised continuations: a whole program as one step machine.

(docstring to be completed)
"""
from __future__ import annotations

from ...ir.core import Prog
from .cfg import build_cfg
from .machine import HALT, emit_machine


def cps_prog(prog: Prog) -> Prog:
    cfg = build_cfg(prog)
    main = emit_machine(prog, cfg)
    from ...ir import typecheck

    out = Prog((main,), prog.entry)
    typecheck.maybe_check(out, "cps")
    return out
