"""Stack slots initialised where numba creates them, without the entry block's zero
store, while pullback's modules compile (note [compile-time], "Slots stored once").

numba allocates every stack slot in the function's entry block
(`cgutils.alloca_once`) and always stores zero into it there, even where it
then initialises the slot at once where it creates it: a struct it builds
(`alloca_once(..., zfill=True)`: arrays, tuples, helpers' structs) or a value
it keeps (`alloca_once_value`). Each such slot is then stored in two blocks,
and LLVM's SROA promotes a slot stored in two blocks by the general algorithm,
whose cost grows with the blocks the entry block dominates, that is all of
them: about 0.3 s of SROA in ht's Jacobian's function passes, for about 900
such slots in a function of a few thousand blocks. Stored in one block, a slot
takes SROA's cheap paths.

Contract:
- `install()` / `uninstall()`: called by `numba_opt.numba_opt` on entering and
  leaving its outermost context, under numba's global compiler lock. While
  installed, `cgutils.alloca_once` with ``zfill=True`` and no ``size``, and
  `cgutils.alloca_once_value`, make the same slot and the same stores where
  they are called, without the zero store in the entry block, and record the
  slot with its first store (the "creating store").
- `CPUCodeLibrary.add_ir_module` (the end of lowering a module, before LLVM
  sees it) then checks each recorded slot of the module's functions: every
  instruction that uses the slot must come after the creating store in its
  block or lie in a block that the creating store's block dominates (a phi
  uses it at the end of the incoming block), and the slot must not be stored
  into memory or converted to an integer. Then every path to a use passes
  the creating store, so every load reads what numba's code reads. A slot
  that fails gets its entry-block zero store back, so numba's semantics hold
  for every slot: the rule changes only which stores LLVM has to remove.
- `STATS`: slots recorded, and slots that got their zero store back, for tests.
"""
from __future__ import annotations

from .numba_typing import method_patch, unwrap_method, wrap_method

STATS = {"recorded": 0, "restored": 0}
_RECORDS: list = []   # (slot, creating store, slot type), in creation order


def _alloca_once(orig):
    def alloca_once(builder, ty, size=None, name="", zfill=False):
        if size is not None or not zfill:
            return orig(builder, ty, size=size, name=name, zfill=zfill)
        return _slot(builder, ty, name, None)

    alloca_once.__wrapped__ = orig
    return alloca_once


def _alloca_once_value(orig):
    def alloca_once_value(builder, value, name="", zfill=False):
        # numba's own passes no name to the slot: the same here
        return _slot(builder, value.type, "", value, zfill)

    alloca_once_value.__wrapped__ = orig
    return alloca_once_value


def _slot(builder, ty, name, value, zfill=True):
    """A slot of type `ty` in the entry block, stored here: zero where `zfill`, then `value`."""
    from numba.core import debuginfo

    with debuginfo.suspend_emission(builder):
        with builder.goto_entry_block():
            ptr = builder.alloca(ty, name=name)
        first = builder.store(ty(None), ptr) if zfill else None
    stored = builder.store(value, ptr) if value is not None else None
    _RECORDS.append((ptr, first if first is not None else stored, ty))
    STATS["recorded"] += 1
    return ptr


def _checked(orig):
    def add_ir_module(self, ir_module):
        _settle(ir_module)
        return orig(self, ir_module)

    add_ir_module.__wrapped__ = orig
    return add_ir_module


def _settle(module) -> None:
    """Give back the entry-block zero store to each recorded slot of `module` that the
    rule does not cover (module docstring); forget the module's records."""
    mine, rest = [], []
    for rec in _RECORDS:
        (mine if rec[0].parent.parent.module is module else rest).append(rec)
    _RECORDS[:] = rest
    by_fn: dict = {}
    for rec in mine:
        by_fn.setdefault(rec[0].parent.parent, []).append(rec)
    for fn, recs in by_fn.items():
        bad = _uncovered(fn, recs)
        for ptr, _store, ty in recs:
            if id(ptr) in bad:
                _restore(ptr, ty)


def _restore(ptr, ty) -> None:
    from llvmlite import ir

    b = ir.IRBuilder(ptr.parent)
    b.position_after(ptr)
    b.store(ty(None), ptr)
    STATS["restored"] += 1


def _successors(term):
    from llvmlite import ir

    out = [op for op in getattr(term, "operands", ()) if isinstance(op, ir.Block)]
    out += getattr(term, "destinations", [])
    if isinstance(term, ir.SwitchInstr):
        out += [term.default] + [blk for _v, blk in term.cases]
    for attr in ("normal_to", "unwind_to"):
        if getattr(term, attr, None) is not None:
            out.append(getattr(term, attr))
    return out


def _dominance(fn):
    """`dominates(a, b)` for blocks of `fn` (True for a block no path reaches); a block
    of `fn` that is unreachable from the entry is dominated by every block."""
    blocks = fn.blocks
    succ = {id(b): _successors(b.terminator) if b.terminator is not None else [] for b in blocks}
    order, seen, stack = [], {id(blocks[0])}, [(blocks[0], iter(succ[id(blocks[0])]))]
    while stack:   # postorder by an explicit stack: functions of thousands of blocks
        blk, it = stack[-1]
        nxt = next(it, None)
        if nxt is None:
            order.append(blk)
            stack.pop()
        elif id(nxt) not in seen:
            seen.add(id(nxt))
            stack.append((nxt, iter(succ[id(nxt)])))
    order.reverse()
    rpo = {id(b): i for i, b in enumerate(order)}
    preds: dict = {id(b): [] for b in order}
    for b in order:
        for s in succ[id(b)]:
            preds[id(s)].append(rpo[id(b)])
    idom = [None] * len(order)
    idom[0] = 0
    changed = True
    while changed:   # Cooper, Harvey and Kennedy's iteration over the reverse postorder
        changed = False
        for i in range(1, len(order)):
            new = None
            for p in preds[id(order[i])]:
                if idom[p] is None:
                    continue
                if new is None:
                    new = p
                    continue
                a, b = p, new
                while a != b:
                    while a > b:
                        a = idom[a]
                    while b > a:
                        b = idom[b]
                new = a
            if idom[i] != new:
                idom[i] = new
                changed = True
    kids: list = [[] for _ in order]
    for i in range(1, len(order)):
        kids[idom[i]].append(i)
    enter, leave, clock, walk = [0] * len(order), [0] * len(order), 0, [(0, False)]
    while walk:   # pre/post numbers of the dominator tree: a dominates b iff a's interval holds b's
        i, done = walk.pop()
        if done:
            leave[i] = clock
        else:
            enter[i] = clock
            walk.append((i, True))
            walk.extend((k, False) for k in kids[i])
        clock += 1

    def dominates(a, b) -> bool:
        ia, ib = rpo.get(id(a)), rpo.get(id(b))
        if ib is None:
            return True
        if ia is None:
            return False
        return enter[ia] <= enter[ib] and leave[ib] <= leave[ia]

    return dominates


def _uncovered(fn, recs) -> set:
    """ids of the slots among `recs` that the rule does not cover in `fn` (module docstring)."""
    from llvmlite import ir

    slots = {id(ptr): store for ptr, store, _ty in recs}
    dominates = _dominance(fn)
    order: dict = {}   # id(block) -> {id(instruction): index}, for blocks holding a creating store
    bad = set()

    def check(slot_id, blk, i):
        store = slots[slot_id]
        sblk = store.parent
        if blk is sblk:
            pos = order.get(id(blk))
            if pos is None:
                pos = order[id(blk)] = {id(ins): k for k, ins in enumerate(blk.instructions)}
            ok = pos[id(store)] < i
        else:
            ok = dominates(sblk, blk)
        if not ok:
            bad.add(slot_id)

    for blk in fn.blocks:
        for i, ins in enumerate(blk.instructions):
            if isinstance(ins, ir.PhiInstr):
                for val, inc in ins.incomings:
                    if id(val) in slots:
                        check(id(val), inc, len(inc.instructions))
                continue
            for k, op in enumerate(ins.operands):
                if id(op) not in slots or ins is slots[id(op)]:
                    continue
                if (k == 0 and isinstance(ins, ir.StoreInstr)) or ins.opname == "ptrtoint":
                    bad.add(id(op))   # the slot's address escapes into memory or an integer
                else:
                    check(id(op), blk, i)
    return bad


def install() -> None:
    """The rule on (call with numba's global compiler lock held)."""
    from numba.core import cgutils

    wrap_method(cgutils, "alloca_once", _alloca_once)
    wrap_method(cgutils, "alloca_once_value", _alloca_once_value)
    _install_check()


def uninstall() -> None:
    """numba's own slots again; records of modules never added are dropped."""
    from numba.core import cgutils

    unwrap_method(cgutils, "alloca_once")
    unwrap_method(cgutils, "alloca_once_value")
    _uninstall_check()
    _RECORDS.clear()


_install_check, _uninstall_check = method_patch("numba.core.codegen", "CPUCodeLibrary", "add_ir_module", _checked)
