"""`np.linalg` called with traced arguments, registered in `numpy_api.FUNCS`:
`solve`, `inv`, `det`, `slogdet`, `cholesky`, `qr`, `eigh`, `eigvalsh`, `svd`,
`svdvals`, `pinv`, `lstsq`, `matrix_power`, `multi_dot`, `cond`, the SVD-based
matrix norms (`matrix_norm_sv`, called by `np.linalg.norm` in numpy_shape.py),
and NumPy 2's array-API names (`matmul`, `matrix_transpose`, `diagonal`,
`trace`, `vecdot`, `outer`, `tensordot`, `cross`, `matrix_norm`, `vector_norm`).
`np.dot`/`.dot()` of stacks are re-registered here with NumPy's dot semantics.

Contract: every function takes a matrix or a stack of matrices ``(..., m, n)``
as NumPy does (lstsq: one matrix, as NumPy); integer inputs are converted to
float64. Results are NumPy's (namedtuples where NumPy returns them). Each maps
onto one primitive of ir/prims/linalg.py or decomp.py (the stack is the
primitive's: its impl and numba form loop over it) plus `matmul`, reshapes and
elementwise operations. Arguments that select the computation (mode,
full_matrices, compute_uv, UPLO, rcond, n) must be static.
"""
from __future__ import annotations

import numpy as np

from ..errors import ShapeError, StagingError
from ..ir.core import Const
from ..ir.types import TensorType
from . import ops
from .numpy_api import _TAKE_SEQUENCES, FUNCS, METHODS, _reg
from .values import Traced


def _t(st, x) -> Traced:
    return x if isinstance(x, Traced) else ops.as_traced(st, x)


def _float(st, a) -> Traced:
    a = _t(st, a)
    return a if a.type.is_float else ops.cast(st, a, "f64")


def _matrix(st, a, what, square=False) -> Traced:
    a = _float(st, a)
    if a.ndim < 2 or (square and a.shape[-1] != a.shape[-2]):
        kind = "a square matrix" if square else "a matrix"
        raise ShapeError(f"np.linalg.{what} needs {kind} or a stack of them (..., {'n, n' if square else 'm, n'}), "
                         f"got shape {a.shape}")
    return a


def _multi(st, op, a, **params):
    return tuple(Traced(v) for v in st.b.emit_multi(op, a.atom, **params))


def _mT(st, x) -> Traced:
    nd = x.ndim
    return ops.transpose(st, x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _static(v, what):
    if isinstance(v, Traced):
        raise StagingError(f"{what} must be a static value, not a traced one",
                           hint="pass a Python constant")
    return v


def _result(kind, *vals):
    """NumPy's namedtuple result type, when this NumPy has it."""
    from numpy.linalg import _linalg

    cls = getattr(_linalg, kind, None)
    return cls(*vals) if cls is not None else tuple(vals)


# -- solve, inv, det, slogdet ------------------------------------------------------------

@_reg(np.linalg.solve)
def _solve(st, a, b):
    a = _matrix(st, a, "solve", square=True)
    b = _t(st, b)
    if not b.type.is_float:
        b = ops.cast(st, b, a.type.dtype)
    if b.ndim == 1 and a.ndim > 2:   # NumPy's vector case on a stack: b is one column
        x = ops.emit(st, "solve", a.atom, ops.reshape(st, b, (b.shape[0], 1)).atom)
        return ops.reshape(st, x, x.shape[:-1])
    return ops.emit(st, "solve", a.atom, b.atom)


@_reg(np.linalg.inv)
def _inv(st, a):
    a = _matrix(st, a, "inv", square=True)
    n = a.shape[-1]
    return ops.emit(st, "solve", a.atom, Const(np.eye(n), TensorType(a.type.dtype, (n, n))))


@_reg(np.linalg.slogdet)
def _slogdet(st, a):
    a = _matrix(st, a, "slogdet", square=True)
    s, ld = _multi(st, "slogdet", a)
    return _result("SlogdetResult", s, ld)


@_reg(np.linalg.det)
def _det(st, a):
    s, ld = _slogdet(st, a)
    return ops.binary(st, "mul", s, ops.unary(st, "exp", ld))


# -- decompositions -----------------------------------------------------------------------

@_reg(np.linalg.cholesky)
def _cholesky(st, a, upper=False):
    a = _matrix(st, a, "cholesky", square=True)
    if _static(upper, "np.linalg.cholesky's upper"):   # NumPy reads the upper triangle: that of A^T
        return _mT(st, ops.emit(st, "cholesky", _mT(st, a).atom))
    return ops.emit(st, "cholesky", a.atom)


@_reg(np.linalg.qr)
def _qr(st, a, mode="reduced"):
    a = _matrix(st, a, "qr")
    mode = _static(mode, "np.linalg.qr's mode")
    if mode not in ("reduced", "complete", "r"):
        raise StagingError(f"np.linalg.qr(mode={mode!r}) is not supported", hint="use mode='reduced', 'complete' or 'r'")
    m, n = a.shape[-2:]
    q, r = _multi(st, "qr", a, complete=bool(mode == "complete" and m > n))
    return r if mode == "r" else _result("QRResult", q, r)


def _uplo(st, a, UPLO, what):
    a = _matrix(st, a, what, square=True)
    UPLO = _static(UPLO, f"np.linalg.{what}'s UPLO")
    if UPLO not in ("L", "U"):
        raise StagingError(f"np.linalg.{what}: UPLO must be 'L' or 'U', got {UPLO!r}")
    return a if UPLO == "L" else _mT(st, a)   # the upper triangle of A is the lower one of A^T


@_reg(np.linalg.eigh)
def _eigh(st, a, UPLO="L"):
    w, v = _multi(st, "eigh", _uplo(st, a, UPLO, "eigh"))
    return _result("EighResult", w, v)


@_reg(np.linalg.eigvalsh)
def _eigvalsh(st, a, UPLO="L"):
    return _multi(st, "eigh", _uplo(st, a, UPLO, "eigvalsh"))[0]


def singular_values(st, a) -> Traced:
    a = _matrix(st, a, "svd")
    return _multi(st, "svd", a, full=False)[1]


@_reg(np.linalg.svd)
def _svd(st, a, full_matrices=True, compute_uv=True, hermitian=False):
    if _static(hermitian, "np.linalg.svd's hermitian"):
        raise StagingError("np.linalg.svd(..., hermitian=True) is not supported",
                           hint="use np.linalg.eigh for a symmetric matrix, or hermitian=False")
    if not _static(compute_uv, "np.linalg.svd's compute_uv"):
        return singular_values(st, a)
    a = _matrix(st, a, "svd")
    m, n = a.shape[-2:]
    full = bool(_static(full_matrices, "np.linalg.svd's full_matrices")) and m != n
    u, s, vh = _multi(st, "svd", a, full=full)
    return _result("SVDResult", u, s, vh)


if hasattr(np.linalg, "svdvals"):
    _reg(np.linalg.svdvals)(lambda st, x: singular_values(st, x))


@_reg(np.linalg.pinv)
def _pinv(st, a, rcond=None, hermitian=False, **kw):
    a = _matrix(st, a, "pinv")
    if _static(hermitian, "np.linalg.pinv's hermitian"):
        raise StagingError("np.linalg.pinv(..., hermitian=True) is not supported", hint="use hermitian=False")
    if set(kw) - {"rtol"}:
        raise StagingError(f"np.linalg.pinv: unknown arguments {sorted(set(kw) - {'rtol'})}")
    if "rtol" in kw:
        rtol = _static(kw["rtol"], "np.linalg.pinv's rtol")
        rcond = max(a.shape[-2:]) * float(np.finfo(a.dtype).eps) if rtol is None else rtol
    rcond = 1e-15 if rcond is None else _static(rcond, "np.linalg.pinv's rcond")
    if np.ndim(rcond) != 0:
        raise StagingError("np.linalg.pinv: rcond must be one number", hint="pass a float")
    return ops.emit(st, "pinv", a.atom, rcond=float(rcond))


@_reg(np.linalg.lstsq)
def _lstsq(st, a, b, rcond=None):
    """x = pinv(A) b with NumPy's cutoff; residuals, rank and singular values as NumPy
    (the residuals' shape is static: see note [linalg])."""
    a = _matrix(st, a, "lstsq")
    if a.ndim != 2:
        raise ShapeError(f"np.linalg.lstsq needs one matrix, got shape {a.shape}",
                         hint="NumPy's lstsq does not take stacks: loop over them")
    b = _float(st, b)
    m, n = a.shape
    if b.ndim not in (1, 2) or b.shape[0] != m:
        raise ShapeError(f"np.linalg.lstsq: b of shape {b.shape} does not match a of shape {a.shape}")
    rcond = _static(rcond, "np.linalg.lstsq's rcond")
    eps = float(np.finfo(a.dtype).eps)
    rcond = eps * max(m, n) if rcond is None else (eps if rcond < 0 else float(rcond))
    x = ops.matmul(st, ops.emit(st, "pinv", a.atom, rcond=rcond), b)
    s = singular_values(st, a)
    rank = ops.reduce(st, "sum", ops.cast(st, ops.binary(st, "gt", s, ops.binary(
        st, "mul", ops.reduce(st, "max", s), rcond)), "i64")) if min(m, n) else Const(0, TensorType("i64"))
    if m > n:
        r = ops.binary(st, "sub", b, ops.matmul(st, a, x))
        res = ops.reduce(st, "sum", ops.binary(st, "mul", r, r), 0)
        if b.ndim == 1:
            res = ops.reshape(st, res, (1,))
    else:
        res = Traced(Const(np.zeros(0), TensorType(x.type.dtype, (0,))))
    return x, res, rank if isinstance(rank, Traced) else Traced(rank), s


@_reg(np.linalg.matrix_power)
def _matrix_power(st, a, n):
    a = _t(st, a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"np.linalg.matrix_power needs a square matrix or a stack of them, got shape {a.shape}")
    n = ops.static_int(n, "np.linalg.matrix_power's n")
    if n == 0:
        eye = Traced(Const(np.eye(a.shape[-1]), TensorType(a.type.dtype if a.type.is_float else "f64",
                                                             (a.shape[-1],) * 2)))
        return ops.cast(st, ops.broadcast_to(st, eye, a.shape), a.type.dtype)
    if n < 0:
        a, n = _inv(st, a), -n
    result, z = None, a
    while n:   # repeated squaring: about 2 log2(n) products
        if n & 1:
            result = z if result is None else ops.matmul(st, result, z)
        n >>= 1
        if n:
            z = ops.matmul(st, z, z)
    return result


# -- norms through singular values --------------------------------------------------------

def matrix_norm_sv(st, x, axes, ord, keepdims):
    """np.linalg.norm's ord 2, -2 and "nuc" over the axis pair `axes` of `x`: the
    largest, smallest and summed singular values."""
    r0, r1 = axes
    rest = [i for i in range(x.ndim) if i not in (r0, r1)]
    xt = ops.transpose(st, x, tuple(rest) + (r0, r1))
    s = singular_values(st, xt)
    op = {2: "max", -2: "min", "nuc": "sum"}[ord]
    r = ops.reduce(st, op, s, s.ndim - 1)
    if keepdims:
        r = ops.reshape(st, r, tuple(1 if i in (r0, r1) else d for i, d in enumerate(x.shape)))
    return r


# -- np.dot of stacks: NumPy's dot is not matmul for rank > 2 --------------------------------

_plain_dot = FUNCS[np.dot]


def _dot(st, a, b):
    """np.dot(a, b) contracts a's last axis with b's second-to-last; for ranks <= 2 it
    is matmul (the registered form), above that a tensordot (not matmul's stacking)."""
    ta, tb = (x.type if isinstance(x, Traced) else np.asarray(x) for x in (a, b))
    if ta.ndim <= 2 and tb.ndim <= 2 or ta.ndim == 0 or tb.ndim == 0:
        return _plain_dot(st, a, b)
    from .numpy_contract import _tensordot

    return _tensordot(st, a, b, ([ta.ndim - 1], [max(tb.ndim - 2, 0)]))


FUNCS[np.dot] = _dot
METHODS["dot"] = lambda st, x, y: _dot(st, x, y)


if hasattr(np.linalg, "matmul"):   # NumPy 2's array-API alias
    _reg(np.linalg.matmul)(lambda st, a, b: ops.matmul(st, a, b))


# -- NumPy 2's array-API functions in np.linalg, and multi_dot / cond --------------------------

def _reg_if(name):
    return _reg(getattr(np.linalg, name, None))


@_reg_if("matrix_transpose")
def _matrix_transpose(st, x):
    x = _t(st, x)
    if x.ndim < 2:
        raise ShapeError(f"np.linalg.matrix_transpose needs at least 2 dimensions, got shape {x.shape}")
    return _mT(st, x)


def _diag_stack(st, x, offset):
    """The diagonals of the last two axes: (..., n, m) -> (..., L)."""
    n, m = x.shape[-2:]
    off = ops.static_int(offset, "the diagonal offset")
    rows = np.arange(max(0, -off), min(n, m - off))
    idx = (rows * m + rows + off).astype(np.int64)
    flat = ops.reshape(st, x, x.shape[:-2] + (n * m,))
    return ops.emit(st, "take", flat.atom, Const(idx, TensorType("i64", idx.shape)), axis=flat.ndim - 1)


@_reg_if("diagonal")
def _la_diagonal(st, x, offset=0):
    x = _t(st, x)
    if x.ndim < 2:
        raise ShapeError(f"np.linalg.diagonal needs at least 2 dimensions, got shape {x.shape}")
    return _diag_stack(st, x, offset)


@_reg_if("trace")
def _la_trace(st, x, offset=0, dtype=None):
    x = _t(st, x)
    if x.ndim < 2:
        raise ShapeError(f"np.linalg.trace needs at least 2 dimensions, got shape {x.shape}")
    d = _diag_stack(st, x, offset)
    return ops.reduce(st, "sum", d, d.ndim - 1, dtype=dtype)


@_reg_if("vecdot")
def _vecdot(st, x1, x2, axis=-1):
    return ops.reduce(st, "sum", ops.binary(st, "mul", x1, x2), _static(axis, "np.linalg.vecdot's axis"))


@_reg_if("outer")
def _la_outer(st, x1, x2):
    a, b = _t(st, x1), _t(st, x2)
    if a.ndim != 1 or b.ndim != 1:
        raise ShapeError(f"np.linalg.outer needs two vectors, got shapes {a.shape} and {b.shape}")
    return FUNCS[np.outer](st, a, b)


if hasattr(np.linalg, "tensordot"):
    _reg(np.linalg.tensordot)(lambda st, a, b, axes=2: FUNCS[np.tensordot](st, a, b, axes=axes))
if hasattr(np.linalg, "cross"):
    _reg(np.linalg.cross)(lambda st, a, b, axis=-1: FUNCS[np.cross](st, a, b, axis=axis))


@_reg_if("matrix_norm")
def _matrix_norm(st, x, keepdims=False, ord="fro"):
    x = _float(st, x)
    if x.ndim < 2:
        raise ShapeError(f"np.linalg.matrix_norm needs at least 2 dimensions, got shape {x.shape}")
    return FUNCS[np.linalg.norm](st, x, ord, (-2, -1), keepdims)


@_reg_if("vector_norm")
def _vector_norm(st, x, axis=None, keepdims=False, ord=2):
    x = _float(st, x)
    if axis is None:   # over all elements, as a vector
        r = FUNCS[np.linalg.norm](st, ops.reshape(st, x, (x.size,)), ord)
        return ops.reshape(st, r, (1,) * x.ndim) if keepdims else r
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    if len(axes) == 1:
        return FUNCS[np.linalg.norm](st, x, ord, axes[0], keepdims)
    axes = ops.norm_axes(axes, x.ndim)   # several axes: move them last and flatten them
    rest = [i for i in range(x.ndim) if i not in axes]
    xt = ops.transpose(st, x, tuple(rest) + axes)
    flat = ops.reshape(st, xt, tuple(x.shape[i] for i in rest) + (-1,))
    r = FUNCS[np.linalg.norm](st, flat, ord, -1)
    if keepdims:
        r = ops.reshape(st, r, tuple(1 if i in axes else d for i, d in enumerate(x.shape)))
    return r


@_reg(np.linalg.multi_dot)
def _multi_dot(st, arrays, out=None):
    """The chain of products, in NumPy's cheapest order (the matrix-chain dynamic
    programme over the static shapes); vectors at the ends as NumPy."""
    if out is not None:
        raise StagingError("np.linalg.multi_dot(..., out=) is not supported")
    xs = [_t(st, a) for a in arrays]
    if len(xs) < 2:
        raise ShapeError("np.linalg.multi_dot needs at least two arrays")
    first_vec, last_vec = xs[0].ndim == 1, xs[-1].ndim == 1
    if first_vec:
        xs[0] = ops.reshape(st, xs[0], (1, xs[0].shape[0]))
    if last_vec:
        xs[-1] = ops.reshape(st, xs[-1], (xs[-1].shape[0], 1))
    if any(x.ndim != 2 for x in xs):
        raise ShapeError("np.linalg.multi_dot needs 2-D arrays (the first and last may be vectors)")
    dims = [xs[0].shape[0]] + [x.shape[1] for x in xs]
    k = len(xs)
    cost = [[0] * k for _ in range(k)]
    split = [[0] * k for _ in range(k)]
    for length in range(1, k):
        for i in range(k - length):
            j = i + length
            cost[i][j] = None
            for s in range(i, j):
                c = cost[i][s] + cost[s + 1][j] + dims[i] * dims[s + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, s

    def chain(i, j):
        if i == j:
            return xs[i]
        s = split[i][j]
        return ops.matmul(st, chain(i, s), chain(s + 1, j))

    r = chain(0, k - 1)
    if first_vec or last_vec:
        r = ops.reshape(st, r, tuple(d for d, drop in zip(r.shape, (first_vec, last_vec)) if not drop))
    return r


_TAKE_SEQUENCES.add(np.linalg.multi_dot)   # its argument is a list of arrays, not one array


@_reg(np.linalg.cond)
def _cond(st, x, p=None):
    """p None/2/-2: the ratio of the extreme singular values; other p: norm(x, p) * norm(inv(x), p)."""
    x = _matrix(st, x, "cond")
    p = _static(p, "np.linalg.cond's p")
    if p in (None, 2, -2):
        s = singular_values(st, x)
        hi, lo = ops.reduce(st, "max", s, s.ndim - 1), ops.reduce(st, "min", s, s.ndim - 1)
        return ops.binary(st, "div", hi, lo) if p != -2 else ops.binary(st, "div", lo, hi)
    if x.shape[-1] != x.shape[-2]:
        raise ShapeError(f"np.linalg.cond with p={p!r} needs a square matrix, got shape {x.shape}")
    norm = FUNCS[np.linalg.norm]
    return ops.binary(st, "mul", norm(st, x, p, (-2, -1)), norm(st, _inv(st, x), p, (-2, -1)))
