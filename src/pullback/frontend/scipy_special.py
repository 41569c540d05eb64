"""SciPy functions called with traced arguments (`scipy.special`), registered
in `numpy_api.FUNCS` on first use of a SciPy function (imported lazily by
`numpy_api.lookup`, so that importing pullback does not import SciPy).

Contract: importing this module registers handlers for `logsumexp` (axis,
keepdims, ``b=`` weights; ``return_sign=False`` only), `softmax`,
`log_softmax` (axis), `expit`, `logit`, `xlogy`, `xlog1py`, `ndtr` (composed
from primitives) and `erf`, `erfc`, `erfinv`, `gammaln`, `gamma`, `digamma`
(= `psi`), `polygamma` (static integer order), `log_ndtr`, `betaln` (on the
primitives of `ir/prims/special.py`). Values follow SciPy's, derivatives
follow note [edge-numerics]:

- the max shift of `logsumexp`/`softmax`/`log_softmax` is a `stop_gradient`
  constant (it cancels exactly), replaced by 0 where the max is not finite,
  as SciPy does: -inf entries get a zero derivative, all -inf gives -inf;
- ``xlogy(0, y) = 0`` for every y but NaN; the log's argument is guarded
  only where ``x == 0`` and log(y) is not finite (y <= 0 or y = inf), so for
  0 < y < inf the derivative in x at x = 0 is log(y), and at the guarded
  points every derivative is 0 (finite), never NaN. `xlog1py` likewise.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.special as sp

from ..errors import StagingError
from . import ops
from .numpy_api import _reg
from .values import Traced, leaf_type


def _f(st, x) -> Traced:
    """`x` as a traced float array (integers and booleans become f64, as in SciPy)."""
    x = x if isinstance(x, Traced) else ops.as_traced(st, x)
    return x if x.type.is_float else ops.cast(st, x, "f64")


def _no_extra(name, kw):
    bad = sorted(k for k, v in kw.items() if v is not None)
    if bad:
        raise StagingError(f"scipy.special.{name}: arguments {bad} are not supported with traced values",
                           hint="use the returned value (out=, where=, dtype=, ... are not supported)")


def _unary(name, prim=None, compose=None):
    def h(st, x, **kw):
        _no_extra(name, kw)
        x = _f(st, x)
        return compose(st, x) if compose is not None else ops.emit(st, prim, x.atom)
    return h


def _neg(st, x):
    return ops.emit(st, "neg", x.atom)


# -- elementwise -------------------------------------------------------------------------

_reg(sp.erf)(_unary("erf", "erf"))
_reg(sp.erfc)(_unary("erfc", "erfc"))
_reg(sp.erfinv)(_unary("erfinv", "erfinv"))
_reg(sp.gammaln)(_unary("gammaln", "gammaln"))
_reg(sp.gamma)(_unary("gamma", "gamma"))
_reg(sp.log_ndtr)(_unary("log_ndtr", "log_ndtr"))
_reg(sp.expit)(_unary("expit", compose=lambda st, x: _expit(st, x)))
_reg(sp.digamma, sp.psi)(_unary("digamma", compose=lambda st, x: ops.emit(st, "polygamma", x.atom, n=0)))
_reg(sp.logit)(_unary("logit", compose=lambda st, x: _logit(st, x)))
# ndtr(x) = erfc(-x / sqrt 2) / 2: accurate in both tails (sqrt(0.5) is 1/sqrt 2 correctly rounded)
_reg(sp.ndtr)(_unary("ndtr", compose=lambda st, x: ops.binary(
    st, "mul", ops.emit(st, "erfc", ops.binary(st, "mul", x, -math.sqrt(0.5)).atom), 0.5)))


def _expit(st, x):
    """1 / (1 + e^-x) for x >= 0, e^x / (1 + e^x) below: no cancellation in either
    tail (the `logistic` row's tanh form loses all digits for x < -20 or so).
    The branch is chosen inside the exp, so the derivative at 0 is the smooth one."""
    nonneg = ops.binary(st, "ge", x, 0.0)
    e = ops.unary(st, "exp", ops.where(st, nonneg, _neg(st, x), x))
    r = ops.binary(st, "div", 1.0, ops.binary(st, "add", e, 1.0))
    return ops.where(st, nonneg, r, ops.binary(st, "mul", e, r))


def _logit(st, x):
    """log(x) - log1p(-x), and log1p(2 (x - 1/2) / (1 - x)) on [0.3, 0.65], where the
    first loses digits (SciPy's branches). Both have derivative 1 / (x (1 - x)),
    term by term, so it is +inf at 0 and at 1 (log(x / (1 - x)) would give
    0 * inf = 0 at 1 by the strong product)."""
    mid = ops.binary(st, "and", ops.binary(st, "ge", x, 0.3), ops.binary(st, "le", x, 0.65))
    one_m = ops.binary(st, "sub", 1.0, x)
    far = ops.binary(st, "sub", ops.unary(st, "log", x), ops.unary(st, "log1p", _neg(st, x)))
    near = ops.unary(st, "log1p", ops.binary(st, "div", ops.binary(st, "mul", ops.binary(st, "sub", x, 0.5), 2.0),
                                              one_m))
    return ops.where(st, mid, near, far)


@_reg(sp.polygamma)
def _polygamma(st, n, x):
    if isinstance(n, Traced):
        raise StagingError("scipy.special.polygamma: the order n must be a static integer, not a traced value",
                           hint="pass a Python int, or mark the argument static")
    nn = np.asarray(n)
    if nn.ndim != 0 or nn.dtype.kind not in "iu" and not (nn.dtype.kind == "f" and float(nn) == int(nn)):
        raise StagingError(f"scipy.special.polygamma: the order n must be one integer, got {n!r}")
    if int(nn) < 0:
        raise StagingError(f"scipy.special.polygamma: the order n must be >= 0, got {int(nn)}")
    return ops.emit(st, "polygamma", _f(st, x).atom, n=int(nn))


@_reg(sp.betaln)
def _betaln(st, a, b, **kw):
    """log|B(a, b)| = gammaln(a) + gammaln(b) - gammaln(a + b); derivatives
    digamma(a) - digamma(a + b) and digamma(b) - digamma(a + b)."""
    _no_extra("betaln", kw)
    a, b = _f(st, a), _f(st, b)
    ga, gb = ops.emit(st, "gammaln", a.atom), ops.emit(st, "gammaln", b.atom)
    gab = ops.emit(st, "gammaln", ops.binary(st, "add", a, b).atom)
    return ops.binary(st, "sub", ops.binary(st, "add", ga, gb), gab)


def _xlog(name, log_op, bad_y):
    def h(st, x, y, **kw):
        _no_extra(name, kw)
        x, y = _f(st, x), _f(st, y)
        guard = ops.binary(st, "and", ops.binary(st, "eq", x, 0.0), bad_y(st, y))
        safe = ops.where(st, guard, 1.0 if log_op == "log" else 0.0, y)
        return ops.binary(st, "mul", x, ops.unary(st, log_op, safe))
    return h


_reg(sp.xlogy)(_xlog("xlogy", "log", lambda st, y: ops.binary(
    st, "or", ops.binary(st, "le", y, 0.0), ops.binary(st, "eq", y, math.inf))))
_reg(sp.xlog1py)(_xlog("xlog1py", "log1p", lambda st, y: ops.binary(
    st, "or", ops.binary(st, "le", y, -1.0), ops.binary(st, "eq", y, math.inf))))


# -- reductions ----------------------------------------------------------------------------

def _shift(st, x, axes, finite_only):
    """The max over `axes` (kept), as a constant of differentiation; 0 where it is
    not finite when `finite_only` (SciPy's logsumexp/log_softmax)."""
    m = ops.reduce(st, "max", x, axis=axes, keepdims=True)
    if finite_only:
        m = ops.where(st, ops.binary(st, "lt", ops.unary(st, "abs", m), math.inf), m, 0.0)
    return ops.emit(st, "stop_gradient", m.atom)


def _axes(x, axis):
    return ops.norm_axes(axis, x.ndim)


@_reg(sp.logsumexp)
def _logsumexp(st, a, axis=None, b=None, keepdims=False, return_sign=False):
    if return_sign is not False:
        raise StagingError("scipy.special.logsumexp: return_sign=True is not supported with traced values",
                           hint="use return_sign=False (negative sums give NaN)")
    a = _f(st, a)
    if b is not None:
        b = _f(st, b)
        shape = tuple(np.broadcast_shapes(tuple(a.shape), tuple(leaf_type(b).shape)))
        if tuple(a.shape) != shape:
            a = ops.broadcast_to(st, a, shape)
    axes = _axes(a, axis)
    m = _shift(st, a, axes, True)
    e = ops.unary(st, "exp", ops.binary(st, "sub", a, m))
    if b is not None:
        e = ops.binary(st, "mul", b, e)
    s = ops.reduce(st, "sum", e, axis=axes, keepdims=True)
    out = ops.binary(st, "add", ops.unary(st, "log", s), m)
    if not keepdims:
        out = ops.reshape(st, out, tuple(d for i, d in enumerate(a.shape) if i not in axes))
    return out


@_reg(sp.softmax)
def _softmax(st, x, axis=None):
    x = _f(st, x)
    axes = _axes(x, axis)
    e = ops.unary(st, "exp", ops.binary(st, "sub", x, _shift(st, x, axes, False)))
    return ops.binary(st, "div", e, ops.reduce(st, "sum", e, axis=axes, keepdims=True))


@_reg(sp.log_softmax)
def _log_softmax(st, x, axis=None):
    x = _f(st, x)
    axes = _axes(x, axis)
    t = ops.binary(st, "sub", x, _shift(st, x, axes, True))
    s = ops.reduce(st, "sum", ops.unary(st, "exp", t), axis=axes, keepdims=True)
    return ops.binary(st, "sub", t, ops.unary(st, "log", s))
