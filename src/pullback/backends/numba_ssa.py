"""Variables defined once held as LLVM values, not stack slots, while pullback's
modules compile (note [compile-time], "Values, not slots").

numba lowers every variable of a function to a stack slot (an ``alloca``, a
store at each definition and a load at each use) unless it is defined once
and used only in its defining block (`Lower._find_singly_assigned_variable`);
LLVM's SROA then promotes the slots to SSA values, at a cost that grows with
slots times blocks: 0.41 s of ht's Jacobian's function passes (1280 slots,
1721 blocks), a third of its LLVM optimisation. Generated code defines most
variables once (pullback's IR is in SSA form; numba's own SSA pass renames
what Python rebinds), and uses many of them in later blocks: values computed
before a loop and read inside it.

Contract:
- `install()` / `uninstall()`: called by `numba_opt.numba_opt` on entering and
  leaving its outermost context, under numba's global compiler lock. While
  installed, `Lower._find_singly_assigned_variable` also counts as singly
  assigned (an LLVM value used directly at every use and deletion) a variable
  of a function that is not a generator and has no ``try`` block, when it is
  not one numba must keep in a slot (`must_use_alloca`), it is the target of
  exactly one assignment in the function, it is deleted at most once (numba
  deletes some variables twice on one path, at a join after a branch that
  deleted them: a slot is null by then, a value would be freed twice), it is
  not read in its defining block before that assignment, and every block that reads or deletes it is
  dominated by the defining block and comes after it in numba's lowering
  order (block labels, ascending): so the definition is lowered, and its LLVM
  block dominates, before every use. The LLVM module verifier rejects a
  value that does not dominate a use, so a mistake here is a compile error,
  never a wrong result. numba's lowering is otherwise unchanged: values,
  reference counts and deletions are the same.
- `STATS`: functions and variables the rule added, for tests.
"""
from __future__ import annotations

from .numba_typing import method_patch

STATS = {"functions": 0, "variables": 0}


def _has_try(blocks) -> bool:
    from numba.core import ir
    from numba.core.unsafe import eh

    for block in blocks.values():
        for stmt in block.body:
            if isinstance(stmt, (ir.TryRaise, ir.StaticTryRaise, ir.DynamicTryRaise)):
                return True
            if (isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Global)
                    and any(stmt.value.value is f for f in (eh.exception_check, eh.mark_try_block))):
                return True
    return False


def _values(lower) -> set:
    """The variables of `lower`'s function that the extended rule adds (module docstring)."""
    from numba.core import ir
    from numba.core.analysis import compute_cfg_from_blocks, compute_use_defs, must_use_alloca

    blocks = lower.func_ir.blocks
    if lower.func_ir.func_id.is_generator or lower._disable_sroa_like_opt or _has_try(blocks):
        return set()
    alloca_vars = must_use_alloca(blocks)
    use_defs = compute_use_defs(blocks)
    assigned: dict = {}   # name -> [assignments, defining block label]
    used: dict = {}       # name -> labels of the blocks that read or delete it
    dels: dict = {}       # name -> its deletions
    for label, block in blocks.items():
        for stmt in block.body:
            if isinstance(stmt, ir.Assign):
                a = assigned.setdefault(stmt.target.name, [0, label])
                a[0] += 1
                a[1] = label
                names = [v.name for v in stmt.value.list_vars()] if hasattr(stmt.value, "list_vars") else []
            elif isinstance(stmt, ir.Del):
                names = [stmt.value]
                dels[stmt.value] = dels.get(stmt.value, 0) + 1
            else:
                names = [v.name for v in stmt.list_vars()]
            for n in names:
                used.setdefault(n, set()).add(label)
    doms = None
    out = set()
    for name, (count, d) in assigned.items():
        if count != 1 or dels.get(name, 0) > 1 or name in alloca_vars or name in use_defs.usemap[d]:
            continue   # deleted twice: numba may delete it again on a path that deleted it (a null slot)
        users = used.get(name, ())
        if all(u == d for u in users):
            continue   # numba's own rule covers it
        if doms is None:
            doms = compute_cfg_from_blocks(blocks).dominators()
        if all(u >= d and d in doms[u] for u in users):
            out.add(name)
    return out


def _extended(orig):
    def find(self):
        orig(self)
        extra = _values(self) - self._singly_assigned_vars
        if extra:
            self._singly_assigned_vars |= extra
            STATS["functions"] += 1
            STATS["variables"] += len(extra)

    find.__wrapped__ = orig
    return find


# the extended rule, and numba's own again (module docstring)
install, uninstall = method_patch("numba.core.lowering", "Lower", "_find_singly_assigned_variable", _extended)
