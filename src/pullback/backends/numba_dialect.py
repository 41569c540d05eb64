"""The numba dialect of the pysource emitter: the hooks that make `pysource`
print a module numba can compile.

Contract: `NumbaDialect()` is passed as `dialect=` to `pysource.emit_prog`.
Every function is ``@njit(cache=True, error_model="numpy")``; scalars stay
scalars (no 0-d arrays); forms NumPy has and numba lacks (``np.add.at``,
tuple-axis reductions, reshape of non-contiguous arrays, stores) go through
small njit helpers written into the module. Stores of fixed-shape values are
`(buffer, count)` pairs whose buffer doubles when full (note [numba-stores]);
stores of stores and of large arrays are `numba.typed.List`s. Large constant
arrays become hidden trailing parameters (note [numba-constants]). Compiling,
caching and running live in `numba_backend`; the hooks printing stores, loop
helpers and array updates and views are the mixins `numba_stores.StoreHelpers`,
`numba_loop_helpers.LoopHelpers` and `numba_view_hooks.ViewHooks`.

Run-time checks (note [run-time-checks]): with `boundscheck` (default:
`checks.bounds_checks_enabled()`, i.e. unless ``PULLBACK_BOUNDSCHECK=0``)
every read or write at a traced index is preceded by a compare-and-branch
``if i < -n or i >= n: raise IndexError(K, i)``, and an index array by one
pass of the helper `_pb_check_idx`; numba itself checks nothing (an index out
of bounds reads garbage or crashes). Integer ``//`` and ``%`` check their
divisor (numba's ``error_model="numpy"`` gives 0, and float division by zero
stays inf/nan).

Parallel maps (note [numba-parallel]): `NumbaDialect(parallel=...)` takes the
effective setting (`numba_parallel.setting`); `prepare` plans which maps run
in parallel (`numba_parallel.plan`), `parallel_map` answers `pysource.maps`,
and `map_helper` writes a parallel map's chunk function and the statement
launching its chunks on numba's threads (`numba_parfor`; nothing is compiled
with numba's parallel option). Metered modules stay sequential.

Recursion depth (note [numba-recursion-depth]): in a program with a
call-graph cycle (`cycle_edges`: self or mutual recursion), every function
takes the hidden trailing parameter ``_pb_lo`` (last, after the large
constants), and every call along a cycle is preceded by
``if _pb_sp() < _pb_lo: raise RecursionError(K)`` (`numba_stack`), K a check
site of kind "recursion" at the call's line; the entry wrapper passes
`numba_stack.stack_limit()` (see `checks.ModuleArgs`). Programs without
recursion are printed exactly as before.
"""
from __future__ import annotations

import numpy as np

from ..errors import PullbackError
from ..ir.core import Const, Prim
from ..ir.types import StoreType, TensorType
from ..ir.traverse import use_counts
from . import checks, numba_borrow, numba_exprs, numba_fill, numba_parallel, numba_scratch, numba_slots, numba_small_mm
from . import numba_fusion as fusion
from . import pysource as ps
from .libcalls import LIBCALLS
from .libcalls.vecmath import OPS as _VM_OPS
from .numba_loop_helpers import LoopHelpers
from .numba_view_hooks import ViewHooks
from .numba_stores import (_BUFFER_MAX, StoreHelpers, fitting_pushes, pop_copies, reserved_pushes,
                           sized_large_elems, slot_values)

_DECO = '@njit(cache=True, error_model="numpy")'
# store operations run once per saved value: inlined into the caller at numba IR level
# (a call per push cost about 10 ns of reference counting; inlining also compiles faster)
_DECO_INLINE = '@njit(cache=True, error_model="numpy", inline="always")'
_ND = ps._NP_DTYPE
# constant arrays with more elements than this are passed as hidden parameters, not
# written into the module: numba will not cache functions that use global arrays over
# 1 MB, and a long literal makes the module slow to write and import (note [numba-constants])
_BIG_CONST = 4096


STACK_PARAM = "_pb_lo"   # the hidden parameter: the lowest safe stack address (numba_stack)
METER_PARAM = "_pb_meter"  # metered modules (memory_report): int64[2] live and peak store bytes


def cycle_edges(prog) -> set:
    """The calls along a call-graph cycle, as (caller, callee) pairs: the
    callee reaches the caller again (a self-call included)."""
    from ..ir.traverse import call_graph

    graph = call_graph(prog)
    out = set()
    for name, callees in graph.items():
        seen, todo = set(), list(callees)
        while todo:
            g = todo.pop()
            if g not in seen:
                seen.add(g)
                todo.extend(graph.get(g, ()))
        out.update((g, name) for g in seen if name in graph.get(g, ()))
    return out


def _ndim(a) -> int:
    return ps._ndim(a)


_shape_tuple = numba_exprs.shape_tuple
_scalar_cast = numba_exprs.scalar_cast


# concatenations of at least this many pieces are printed as slice copies (`concat_copies`)
CONCAT_COPIES = 3

# a while loop that pushes to stores runs in blocks of this many iterations, its stores
# given room for a block before it (note [numba-stores], "While loops in blocks")
WHILE_BLOCK = 64


class NumbaDialect(StoreHelpers, LoopHelpers, ViewHooks):
    """Hooks for `pysource.emit_prog(..., dialect=...)`: print a numba-compatible module."""

    unsigned_indices = True   # computed indices proved in range print unsigned: note [unsigned-indices]

    def push_copies(self, elem) -> bool:
        """Does a store of `elem` copy what is pushed (an array buffer)? Small
        values go to buffers, and so do large arrays whose stores are all made
        with their final size (`fixed_elems`); other large arrays are kept by
        reference in a typed list (note [numba-stores], "Sized stores of large
        arrays")."""
        return isinstance(elem, TensorType) and (elem.size <= _BUFFER_MAX or elem in self.fixed_elems)

    def __init__(self, boundscheck: bool | None = None, stackcheck: bool = True, metered: bool = False,
                 parallel: bool | None = False, entry: str | None = None):
        # (mutually recursive programs skip numba's disk cache in numba_backend, note
        # [numba-cache-safety]) boundscheck: print index checks (None: unless PULLBACK_BOUNDSCHECK=0)
        # stackcheck: check the stack before recursive calls (False only to measure their cost)
        self.stackcheck = bool(stackcheck)
        self.metered = bool(metered)          # count store bytes into METER_PARAM (memory_report)
        self.recursive: set = set()           # (caller, callee) calls checked for stack depth
        self.boundscheck = checks.bounds_checks_enabled() if boundscheck is None else bool(boundscheck)
        self.deco, self.deco_inline = _DECO, _DECO_INLINE
        # entry: the function Python calls (None: any may be); the others, called only from
        # compiled code, are compiled without numba's Python and C wrappers (`decorator`)
        self.entry, self.wrapped = entry, None
        self.helpers: dict[str, str] = {}     # helper name -> source
        self.few: set = set()                 # helpers inlined where few sites call them (`few_helper`)
        self.sites: dict = {}                 # few helper -> its calls in the functions (`count_sites`)
        self._few_re = None                   # (len(few), the pattern of their calls)
        self.store_types: dict = {}           # element type -> index k of _ST{k}
        self.fixed_elems: set = set()         # large element types stored in buffers (`prepare`)
        self.buffer_stores: dict = {}         # k -> (dims text, dtype text, shape) of a buffer store
        self.big: dict = {}                   # large Const -> its hidden parameter's name
        self.big_values: list = []            # their arrays, in parameter order
        # parallel: the effective setting (numba_parallel.setting); metered builds stay sequential
        # (their byte counter is one shared array)
        self.parallel = False if metered else parallel
        self.par = numba_parallel.Plan()      # the maps that run in parallel (set by `prepare`)
        self.repeated: set = set()            # bodies run more than once per call (`prepare`)
        self.unset: set = set()               # `full`s whose fill nobody sees (`prepare`)
        self.partial: dict = {}               # `full`s read only outside a box (`prepare`)
        self.blas_operands = False            # a matmul printed `_pb_blas` (note [blas-operands])
        self.allocs = False                   # `finish` printed a `numba_alloc` intrinsic
        self.scratch_copies: set = set()      # ids of slice copies made into scratch arrays (`fusion_plan`)
        self.scratch_fills: set = set()       # ids of small fills made into scratch arrays (`fusion_plan`)
        self.borrowed: set = set()            # ids of views printed borrowed (`numba_borrow`, `fusion_plan`)
        self.local_stores: set = set()        # ids of stores given borrowed buffers (`fusion_plan`)
        self.owners: dict = {}                # (function id, local store) -> its owner array's name
        self.owned_by: dict = {}              # (function id, store value) -> the local store it is
        self._rooted: tuple = (None, set())   # (function, its parameter-rooted values)
        self.inline_mms: set = set()          # ids of small matmuls printed as loop nests (`fusion_plan`)
        self.scratch_mms: set = set()         # those of them written into scratch arrays
        self.pop_copies: set = set()          # ids of pops that copy their slot (`fusion_plan`)
        self.fitting: set = set()             # ids of pushes that never grow their buffer (`fusion_plan`)
        self.blocked: dict = {}               # id of a while loop -> [(store param index, kind)] (`fusion_plan`)
        self.slot_cands: dict = {}            # value -> its store: may be computed in its slot (`fusion_plan`)
        self.in_slot: set = set()             # the values printed into their slot (`slot_text`)
        self.slots: dict = {}                 # concatenations written into a later one (`numba_slots`)
        self.placed: dict = {}                # concatenation result -> its pieces written in place
        self._uses: tuple = (None, None)      # (function, its use counts), for `numba_slots.plan`

    # -- hooks called by pysource -------------------------------------------------
    def prepare(self, prog) -> list[str]:
        """Large constant arrays become hidden trailing parameters of every function
        (note [numba-constants]), and so does the stack limit `STACK_PARAM` in a
        recursive program (note [numba-recursion-depth]); returns their names."""
        from ..ir.traverse import exp_atoms, exp_scopes, iter_lets

        def visit(atoms):
            for a in atoms:
                if isinstance(a, Const) and a.type.shape and a.type.size > _BIG_CONST and a not in self.big:
                    self.big[a] = f"_K{len(self.big_values)}"
                    self.big_values.append(np.ascontiguousarray(a.value, dtype=ps._np_dtype(a.type.dtype)))

        for f in prog.funcs:
            visit(f.body.result)
            for st in iter_lets(f.body):
                visit(exp_atoms(st.exp))
                for _, b in exp_scopes(st.exp):
                    visit(b.result)
        self.fixed_elems = sized_large_elems(prog)   # note [numba-stores]
        cycles = cycle_edges(prog)
        if any(f != g for f, g in cycles):
            # numba cannot link `inline="always"` helpers into mutually recursive
            # functions ("aborted due to unresolved symbol"): call them instead
            self.deco_inline = self.deco
        self.recursive = cycles if self.stackcheck else set()
        self.par = numba_parallel.plan(prog, self.parallel, cycles)
        if self.entry is not None and not any(f != g for f, g in cycles):   # `decorator`
            from .numba_opt import forward_chain

            self.wrapped = {g.name for g in forward_chain(prog, prog.func(self.entry))}
        self.repeated = numba_scratch.repeated_bodies(prog, self.par.maps)   # note [short-loops]
        self.unset = numba_fill.unobserved_fills(prog)   # note [unobserved-fills]
        self.partial = numba_fill.partial_fills(prog)    # note [into-zeros]
        return (list(self.big.values()) + ([STACK_PARAM] if self.recursive else [])
                + ([METER_PARAM] if self.metered else []))

    @property
    def stack_param(self) -> bool:
        """Whether the module takes `STACK_PARAM` (last of its hidden parameters)."""
        return bool(self.recursive)

    def finish(self, lines: list[str]) -> list[str]:
        """A function's lines with new arrays printed as `numba_alloc`'s intrinsics
        (note [compile-time], "Allocations in place") and wide calls and tuples as
        numba reads them (`numba_wide`, note [wide-tuples]); counts their calls of few-site
        helpers (`count_sites`). The helpers' sources get the same rewrite in `header`."""
        out = self._rewrite(lines)
        self.count_sites(out)
        return out

    def _rewrite(self, lines: list[str]) -> list[str]:
        """`lines` (texts of lines or of whole helpers) with `numba_alloc`'s and
        `numba_wide`'s text rewrites; notes whether the allocation intrinsics are used."""
        from .numba_alloc import rewrite
        from .numba_wide import widen

        out = [rewrite(t) for t in lines]
        self.allocs = self.allocs or out != lines
        return [widen(t) for t in out]

    def header(self, mod) -> list[str]:
        from .numba_alloc import IMPORT

        helpers = self._rewrite([self.inline_few(n, s) for n, s in self.helpers.items()])
        out = ["from numba import njit", "from numba import types as _nbt", "from numba.typed import List"]
        if self.allocs:
            out.append(IMPORT)
        if self.recursive:
            out.append("from pullback.backends.numba_stack import _pb_sp")
        if self.blas_operands:
            out.append("from pullback.backends.numba_operands import _pb_blas")
        if self.par:
            out.append("from pullback.backends.numba_parfor import _pb_parallel_for")
        out.append("")
        for src in helpers:
            out += [src, ""]
        return out

    def decorator(self, f) -> list[str]:
        """`f`'s decorator: without numba's Python and C wrappers when the entry is
        known and `f` is not it (nor on the way to it): code Python never calls
        (note [compile-time], "Internal functions"). Not in a mutually recursive
        module: numba's calls along the cycle then fail ("unresolved symbol")."""
        if self.wrapped is None or f.name in self.wrapped:
            return [self.deco]
        return [self.internal(self.deco)]

    @staticmethod
    def internal(deco: str) -> str:
        """`deco` (an ``@njit(...)`` line) for a function only compiled code calls."""
        return deco[:-1] + ", no_cpython_wrapper=True, no_cfunc_wrapper=True)"

    def parallel_map(self, fe, st) -> bool:
        """Does the map statement `st` run in parallel (`numba_parallel.plan`)?"""
        return id(st) in self.par.maps

    def parallel_chunks(self, n: int, accs: bool = True) -> int:
        """How many chunks a parallel map of width `n` (with accumulators: each
        chunk has private partial sums) is cut into (`numba_parallel.chunks`)."""
        return numba_parallel.chunks(n, accs)

    def row_store(self, fe, depth: int, name: str, i: str, text: str, shape) -> None:
        """Print `name[i] = text` for an array value `text` of static `shape` (a
        map's row, or a chunk's partial sums: `pysource.maps`) as loops over its
        elements: numba lowers an array assigned to a slice through
        `fancy_setslice`, whose shape-mismatch message compiles numba's
        int-to-str and string formatting (about 2 s of ht's Jacobian; note
        [compile-time], "Row stores")."""
        if not text.isidentifier():   # a constant's copy, or an expression: evaluated once
            row = fe.fresh("row")
            fe.line(depth, f"{row} = {text}")
            text = row
        numba_scratch.element_loops(fe, depth, name, shape, lambda ix: f"{text}[{ix}]", lead=(i,))

    def map_helper(self, params: list[str], body: list[str], n: int, nc: int, failed: str) -> tuple[str, str]:
        """Write the helper of a parallel map of width `n` in `nc` chunks
        (`pysource.maps`), `params` being (lo, hi, chunk, the rest...), all
        names of the caller's, as is `failed`: `_pb_map{k}(*params)` runs the
        lines `body` (one chunk of iterations). Returns its name and the
        statement that runs every chunk on numba's threads, chunk c's status
        (1 if it raised) into failed[c] (`numba_parfor._pb_parallel_for`: no
        function is compiled with numba's `parallel` option; note
        [numba-parallel], "One level")."""
        name = f"_pb_map{sum(h.startswith('_pb_map') for h in self.helpers)}"
        self.helper(name, f"{self.internal(self.deco)}\ndef {name}({', '.join(params)}):\n" + "\n".join(body)
                    + "\n    return 0")
        rest = params[3:]
        launch = f"_pb_parallel_for({name}, {n}, {nc}, {failed}, ({', '.join(rest)}{',' if len(rest) == 1 else ''}))"
        return name, launch

    def const(self, fe, x: Const):
        t = x.type
        if not t.shape:
            lit = ps._scalar_lit(x.value, t.dtype)
            return f"np.float32({lit})" if t.dtype == "f32" else None
        if x in self.big:  # a parameter: writeable, and never updated in place (not owned)
            return self.big[x]
        text = fe.mod.const_array(x)
        # module-level arrays are read-only constants to numba: take a writeable copy
        return text + ".copy()" if text.startswith("_c") else text

    def prim(self, fe, st, depth) -> bool:
        e: Prim = st.exp
        op, args = e.op, e.args
        n0, top0 = len(fe.lines), fe.top_lines
        if op not in ps.KNOWN_PRIMS and op not in LIBCALLS:
            raise PullbackError(f"numba backend: primitive '{op}' has no numba form",
                                hint="use backend='pysource' or 'interp' for this program")
        if id(st) in self.scratch_copies:
            numba_scratch.emit_copy(fe, st, depth)
            return True
        if id(st) in self.scratch_fills:   # (a fill nobody sees is not written: note [unobserved-fills])
            numba_scratch.emit_fill(fe, st, depth, filled=st.pat[0] not in self.unset)
            return True
        if id(st) in self.inline_mms:   # note [small-matmul], "Inside loops"
            numba_small_mm.emit(fe, st, depth, id(st) in self.scratch_mms)
            return True
        if op == "store_new":
            k, cap = self.store_type(e.p["elem"]), e.p.get("cap")   # cap: a buffer store's known size
            if self.inline_stores(k) and id(st.pat[0]) in self.local_stores:   # note [borrowed-views]
                new = self.borrowed_new_text(fe, k, cap, e.p["elem"], st.pat[0])
            elif self.inline_stores(k):   # note [compile-time]
                new = self.new_text(k, cap)
            else:
                new = f"_st_newn{k}({int(cap)})" if cap is not None and f"_st_newn{k}" in self.helpers else f"_st_new{k}()"
            fe.line(depth, f"{fe.bind(st.pat[0])} = {new}")
        elif op == "store_push":
            k = self.store_type(args[0].type.elem)
            s, v = fe.a(args[0]), fe.a(args[1])
            if args[1] in self.in_slot and self.slot_cands.get(args[1]) == args[0]:
                fe.line(depth, f"{fe.bind(st.pat[0])} = ({s}[0], {s}[1] + 1)")   # computed in its slot
            elif self.inline_stores(k):
                self.emit_push(fe, depth, fe.bind(st.pat[0]), s, v, k, grow=id(st) not in self.fitting,
                               owner=self.owner_of(fe, args[0]))
            else:
                fe.line(depth, f"{fe.bind(st.pat[0])} = _st_push{k}({s}, {v})")
            self.meter_line(fe, depth, args[0].type.elem.nbytes)
        elif op == "store_pop":
            k = self.store_type(args[0].type.elem)
            s = fe.a(args[0])
            outs = [fe.bind(v) for v in st.pat]
            copy = id(st) in self.pop_copies   # its value may outlive a push (note [numba-stores])
            if self.inline_stores(k):
                self.emit_pop(fe, depth, outs, s, copy)
            else:
                fe.line(depth, f"{outs[0]}, {outs[1]} = _st_pop{k}({s})")
                if copy:
                    fe.line(depth, f"{outs[1]} = {outs[1]}.copy()")
            self.meter_line(fe, depth, -args[0].type.elem.nbytes)
        elif op == "store_copy":
            elem = args[0].type.elem
            k = self.store_type(elem)
            if isinstance(elem, StoreType):
                raise PullbackError("numba backend: copying a store of stores is not supported",
                                    hint="use backend='pysource' or 'interp' for this program")
            if self.push_copies(elem):
                src = (f"{self.deco_inline}\ndef _st_copy{k}(s):\n    buf, n = s\n"
                       f"    new = np.empty_like(buf)\n    new[:n] = buf[:n]\n    return (new, n)")
            else:
                src = f"{self.deco}\ndef _st_copy{k}(s):\n    return s.copy()"
            h = self.helper(f"_st_copy{k}", src)
            fe.line(depth, f"{fe.bind(st.pat[0])} = {h}({fe.a(args[0])})")
        elif op == "store_zeros_like":
            k = self.store_type(args[0].type.elem)
            fe.line(depth, f"{fe.bind(st.pat[0])} = _st_zeros{k}({fe.a(args[0])})")
        elif op in ("index_update", "take_add"):
            self.update(fe, st, depth)
        elif op == "full" and st.pat[0] in self.partial and st.pat[0] not in self.unset:
            t = st.pat[0].type
            numba_fill.emit_partial(fe, st, self.partial[st.pat[0]], numba_exprs._ND[t.dtype],
                                    numba_exprs.scalar_cast(t.dtype, fe.a(args[0])), depth)
        elif op == "concatenate" and (len(args) >= CONCAT_COPIES or id(st) in self.slots or st.pat[0] in self.placed):
            self.concat_copies(fe, st, depth)
        else:
            rhs = self.expr(fe, e, st.pat)
            if rhs is None:
                rhs = fe.expr(e, st.pat)
            outs = [fe.bind(v) for v in st.pat]
            fe.line(depth, f"{', '.join(outs)} = {rhs}")
        # tag the lines with the primitive, for error messages (not lines inserted at the top)
        for i in range(n0 + fe.top_lines - top0, len(fe.lines)):
            if "#" not in fe.lines[i]:
                fe.lines[i] += f"  # pb:{op}"
        return True

    def keep_alive(self, fe, name: str) -> None:
        """Keep the array `name` from being released before the function `fe` prints returns
        (`before_return`)."""
        fe.kept.append(name)

    def before_return(self, fe) -> None:
        """Before the function's return: a use of each array `keep_alive` named."""
        if fe.kept:
            from .numba_views import KEEP_IMPORT

            self.helper("_pb_keep_import", KEEP_IMPORT)
            for name in fe.kept:
                fe.line(1, f"_pb_keep({name})")

    def before_call(self, fe, st, depth) -> None:
        """Before a call along a call-graph cycle: the stack check (note
        [numba-recursion-depth])."""
        if (fe.f.name, st.exp.func) in self.recursive:
            k = fe.mod.sites.add(checks.Site("recursion", st.loc or fe.cur_loc))
            fe.line(depth, f"if _pb_sp() < {STACK_PARAM}:")
            fe.line(depth + 1, f"raise RecursionError({k})")

    def fusion_plan(self, body, fe=None):
        """The fused groups of `body` (`numba_fusion.plan`); with the emitter `fe`,
        also notes the body's pops that copy their slot (`numba_stores.pop_copies`,
        note [numba-stores]), in a repeated body, its slice copies and small fills that
        go into scratch arrays (`numba_scratch.copies`, `.fills`, note [short-loops]), its
        small products printed in place (`numba_small_mm`, note [small-matmul]), and its
        concatenations written into later ones (`numba_slots`, note [concat-slots])."""
        repeated = id(body) in self.repeated
        if fe is not None:
            self.pop_copies |= pop_copies(body, fe.own, self.push_copies)   # note [numba-stores]
            if self._uses[0] is not fe.f:   # a new function: its own plan (names repeat across functions)
                self._uses = (fe.f, use_counts(fe.f.body))
                self.slots, self.placed = {}, {}
                self.slot_cands, self.in_slot = {}, set()
            self.slots.update(numba_slots.plan(body, self._uses[1]))
            # (a loop's fitting pushes are found with the body around it, planned first)
            self.fitting |= fitting_pushes(body, self._uses[1])   # note [numba-stores], "Pushes that fit"
            reserved = reserved_pushes(body)   # note [numba-stores], "While loops in blocks"
            loops = {id(st): st.exp for st in body.stmts} if reserved else {}
            for loop, pushes in reserved.items():
                kinds = [(j, push, self.store_type(loops[loop].params[j].type.elem)) for j, push in pushes]
                ok = [(j, push, k) for j, push, k in kinds if self.inline_stores(k)]
                if ok:
                    self.blocked[loop] = [(j, k) for j, _, k in ok]
                    self.fitting |= {push for _, push, _ in ok}
            self.slot_cands.update((v, s) for v, s in slot_values(body, self.fitting, fe.own).items()
                                   if self.inline_stores(self.store_type(s.type.elem)))
        if repeated and fe is not None:
            self.scratch_copies |= numba_scratch.copies(body, fe.own, self.push_copies)
            self.scratch_fills |= numba_scratch.fills(body, fe.own, self.push_copies)
            ids = numba_small_mm.inline(body)
            self.inline_mms |= ids
            self.scratch_mms |= numba_small_mm.scratches(body, ids, fe.own, self.push_copies)
        if fe is not None:   # note [borrowed-views]
            if self._rooted[0] is not fe.f:
                self._rooted = (fe.f, numba_borrow.rooted(fe.f, fe.own))
            self.borrowed |= {id(v) for v in numba_borrow.borrowable(body, self._rooted[1], fe.own, self.push_copies)}
            if repeated or body is fe.f.body:   # (a body in a parallel map is neither: no shared owner)
                for v in numba_borrow.local_stores(body, fe.own, self.push_copies):
                    self.local_stores.add(id(v))
                    self.grows_its_owner(fe, body, v)
        return fusion.plan(body, repeated)

    def while_block(self, fe, st, depth: int, names) -> int:
        """The block length of while loop `st` strip-mined (0: not): the loop's
        stores that it pushes once per iteration get room for a block of
        iterations here, at the top of each round, and its pushes no check
        (note [numba-stores], "While loops in blocks")."""
        stores = self.blocked.get(id(st))
        if not stores:
            return 0
        for j, k in stores:
            self.emit_reserve(fe, depth, names[j], k, WHILE_BLOCK, self.owner_of(fe, st.exp.params[j]))
        return WHILE_BLOCK

    def slot_text(self, fe, v):
        """The text of the slot that value `v` is computed in (a view of its
        store's buffer at the count, which the push then takes without a copy:
        note [numba-stores], "Values computed in their slot"), or None."""
        s = self.slot_cands.get(v)
        if s is None:
            return None
        self.in_slot.add(v)
        t = fe.a(s)
        return f"{t}[0][{t}[1]]"

    def emit_group(self, fe, g, depth) -> None:
        fusion.emit(fe, self, g, depth)

    def scalar_expr(self, fe, e: Prim, pat, libm: bool = False) -> str:
        """The text of a primitive on scalars (used inside fused loops). `libm`:
        print exp, log, tanh, ... as libm calls, not the vectorisable helpers
        (a loop LLVM does not vectorise, note [short-loops])."""
        if libm and e.op in _VM_OPS:
            return fe.expr(e, pat)
        return self.expr(fe, e, pat) or fe.expr(e, pat)

    def meter_line(self, fe, depth, nbytes: int) -> None:
        """In a metered module, count a push (or, negative, a pop) of `nbytes`."""
        if self.metered:
            h = self.helper("_pb_mtr", f"{self.deco_inline}\ndef _pb_mtr(m, d):\n    m[0] += d\n"
                                       f"    if m[0] > m[1]:\n        m[1] = m[0]")
            fe.line(depth, f"{h}({METER_PARAM}, {nbytes})")

    # -- helpers ------------------------------------------------------------------------
    def helper(self, name: str, src: str) -> str:
        self.helpers.setdefault(name, src)
        return name

    # -- expressions ---------------------------------------------------------------------
    def expr(self, fe, e: Prim, pat):
        """The numba form of `e`, or None where pysource's NumPy form works as is
        (`numba_exprs.expr`)."""
        return numba_exprs.expr(self, fe, e, pat)
