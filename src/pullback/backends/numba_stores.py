"""The numba dialect's stores (tapes): the helpers each store kind prints.

Contract (note [numba-stores] in docs/design.md): `StoreHelpers.store_type(elem)`
gives the index k of the store kind for elements of type `elem` and writes, on
first use, through the dialect's `helper`, the value type `_SV{k}` and the
helpers `_st_new{k}`, `_st_push{k}`, `_st_pop{k}` and `_st_zeros{k}`. Small
fixed-shape values are copied into a growing buffer (`push_copies`); large
arrays and stores of stores go into typed lists. Outside mutual recursion a
buffer store's new, push and pop print as statements in the caller
(`inline_stores`, `new_text`, `emit_push`, `emit_pop`; note [compile-time]),
growing through one flat helper per dtype, `_st_grow_<dtype>`. A mixin of
`NumbaDialect`, which provides `helper`, `store_types`, `buffer_stores`,
`push_copies`, `deco`, `deco_inline`, and `owners` / `owned_by` (the local
stores' owner arrays, `borrowed_new_text` and `grows_its_owner`).

A pop of an array from a buffer store gives a view of its slot. `pop_copies(body,
own, push_copies)` gives the ids of the `store_pop` statements of `body` whose
value (or a view of it) may be read after a later push to the same store could
have overwritten the slot; those pops copy the slot instead (note
[numba-stores] "Popped views").

`fitting_pushes(body, uses)` gives the ids of the pushes of `body`'s loops that
can never find their buffer full; `emit_push(..., grow=False)` prints those
without the growth check (note [numba-stores], "Pushes that fit").
`reserved_pushes(body)` gives, for `body`'s while loops, the stores pushed
once per iteration; `emit_reserve` makes room for a block of iterations
before a strip-mined loop's block (note [numba-stores], "While loops in blocks").
`slot_values(body, fitting, own)` gives the values such pushes save that can be
computed in the slot they are pushed to (`slot_text`; the push then copies
nothing: note [numba-stores], "Values computed in their slot").

`sized_large_elems(prog)` gives the large array types stored only in stores made
with their final size; those stores are buffers too (note [numba-stores],
"Sized stores of large arrays").
"""
from __future__ import annotations

from ..errors import PullbackError
from ..ir.core import Apply, Const, ForForm, If, Loop, Prim, Var
from ..ir.traverse import free_vars, iter_bodies, use_counts
from ..ir.types import StoreType, TensorType
from . import pysource as ps

_NBT = {"f64": "float64", "f32": "float32", "i64": "int64", "bool": "boolean"}
# stores of values with at most this many elements are array buffers (note [numba-stores])
_BUFFER_MAX = 4096
_ND = ps._NP_DTYPE


class StoreHelpers:
    def store_type(self, elem) -> int:
        """Index k of the store kind for elements `elem`; its helpers `_st_new{k}`,
        `_st_push{k}`, `_st_pop{k}`, `_st_zeros{k}` and value type `_SV{k}` are
        written on first use (note [numba-stores])."""
        if elem in self.store_types:
            return self.store_types[elem]
        if isinstance(elem, StoreType):
            j = self.store_type(elem.elem)
            k = len(self.store_types)
            self.store_types[elem] = k
            self._list_store(k, j)
        elif isinstance(elem, TensorType):
            k = len(self.store_types)
            self.store_types[elem] = k
            if self.push_copies(elem):
                self._buffer_store(k, elem)
            else:
                self._list_store(k, None, elem)
        else:
            raise PullbackError(f"numba backend: cannot store values of type {elem}")
        return k

    def _buffer_store(self, k: int, elem: TensorType) -> None:
        """A store of fixed-shape values: `(buf, n)`, the values in `buf[:n]`,
        `buf` doubling when full."""
        nb, dt, shape = _NBT[elem.dtype], _ND[elem.dtype], tuple(int(d) for d in elem.shape)
        nd = len(shape)
        size = 1
        for d in shape:
            size *= d
        dims = "".join(f", {d}" for d in shape)
        loops, ix = [], ""
        for a, d in enumerate(shape):
            loops.append("    " * (a + 1) + f"for a{a} in range({d}):")
            ix += f", a{a}"
        body = "    " * (nd + 1)
        if nd:
            write = "\n".join(loops) + f"\n{body}buf[n{ix}] = v[{ix[2:]}]"
            # a view of the slot: stores are used linearly (LIFO), so the slot is only
            # written again by a later push; a pop whose value may outlive such a push
            # copies instead (`pop_copies`); popped values are never owned (never
            # updated in place)
            read = "buf[n - 1]"
        else:
            write, read = "    buf[n] = v", "buf[n - 1]"
        self.helper(f"_SV{k}", f'_SV{k} = _nbt.Tuple((_nbt.Array(_nbt.{nb}, {nd + 1}, "C"), _nbt.int64))'
                               f"  # store of {elem}")
        cap = max(4, min(1024, 8192 // max(size, 1)))  # about 64 KB to start with
        self.helper(f"_st_new{k}", f"{self.deco_inline}\ndef _st_new{k}():\n    return (np.empty(({cap}{dims}), dtype={dt}), 0)")
        self.helper(f"_st_newn{k}", f"{self.deco_inline}\ndef _st_newn{k}(cap):\n"
                                    f"    return (np.empty((cap{dims}), dtype={dt}), 0)")
        self.helper(f"_st_push{k}", (
            f"{self.deco_inline}\ndef _st_push{k}(s, v):\n"
            f"    buf, n = s\n"
            f"    if n == buf.shape[0]:\n"
            f"        new = np.empty((2 * n + 4{dims}), dtype={dt})\n"
            f"        flat, old = new.reshape(-1), buf.reshape(-1)\n"
            f"        for q in range(n * {size}):\n"
            f"            flat[q] = old[q]\n"
            f"        buf = new\n"
            f"{write}\n"
            f"    return (buf, n + 1)"))
        self.helper(f"_st_pop{k}", f"{self.deco_inline}\ndef _st_pop{k}(s):\n    buf, n = s\n    return (buf, n - 1), {read}")
        self.buffer_stores[k] = (dims, dt, shape)
        self.helper(f"_st_zeros{k}", (
            f"{self.deco_inline}\ndef _st_zeros{k}(s):\n"
            f"    return (np.zeros((max(s[1], 1){dims}), dtype={dt}), s[1])"))

    def _list_store(self, k: int, j: int | None, elem=None) -> None:
        """A typed list: of stores of kind `j` (derivative code differentiated
        again), or of references to large arrays `elem` (pushed without a copy)."""
        if j is None:
            # C-contiguous elements: the return sweep indexes them without strides (a
            # pushed view is copied by `_st_push`; a C array is pushed as it is)
            ty = f'_nbt.Array(_nbt.{_NBT[elem.dtype]}, {len(elem.shape)}, "C")'
            self.helper(f"_SE{k}", f"_SE{k} = {ty}  # store elements: {elem}")
            ety, zero = f"_SE{k}", "np.zeros_like(v)"
            self.helper(f"_SV{k}", f"_SV{k} = _nbt.ListType(_SE{k})  # store of {elem}")
        else:
            ety, zero = f"_SV{j}", f"_st_zeros{j}(v)"
            self.helper(f"_SV{k}", f"_SV{k} = _nbt.ListType(_SV{j})  # store of stores")
        self.helper(f"_st_new{k}", f"{self.deco}\ndef _st_new{k}():\n    return List.empty_list({ety})")
        push = "np.ascontiguousarray(v)" if j is None else "v"
        self.helper(f"_st_push{k}", f"{self.deco}\ndef _st_push{k}(s, v):\n    s.append({push})\n    return s")
        self.helper(f"_st_pop{k}", f"{self.deco}\ndef _st_pop{k}(s):\n    v = s.pop()\n    return s, v")
        self.helper(f"_st_zeros{k}", (
            f"{self.deco}\ndef _st_zeros{k}(s):\n    out = List.empty_list({ety})\n"
            f"    for v in s:\n        out.append({zero})\n    return out"))

    # -- buffer stores printed in place (note [compile-time]) ---------------------
    def inline_stores(self, k: int) -> bool:
        """Are pushes, pops and news of store kind `k` printed as statements in the
        caller instead of calls of the `inline="always"` helpers? numba inlines such
        a helper by running its front end again at every call site, about 30 ms
        each; the statements are those the inlined helper would give. Only buffer
        stores, and not where helpers are called anyway (mutual recursion)."""
        return k in self.buffer_stores and self.deco_inline != self.deco

    def new_text(self, k: int, cap) -> str:
        dims, dt, _shape = self.buffer_stores[k]
        return f"(np.empty(({self._capacity(k, cap)}{dims}), dtype={dt}), 0)"

    def _capacity(self, k: int, cap) -> int:
        """The slots a new buffer store of kind k starts with: `cap` when known."""
        return int(cap) if cap is not None else max(4, min(1024, 8192 // max(self._size(k), 1)))

    def borrowed_new_text(self, fe, k: int, cap, elem, v) -> str:
        """A new buffer store whose buffer is a borrowed view of an owner array allocated
        at the top of the function `fe` prints and kept alive until it returns
        (`keep_alive`): the store's pushes, pops and popped views then take no
        references (note [borrowed-views], "Store buffers"). A store of known size
        `cap` views the owner with its static shape (`numba_views._pb_view_cb`: LLVM
        then knows the buffer's extents where no growth reaches it); one of unknown
        size the whole owner (`_pb_borrow`), which in a repeated body may have grown
        in an earlier iteration (`grows_its_owner`)."""
        from . import numba_scratch
        from .numba_views import BORROWED_IMPORT, view_text

        shape = (self._capacity(k, cap), *(int(d) for d in elem.shape))
        owner = numba_scratch.scratch(fe, shape, elem.dtype)
        self.keep_alive(fe, owner)
        self.helper("_pb_borrow_import", BORROWED_IMPORT)
        self.owners[(id(fe.f), v)] = owner
        return f"({view_text(owner, shape, (), borrowed=True) if cap is not None else f'_pb_borrow({owner})'}, 0)"

    def grows_its_owner(self, fe, body, v) -> None:
        """Note that the pushes of local store `v` (of `body`) grow its buffer into
        the owner array `borrowed_new_text` gives it, where `numba_borrow.store_versions`
        allows (note [borrowed-views], "Store buffers")."""
        from .numba_borrow import store_versions

        for x in store_versions(body, v, fe.own) or ():
            self.owned_by[(id(fe.f), x)] = v

    def owner_of(self, fe, store) -> str | None:
        """The owner array the store value `store` grows into (None: a grown buffer is
        a new array of its own)."""
        root = self.owned_by.get((id(fe.f), store))
        return None if root is None else self.owners.get((id(fe.f), root))

    def _size(self, k: int) -> int:
        size = 1
        for d in self.buffer_stores[k][2]:
            size *= d
        return size

    def emit_push(self, fe, depth: int, out: str, s: str, v: str, k: int, grow: bool = True,
                  owner: str | None = None) -> None:
        """`out = _st_push{k}(s, v)`, as statements: grows the buffer when full
        through `_st_grow_<dtype>` (not inlined; one numba function per dtype, on
        the flat buffers), then copies `v` into its slot. Without `grow` (a push
        that `fitting_pushes` proved never finds the buffer full) there is no
        check."""
        dims, dt, shape = self.buffer_stores[k]
        b, n = fe.fresh("st_buf"), fe.fresh("st_n")
        fe.line(depth, f"{b}, {n} = {s}")
        if grow:   # full: twice the slots, through a helper shared by all
            self._grow(fe, depth, b, n, k, f"{n} == {b}.shape[0]", "4", owner)
        ix = []
        for a, d in enumerate(shape):
            j = fe.fresh(f"st_a{a}")
            fe.line(depth + a, f"for {j} in range({d}):")
            ix.append(j)
        fe.line(depth + len(shape), f"{b}[{', '.join([n, *ix])}] = {v}" + (f"[{', '.join(ix)}]" if ix else ""))
        fe.line(depth, f"{out} = ({b}, {n} + 1)")

    def _grow(self, fe, depth: int, b: str, n: str, k: int, full: str, spare: str, owner: str | None = None) -> None:
        """`if full: b = <b with 2 n + spare slots, its first n kept>`, through
        `_st_grow_<dtype>` (one numba function per dtype, on the flat buffers). With
        `owner` (`owner_of`), the new array replaces the owner array and `b` is a
        borrowed view of it."""
        dims, dt, _shape = self.buffer_stores[k]
        size = self._size(k)
        g = dt.replace("np.", "_st_grow_")
        self.helper(g, (f"{self.deco}\ndef {g}(old, used, size):\n    new = np.empty(size, dtype={dt})\n"
                        f"    for q in range(used):\n        new[q] = old[q]\n    return new"))
        fe.line(depth, f"if {full}:")
        fe.line(depth + 1, f"{owner or b} = {g}({b}.reshape(-1), {n} * {size}, (2 * {n} + {spare}) * {size})"
                           f".reshape((2 * {n} + {spare}{dims}))")
        if owner:
            fe.line(depth + 1, f"{b} = _pb_borrow({owner})")

    def emit_reserve(self, fe, depth: int, s: str, k: int, room: int, owner: str | None = None) -> None:
        """Make room for `room` more pushes into the buffer store named `s` (kind
        k), growing it once if needed (into `owner`, as `_grow`): the block of a
        strip-mined while loop then pushes without checks (note [numba-stores],
        "While loops in blocks")."""
        b, n = fe.fresh("st_buf"), fe.fresh("st_n")
        fe.line(depth, f"{b}, {n} = {s}")
        self._grow(fe, depth, b, n, k, f"{n} + {room} > {b}.shape[0]", str(room + 4), owner)
        fe.line(depth + 1, f"{s} = ({b}, {n})")

    def emit_pop(self, fe, depth: int, outs: list, s: str, copy: bool = False) -> None:
        """`outs[0], outs[1] = _st_pop{k}(s)`, as statements (the value is a view of
        its slot, as `_st_pop{k}` returns it; with `copy`, a copy of it)."""
        b, n = fe.fresh("st_buf"), fe.fresh("st_n")
        fe.line(depth, f"{b}, {n} = {s}")
        fe.line(depth, f"{outs[0]} = ({b}, {n} - 1)")
        fe.line(depth, f"{outs[1]} = {b}[{n} - 1]" + (".copy()" if copy else ""))


def sized_large_elems(prog) -> set:
    """The array types of more than `_BUFFER_MAX` elements whose stores are all
    made with their final size (`store_new` with `cap`: a loop of static trip
    count saving once per iteration) and whose every push saves a value that can
    be computed in its slot: a 2-D float matrix product or an elementwise result
    of the loop body that stays in it (`slot_values`). Their stores are buffers
    of `cap` slots, as small values' are, instead of typed lists: the same
    memory, no copy, and numba compiles no list code (note [numba-stores],
    "Sized stores of large arrays")."""
    sized, unsized = set(), set()
    for f in prog.funcs:
        uses = use_counts(f.body)
        bodies = list(iter_bodies(f.body))
        fitting = set().union(*(fitting_pushes(b, uses) for b in bodies))
        for body in bodies:
            placed = None
            for st in body.stmts:
                e = st.exp
                if not (isinstance(e, Prim) and e.op in ("store_new", "store_push")):
                    continue
                elem = e.p["elem"] if e.op == "store_new" else e.args[0].type.elem
                if not (isinstance(elem, TensorType) and elem.size > _BUFFER_MAX):
                    continue
                if e.op == "store_new":
                    (sized if e.p.get("cap") is not None else unsized).add(elem)
                    continue
                if placed is None:
                    placed = _slot_forms(body, fitting)
                if e.args[1] not in placed:
                    unsized.add(elem)
    return sized - unsized


class _NoUpdates:
    """An ownership analysis that updates nothing in place: what it says of a
    pushed value, which the push aliases (`ownership._aliasing_args`)."""
    inplace: frozenset = frozenset()
    inplace_add: dict = {}


def _slot_forms(body, fitting) -> set:
    """The values of `slot_values(body, ...)` that the numba dialect prints into
    their slot: results of elementwise primitives (fused loops) and of 2-D
    float64 matrix products (`np.dot` with an output)."""
    from .numba_fusion import _ELEMENTWISE

    defs = {st.pat[0]: st.exp for st in body.stmts if len(st.pat) == 1}
    out = set()
    for v in slot_values(body, fitting, _NoUpdates()):
        e = defs[v]
        if e.op in _ELEMENTWISE or (e.op == "matmul" and all(
                a.type.ndim == 2 and a.type.dtype == "f64" for a in e.args) and v.type.dtype == "f64"):
            out.add(v)
    return out


_READ_ONLY = frozenset({"store_pop", "store_copy", "store_zeros_like"})   # never write a store's buffer


def fitting_pushes(body, uses) -> set:
    """The ids of the `store_push` statements of the loops of `body` that never
    find their buffer full, so need no growth check (note [numba-stores], "Pushes
    that fit"): in a `for` loop of static trip count N, the one push of each
    iteration (a statement of the loop body itself, its store parameter read only
    there and its result only carried to the next iteration) into a store made
    empty just before the loop with room for at least N values (`store_new`
    with `cap`, read by nothing else: `uses`, the function's use counts)."""
    defs = {v: st.exp for st in body.stmts for v in st.pat}
    out = set()
    for st in body.stmts:
        e = st.exp
        if not (isinstance(e, Loop) and isinstance(e.form, ForForm) and isinstance(e.form.bound, Const)):
            continue
        n = int(e.form.bound.value)
        for j, push in _once_pushes(e):
            a = e.init[j]
            d = defs.get(a) if isinstance(a, Var) else None
            if (isinstance(d, Prim) and d.op == "store_new" and d.p.get("cap") is not None and int(d.p["cap"]) >= n
                    and uses.get(a, 0) == 1):
                out.add(id(push))
    return out


def _once_pushes(loop: Loop) -> list:
    """[(store parameter index, its push statement)]: the parameters of `loop` that its
    body pushes to once, by a statement of the body itself, the parameter read only
    there and the push's result only carried to the next iteration."""
    inner = use_counts(loop.body)
    tops = {v: s for s in loop.body.stmts for v in s.pat}
    out = []
    for j, (p, r) in enumerate(zip(loop.params, loop.body.result)):
        push = tops.get(r) if isinstance(r, Var) else None
        if (push is not None and isinstance(push.exp, Prim) and push.exp.op == "store_push"
                and push.exp.args[0] == p and inner.get(p, 0) == 1 and inner.get(r, 0) == 1):
            out.append((j, push))
    return out


def reserved_pushes(body) -> dict:
    """{id of a while loop of `body`: [(store parameter index, id of its push)]}: the
    stores a while loop pushes to exactly once per iteration (a statement of the loop
    body itself, its store parameter read only there and its result only carried to
    the next iteration, as in `fitting_pushes`). A strip-mined loop reserves room for
    a block of iterations once, and those pushes need no check (note [numba-stores],
    "While loops in blocks")."""
    out = {}
    for st in body.stmts:
        e = st.exp
        if isinstance(e, Loop) and not isinstance(e.form, ForForm):
            found = [(j, id(push)) for j, push in _once_pushes(e)]
            if found:
                out[id(st)] = found
    return out


def slot_values(body, fitting, own) -> dict:
    """{value: store}: the values that a fitting push of `body` (ids in
    `fitting`) saves and that can be computed straight into the slot the push
    fills, so that the push copies nothing (note [numba-stores], "Values
    computed in their slot"): defined by a primitive of `body` itself, and
    neither updated in place, nor shared with an array updated in place or
    read by anything but a primitive, nor leaving the body (`own`: the
    function's ownership analysis). The slot is a view of the store's buffer
    at its count; a fitting push's store is read by nothing else in the body
    and never grows, so the slot is the one the push fills, and stays put."""
    stmts = body.stmts
    where = {v: k for k, st in enumerate(stmts) for v in st.pat}
    out = {}
    for st in stmts:
        if id(st) not in fitting:
            continue
        store, value = st.exp.args
        k = where.get(value) if isinstance(value, Var) else None
        if (k is not None and isinstance(stmts[k].exp, Prim) and len(stmts[k].pat) == 1
                and not _changed_after(stmts[k + 1:], body.result, value, st, own)):
            out[value] = store
    return out


def _changed_after(stmts, result, value, push, own) -> bool:
    """May `value`'s array be written after its definition (`stmts` follow it),
    or leave the body, or be read by anything the analysis does not follow?
    Only `push` may store it."""
    share = {value}
    for st in stmts:
        e = st.exp
        reads = set(e.args) if isinstance(e, (Prim, Apply)) else free_vars(e)
        if not reads & share:
            continue
        if not isinstance(e, Prim) or (e.op == "store_push" and st is not push):
            return True
        if (id(st) in own.inplace and e.args[0] in share) or own.inplace_add.get(id(st)) in share:
            return True
        share.update(_sharing(st, share, own))
    return bool(share & {a for a in result if isinstance(a, Var)})


def pop_copies(body, own, push_copies) -> set:
    """See the module docstring. `own`: the function's ownership analysis (an
    update it does in place on a view of the popped value writes the slot too)."""
    out = set()
    stmts = body.stmts
    for k, st in enumerate(stmts):
        e = st.exp
        if not (isinstance(e, Prim) and e.op == "store_pop"):
            continue
        elem = e.args[0].type.elem
        if isinstance(elem, TensorType) and elem.shape and push_copies(elem) and \
                _outlives_a_push(stmts[k + 1:], body.result, st.pat[0], st.pat[1], own, push_copies):
            out.add(id(st))
    return out


def _outlives_a_push(stmts, result, store, value, own, push_copies) -> bool:
    """May `value`, popped leaving `store`, or an array sharing its memory be read
    after a statement of `stmts` that may push to `store` (a push, or a call,
    `If`, `Loop` or `Map` it is passed to), or leave the body (`result`) beside
    the store?"""
    chain, share, pushed = {store}, {value}, False
    for st in stmts:
        e = st.exp
        reads = set(e.args) if isinstance(e, (Prim, Apply)) else free_vars(e)
        shared = bool(reads & share)
        if pushed and shared:
            return True
        if reads & chain:
            if isinstance(e, Prim) and e.op in _READ_ONLY:
                if e.op == "store_pop":   # (copies and zeros are new buffers)
                    chain.add(st.pat[0])
            elif isinstance(e, Prim) and e.op == "store_push" and e.args[1] in share:
                pushed = True   # the value is copied in before its slot could be written
            else:
                if shared:
                    return True   # a callee or a nested body may push, then read the value
                pushed = True
        if shared:
            if isinstance(e, Prim) and e.op == "store_push" and e.args[0] not in chain \
                    and not push_copies(e.args[0].type.elem):
                return True   # kept by reference in another store
            share.update(_sharing(st, share, own))
    live = {a for a in result if isinstance(a, Var)}
    return bool(live & share) and (pushed or bool(live & chain))


def _spread(stmts, share: set, own, pushes: list | None = None, stores: bool = False) -> set:
    """`share` grown by the values of `stmts` that may share memory with it; the
    pushes of a shared value (at any depth of `If` and `Loop` bodies) appended to
    `pushes` when given. With `stores`, a store's buffer is memory too: the store
    a push or pop of a shared store gives shares it, and so does the value popped
    (a view of its slot)."""
    for st in stmts:
        e = st.exp
        reads = set(e.args) if isinstance(e, (Prim, Apply)) else free_vars(e)
        if reads & share:
            share.update(_sharing(st, share, own, pushes, stores))
    return share


spread_sharing = _spread   # the same walk for other planners (`numba_scratch.spread`)


def _sharing(st, share: set, own, pushes: list | None = None, stores: bool = False) -> list:
    """The results of `st` (which reads a value of `share`) that may share memory
    with a value of `share`: a view (`ownership._aliasing_args`) or an update in
    place of one, a call's or a `Map`'s results, and the results of an `If` or
    `Loop` whose bodies may return one; other primitives make fresh arrays."""
    from .pysource.ownership import _aliasing_args

    e = st.exp
    if isinstance(e, Prim):
        if e.op == "store_push":
            if pushes is not None and e.args[1] in share:
                pushes.append(e)
            # (a buffer store copies; `_outlives_a_push` checks the others)
            return list(st.pat) if stores and e.args[0] in share else []
        if e.op == "store_pop" and stores:
            return list(st.pat) if e.args[0] in share else []
        taken = list(_aliasing_args(e))
        if id(st) in own.inplace:
            taken.append(e.args[0])
        if id(st) in own.inplace_add:
            taken.append(own.inplace_add[id(st)])
        return list(st.pat) if any(a in share for a in taken if isinstance(a, Var)) else []
    if isinstance(e, If):
        out = []
        for b in (e.then, e.else_):
            inner = _spread(b.stmts, set(share), own, pushes, stores)
            out += [v for v, r in zip(st.pat, b.result) if r in inner]
        return out
    if isinstance(e, Loop) and len(st.pat) == len(e.params):
        carried = carried_params(e, share, own, pushes, stores)
        return [v for v, p in zip(st.pat, e.params) if p in carried]
    return list(st.pat)


def carried_params(e: Loop, share: set, own, pushes: list | None = None, stores: bool = False) -> set:
    """The parameters of loop `e` that may hold a value sharing memory with `share`
    (its initial value does, or the body may return one for it), to a fixed point."""
    carried = {p for p, a in zip(e.params, e.init) if a in share}
    while True:
        inner = _spread(e.body.stmts, share | carried, own, pushes, stores)
        more = {p for p, r in zip(e.params, e.body.result) if r in inner} - carried
        if not more:
            return carried
        carried |= more


sharing = _sharing   # the same rule for other walks (`numba_borrow._contained`)
