"""`pb.jacobian(f, sparsity=...)`: sparse Jacobians by colouring (note [sparse-jacobian]).

Contract: `sparse_jacobian(fun, argnums, mode, backend, checkpoint, parallel,
sparsity)` returns a callable; called at top level with `fun`'s arguments it
returns a 2-D `scipy.sparse.csr_array` of shape (output size, input size)
(both flattened in C order) holding the Jacobian of `fun`'s output with
respect to argument `argnums` (a tuple of argnums gives a tuple). Its stored
entries are exactly the pattern's, explicit zeros included, so the structure is
the same on every call.

- `sparsity`: a 2-D boolean NumPy array or a `scipy.sparse` array/matrix of that
  shape (any nonzero counts), or "auto": the pattern `detect` derives from the
  staged IR, once per argument signature (kept with the staged program).
- mode="fwd" colours columns and runs one jvp per colour, seeded with the sum
  of that colour's basis vectors; mode="rev" colours rows and runs one vjp per
  colour. The jvps/vjps run as one staged loop over the colours (so on every
  backend, compiled once per signature and number of colours, whatever the
  pattern); the colouring and the decompression are NumPy/SciPy on the host.
- Inside staged code (in a function pullback stages, jit, grad, ...) it is a
  located `PullbackError`: call it at top level, or use the dense jacobian.
- Errors (bad pattern type or shape, non-float argument, pytree argument or
  output) are located `PullbackError`s.
"""
from __future__ import annotations

import numpy as np

from .. import transforms
from ..errors import PullbackError, short_repr
from ..ir.core import Const
from ..ir.types import I64, TensorType, np_dtype
from ..pytree import TreeDef

_HINT_PATTERN = ("pass sparsity='auto', a boolean NumPy array or a scipy.sparse matrix of shape "
                 "(output size, input size), or sparsity=None for the dense Jacobian")


def sparse_jacobian(fun, argnums, mode, backend, checkpoint, parallel, sparsity):
    from ..api import _cached

    spec = _parse(sparsity)
    if isinstance(argnums, tuple):
        parts = tuple(sparse_jacobian(fun, a, mode, backend, checkpoint, parallel, sparsity) for a in argnums)
        return _Tuple(parts, fun)
    def make():
        return SparseJacobian(fun, argnums, mode, backend, checkpoint, parallel, spec)

    if isinstance(spec, str):
        return _cached(fun, ("sparse_jacobian", argnums, mode, backend, checkpoint, parallel), make)
    return make()


def _parse(sparsity):
    """The pattern as given: "auto", or a canonical boolean csr_array (shape checked later)."""
    if isinstance(sparsity, str):
        if sparsity != "auto":
            raise PullbackError(f"jacobian: sparsity={short_repr(sparsity)} is not a pattern", hint=_HINT_PATTERN)
        return "auto"
    from . import deps

    if isinstance(sparsity, np.ndarray):
        if sparsity.ndim != 2 or sparsity.dtype.kind not in "bif":
            raise PullbackError(f"jacobian: the sparsity pattern must be a 2-D boolean array, got an array of "
                                f"shape {sparsity.shape} and dtype {sparsity.dtype}", hint=_HINT_PATTERN)
        return deps.canonical(sparsity != 0)
    try:
        import scipy.sparse as sp
    except ImportError:  # pragma: no cover
        sp = None
    if sp is not None and sp.issparse(sparsity):
        if sparsity.ndim != 2:
            raise PullbackError(f"jacobian: the sparsity pattern must be 2-D, got shape {sparsity.shape}",
                                hint=_HINT_PATTERN)
        return deps.canonical(sp.csr_array(sparsity) != 0)
    raise PullbackError(f"jacobian: sparsity must be 'auto', a boolean array or a scipy.sparse matrix, "
                        f"got {short_repr(sparsity)} of type {type(sparsity).__name__}", hint=_HINT_PATTERN)


def _staged_use(ctx):
    return PullbackError("a sparse jacobian (sparsity=...) cannot be called inside staged code "
                         "(a function pullback stages, jit, grad, vmap, ...)", loc=transforms._where(ctx),
                         hint="call it at top level, where it returns a scipy.sparse array, or use the dense "
                              "pb.jacobian (without sparsity) inside the staged function")


def _api_base():
    from ..api import _Boundary

    return _Boundary


class _Plan:
    """Per argument signature: the pattern, its colouring and the decompression indices."""

    def __init__(self, pattern, colours, mode, out_dtype):
        self.pattern = pattern
        self.colours = colours
        self.ncolours = int(colours.max()) + 1 if len(colours) else 0
        m = pattern.shape[0]
        rows = np.repeat(np.arange(m, dtype=np.int64), np.diff(pattern.indptr))
        cols = pattern.indices
        # the compressed result B is K x m (fwd: B[c] = J @ seed_c) or K x n (rev: B[c] = seed_c @ J)
        self.take = (colours[cols], rows) if mode == "fwd" else (colours[rows], cols)
        self.ids = np.arange(self.ncolours, dtype=np.int64)
        self.out_dtype = out_dtype


class SparseJacobian(_api_base()):
    def __init__(self, fun, argnum, mode, backend, checkpoint, parallel, spec):
        self.fun, self.argnum, self.mode = fun, argnum, mode
        self.backend, self.checkpoint, self.parallel = backend, checkpoint, parallel
        self.spec = spec
        self._plans = {}
        self.__name__ = f"jacobian({getattr(fun, '__name__', 'f')})"

    def __pullback_stage__(self, ctx, args, kwargs):
        raise _staged_use(ctx)

    @property
    def _compressed(self):
        from ..api import _cached, _Transformed

        key = ("sparse_jacobian_compressed", self.argnum, self.mode, self.backend, self.checkpoint, self.parallel)
        argnum, mode, cp = self.argnum, self.mode, self.checkpoint
        return _cached(self.fun, key, lambda: _Transformed(
            lambda ctx, f, a: compressed(ctx, f, a[:-2], a[-2], a[-1], argnum, mode, cp),
            self.fun, self.backend, self.__name__, self.parallel))

    def plan(self, *args):
        """The `_Plan` for these arguments (staging `fun` and detecting the pattern on a first call)."""
        from ..api import _cached, jit
        from ..frontend import signature_key

        key = signature_key(args)
        hit = self._plans.get(key)
        if hit is not None:
            return hit
        primal = _cached(self.fun, ("jit", self.backend, self.parallel),
                         lambda: jit(self.fun, backend=self.backend, parallel=self.parallel))
        st = primal.staged(*args)
        leaves = list(st.prog.main.params)
        lo = _check_signature(self.fun, leaves, st, self.argnum)
        out_t = st.prog.main.ret_types[0]
        m, n = out_t.size, leaves[lo].type.size
        if isinstance(self.spec, str):
            pattern = _auto_pattern(st, lo)
        else:
            pattern = self.spec
            if pattern.shape != (m, n):
                raise PullbackError(f"jacobian: the sparsity pattern has shape {pattern.shape}, but the Jacobian "
                                    f"of this output (size {m}) w.r.t. argument {self.argnum} (size {n}) has shape "
                                    f"{(m, n)}", hint="the pattern has one row per output element and one column "
                                                      "per input element, both flattened in C order")
        from .colour import colour_columns, colour_rows

        colours = colour_columns(pattern) if self.mode == "fwd" else colour_rows(pattern)
        hit = self._plans[key] = _Plan(pattern, colours, self.mode, np.dtype(np_dtype(out_t.dtype)))
        return hit

    def pattern(self, *args, **kwargs):
        """The boolean sparsity pattern (a csr_array) used for these arguments."""
        return self._public(lambda: self._plan_for(args, kwargs).pattern.copy())

    def colours(self, *args, **kwargs):
        """The colour of each column (mode="fwd") or row (mode="rev") for these arguments:
        one jvp or vjp per colour."""
        return self._public(lambda: self._plan_for(args, kwargs).colours.copy())

    def _public(self, fn):
        from ..api import _boundary_error
        from ..errors import debugging

        try:
            return fn()
        except Exception as e:
            if debugging() and not isinstance(e, PullbackError):
                raise
            raise _boundary_error(e) from None

    def _plan_for(self, args, kwargs):
        from ..api import _positional

        if kwargs:
            args = _positional(self.fun, args, kwargs)
        return self.plan(*args)

    def _call(self, args, kwargs):
        from ..api import _positional

        if kwargs:
            args = _positional(self.fun, args, kwargs)
        p = self.plan(*args)
        col_arg = p.colours
        b = np.asarray(self._compressed._call(tuple(args) + (col_arg, p.ids), {}))
        return _decompress(p, b)


def _decompress(p, b):
    import scipy.sparse as sp

    pat = p.pattern
    data = b.reshape(p.ncolours, -1)[p.take] if p.ncolours else np.zeros(0)
    return sp.csr_array((data.astype(p.out_dtype, copy=False), pat.indices.copy(), pat.indptr.copy()),
                        shape=pat.shape)


def _auto_pattern(st, lo):
    from . import deps
    from .detect import detect

    cache = st.__dict__.setdefault("sparsity_patterns", {})
    if lo not in cache:
        try:
            cache[lo] = detect(st.prog, lo)
        except deps.TooDense:
            raise PullbackError("jacobian: sparsity='auto' finds the Jacobian too dense for a sparse result",
                                hint="use the dense pb.jacobian (sparsity=None), or give the pattern") from None
    return cache[lo]


def _check_signature(fun, leaves, st, argnum):
    ranges = transforms._check_diff_args(None, leaves, st.in_tree, (argnum,), "jacobian", fun)
    lo, hi = ranges[argnum]
    rt = st.prog.main.ret_types
    if hi - lo != 1 or st.out_tree.kind != "leaf" or not rt[0].is_float:
        raise PullbackError("jacobian with sparsity supports one array (or scalar) argument and one float array "
                            "(or scalar) output",
                            hint="flatten pytrees into one array first")
    return lo


class _Tuple(_api_base()):
    """Sparse Jacobians w.r.t. several arguments: a tuple of csr_arrays."""

    def __init__(self, parts, fun):
        self.parts, self.fun = parts, fun
        self.__name__ = f"jacobian({getattr(fun, '__name__', 'f')})"

    def __pullback_stage__(self, ctx, args, kwargs):
        raise _staged_use(ctx)

    def _call(self, args, kwargs):
        return tuple(p._call(args, kwargs) for p in self.parts)


def compressed(ctx, fun, args, colours, ids, argnum, mode, checkpoint):
    """Staged: the compressed Jacobian, K x m (fwd: row c is J times the sum of the basis
    vectors of the columns of colour c) or K x n (rev: row c is the sum of the rows of
    colour c), as one loop over the colours (K = `ids`'s length)."""
    fname, leaves, in_tree, _, ret_types = transforms.stage_fn(ctx, fun, args)
    ranges = transforms._check_diff_args(ctx, leaves, in_tree, (argnum,), "jacobian", fun)
    lo, _ = ranges[argnum]
    (cat,), _ = ctx.to_atoms(colours)
    (ids_a,), _ = ctx.to_atoms(ids)
    k = ids_a.type.shape[0]
    xt, yt = leaves[lo].type, ret_types[0]
    b = ctx.builder
    fl = transforms._float_positions(leaves)
    width = yt.size if mode == "fwd" else xt.size
    B = b.zeros(TensorType(yt.dtype, (k, width)), name="jac")
    sb = b.child()
    i = sb.fresh("c", I64)
    Bp = sb.fresh("jac", B.type)
    if mode == "rev":
        vname = transforms._derive(ctx, "vjp", fname, checkpoint)
        e = sb.cast(sb.eq(cat, i), dtype=yt.dtype, name="seed")
        e = sb.reshape(e, shape=tuple(yt.shape), name="seed")
        outs = transforms._apply(sb, vname, list(leaves) + [e], ret_types + [leaves[j].type for j in fl])
        row = outs[len(ret_types) + fl.index(lo)]
    else:
        jname = transforms._derive(ctx, "jvp", fname, active=tuple(j == lo for j in fl))
        e = sb.cast(sb.eq(cat, i), dtype=xt.dtype, name="seed")
        e = sb.reshape(e, shape=tuple(xt.shape), name="seed")
        fo = [j for j, t in enumerate(ret_types) if t.is_float]
        outs = transforms._apply(sb, jname, list(leaves) + [e], ret_types + [ret_types[j] for j in fo])
        row = outs[len(ret_types)]
    row = sb.reshape(row, shape=(width,), name="row")
    if row.type.dtype != yt.dtype:
        row = sb.cast(row, dtype=yt.dtype, name="row")
    Bn = sb.index_update(Bp, row, i, spec=(("d",),), mode="set", name="jac")
    (Bf,) = b.for_loop([Bp], [B], i, Const(k, I64), sb.body([Bn]), names=["jac"])
    return ctx.from_atoms([Bf], TreeDef("leaf"))
