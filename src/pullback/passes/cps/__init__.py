"""CPS with defunctionalised continuations: a whole program as one step machine.

(docstring to be completed)
"""
from __future__ import annotations

from ...ir.core import Prog
from ...ir.types import StoreType
from .cfg import build_cfg
from .spill import with_lengths
from .machine import HALT, emit_machine


def cps_prog(prog: Prog) -> Prog:
    cfg = build_cfg(prog)
    lengths = None
    if any(isinstance(v.type, StoreType) for blk in cfg.blocks for v in blk.restore):
        prog, lengths = with_lengths(prog)
        cfg = build_cfg(prog)
    main = emit_machine(prog, cfg, lengths)
    from ...ir import typecheck

    out = Prog((main,), prog.entry)
    typecheck.maybe_check(out, "cps")
    return out
