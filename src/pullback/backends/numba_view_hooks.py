"""The numba dialect's hooks that print array updates and views (a mixin of
`NumbaDialect`, as `numba_stores.StoreHelpers` and `numba_loop_helpers.LoopHelpers`).

Contract: the pysource emitter calls these hooks of its dialect:
- `concat_copies(fe, st, depth)`: a concatenation as an allocation (or a slot
  of a later concatenation, `numba_slots`) and loop nests copying its pieces;
- `update(fe, st, depth)`: an `index_update` or `take_add` in place on the
  target `fe.update_target` gives: a scalar, one element, a static block
  through `numba_views`' region intrinsics (note [compile-time], "Slices in
  place"), an explicit loop nest over a region, or `_take_add_helper`;
- `view(fe, x, spec, pat)`, `row_view(fe, x, spec, index_text, pat)`: a
  static slice or row of `x` as `numba_views`' intrinsics, borrowed where the
  dialect's `borrowed` holds the result's id (note [borrowed-views]), or None
  (the emitter's own form);
- `reshaped(x_text, shape)`, `broadcast(x_text, shape)`: the text of a
  contiguous reshape or a static broadcast through the intrinsics.
Every text using an intrinsic makes the module import it (`_viewing`). The
mixin uses the dialect's `helper`, `borrowed` and `_take_add_helper`.
"""
from __future__ import annotations

import numpy as np

from ..ir.core import Prim
from ..ir.prims.indexing import region_shape
from ..ir.types import TensorType
from . import numba_exprs, numba_slots
from . import numba_regions as regions
from . import pysource as ps


def _ndim(a) -> int:
    return ps._ndim(a)


class ViewHooks:
    def concat_copies(self, fe, st, depth) -> None:
        """A concatenation as an allocation (or a slot of a later concatenation,
        `numba_slots`) and loop nests copying the pieces not already written in
        place (`numba_regions.copy_pieces`). numba's `np.concatenate` of a tuple
        of n arrays compiles to code whose LLVM work grows much faster than n
        (ht's 22 pieces: about 30 s of 59; note [compile-time], "Concatenations")."""
        numba_slots.alloc(fe, self, st, depth)
        regions.copy_pieces(fe, st, numba_slots.placed(self, st), depth)

    def update(self, fe, st, depth) -> None:
        e: Prim = st.exp
        x = e.args[0]
        name = fe.update_target(st, depth, scalar_copy="{}")
        if e.op == "index_update":
            v = e.args[1]
            if _ndim(x) == 0:  # a scalar "array" updated whole
                rhs = fe.a(v) if e.p["mode"] == "set" else f"{name} + {fe.a(v)}"
                fe.line(depth, f"{name} = {rhs}")
                return
            opr = "=" if e.p["mode"] == "set" else "+="
            spec = e.p["spec"]
            region = region_shape(tuple(x.type.shape), spec)
            if not region:
                fe.line(depth, f"{name}[{fe.index_text(x, spec, e.args[2:], drop_trailing=False)}] {opr} {fe.a(v)}")
                return
            block = self._block_update(fe, name, x, v, spec, region, e.p["mode"])
            if block is not None:   # a static block from an array of its shape: note [compile-time]
                fe.line(depth, block)
                return
            # a region: an explicit loop nest (numba's slice assignment is slow to compile)
            js = [fe.fresh(f"j{d}") for d in range(len(region))]
            target = regions.region_index(fe, st, js)
            val = fe.a(v) if _ndim(v) == 0 else f"{fe.a(v)}[{regions.broadcast_index(v, region, js)}]"
            for d, (j, n) in enumerate(zip(js, region)):
                fe.line(depth + d, f"for {j} in range({n}):")
            fe.line(depth + len(region), f"{name}[{target}] {opr} {val}")
            return
        idx, v = e.args[1], e.args[2]
        axis = e.p["axis"]
        if _ndim(idx) == 0:
            fe.line(depth, f"{name}[{':, ' * axis}{fe.a(idx)}] += {fe.a(v)}")
            return
        h = self._take_add_helper(axis, _ndim(x))
        it, vt = fe.a(idx), fe.a(v)
        if _ndim(idx) > 1:
            xs, n = tuple(x.type.shape), int(np.prod(idx.type.shape))
            it, vt = self.reshaped(it, (n,)), self.reshaped(vt, xs[:axis] + (n,) + xs[axis + 1:])
        fe.line(depth, f"{h}({name}, {it}, {vt})")

    def _block_update(self, fe, name, x, v, spec, region, mode):
        """`name[spec] (+)= v` as `numba_views`' region intrinsic on a view, when the
        spec is static slices and `v` a float array of the region's shape and
        `x`'s dtype; else None ("Slices in place")."""
        from .numba_views import view_text

        if not (_ndim(v) == len(region) and tuple(v.type.shape) == tuple(region) and v.type.dtype == x.type.dtype
                and x.type.dtype in ("f64", "f32")):
            return None
        target = view_text(name, x.type.shape, spec)
        if target is None:
            return None
        return self._viewing(f"_pb_region_{'set' if mode == 'set' else 'add'}({target}, {fe.a(v)})")

    def view(self, fe, x, spec, pat=()):
        """A static slice of `x` as `numba_views`' intrinsic, or None (note
        [compile-time], "Slices in place"); borrowed where `fusion_plan` found the
        result `pat[0]` borrowable (note [borrowed-views])."""
        from .numba_views import BORROWED_IMPORT, view_text

        borrowed = bool(pat) and id(pat[0]) in self.borrowed
        text = view_text(fe.a(x), x.type.shape, spec, borrowed) if isinstance(x.type, TensorType) else None
        if text is not None and borrowed:
            self.helper("_pb_borrow_import", BORROWED_IMPORT)
        return None if text is None else self._viewing(text)

    def row_view(self, fe, x, spec, index_text: str, pat=()):
        """``x[i]`` (one integer index, the other axes whole) as the borrowed row
        intrinsic where `fusion_plan` found the result `pat[0]` borrowable, else None
        (note [borrowed-views]); `index_text` is the index as printed."""
        from .numba_views import BORROWED_IMPORT

        if not (pat and id(pat[0]) in self.borrowed and isinstance(x.type, TensorType) and len(x.type.shape) >= 2
                and spec and spec[0][0] == "d" and all(s == ("s", None, None, None) for s in spec[1:])):
            return None
        self.helper("_pb_borrow_import", BORROWED_IMPORT)
        return self._viewing(f"_pb_row_b({fe.a(x)}, {index_text})")

    def reshaped(self, x_text: str, shape) -> str:
        """`np.ascontiguousarray(x).reshape(shape)` for a static shape of at least one
        axis, as `numba_views._pb_reshape` (note [compile-time], "Reshapes in place")."""
        return self._viewing(f"_pb_reshape({x_text}, {numba_exprs.shape_tuple(shape)})")

    def broadcast(self, x_text: str, shape) -> str:
        """`np.broadcast_to(x, shape)` (a read-only view) for the IR's static broadcast of an
        array, as `numba_views._pb_broadcast` (note [compile-time], "Broadcasts in place")."""
        return self._viewing(f"_pb_broadcast({x_text}, {numba_exprs.shape_tuple(shape)})")

    def _viewing(self, text: str) -> str:
        """`text`, a call of a `numba_views` intrinsic: the module imports them."""
        from .numba_views import IMPORT

        self.helper("_pb_view_import", IMPORT)
        return text
