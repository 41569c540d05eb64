"""Matrix decompositions: `cholesky`, `qr`, `eigh`, `svd`, `pinv`, each on a
matrix or a stack of matrices ``(..., m, n)`` (the stack maps over the leading
axes, as NumPy's `np.linalg`).

Contract (outputs in NumPy's order):

- ``cholesky(a) -> L``: lower factor of a symmetric positive definite matrix.
- ``qr(a, complete) -> (Q, R)``: reduced (``complete=False``; Q ``(m, k)``, R
  ``(k, n)``, k = min(m, n)) or complete (Q ``(m, m)``, R ``(m, n)``; the
  frontend passes ``complete=True`` only when m > n, the one case where it
  differs).
- ``eigh(a) -> (w, V)``: ascending eigenvalues and eigenvectors, reading the
  lower triangle (NumPy's ``UPLO="L"``).
- ``svd(a, full) -> (U, s, Vh)``: reduced (``full=False``) or full matrices.
- ``pinv(a, rcond) -> X``: the Moore-Penrose inverse, singular values
  ``<= rcond * max(s)`` cut.

Derivatives (note [linalg] in docs/design.md): cholesky and eigh are
differentiated as the functions NumPy computes, which read only the lower
triangle (the symmetric matrix tril(A) + tril(A, -1)^T), as Autograd does: the
cotangent lies on the lower triangle and agrees with finite differences for
any input (JAX symmetrizes instead; both agree for a symmetric A built from
the inputs). Cholesky: Murray (2016). QR:
Walter & Lehmann / Townsend for m >= n; m < n splits A = [X | Y] with
R = [R1 | Q^T Y]. eigh: the standard rule (JAX); SVD: Townsend (2016) with
JAX's F matrix; pinv: Golub & Pereyra (constant rank). Eigenvector and
singular-vector rules divide by differences of eigen/singular values: for
repeated values they give inf/NaN (as JAX). A cotangent that is exactly zero
enters through strong products (`smul`), so the values-only paths (eigvalsh,
singular values, spectral/nuclear norms) stay finite, and a vector rule is
finite too where the cotangent (or tangent) has no component mixing the
repeated values; otherwise it is inf/NaN, never a finite wrong number. Complete QR with m > n
and full-matrix SVD of a non-square matrix have no derivative (the extra
columns are not unique): a located `MissingRuleError` says what to pass.

Each rule is written once with `matmul`/`solve` on stacks (see `linalg`); the
impls are NumPy's, and the numba forms call LAPACK through numba's
`np.linalg` per matrix (backends/libcalls/linalg.py).
"""
from __future__ import annotations

import numpy as np

from ...errors import MissingRuleError
from ..types import TensorType
from . import TABLE, Row, check
from ._util import smul
from .linalg import (add_all, as_col, as_row, batch_shape, const_like, diag_embed, diag_part, eye_like,
                     mT, nbatch, square_float)


def _float_matrix(t, what):
    check(t.ndim >= 2 and t.is_float, f"{what} needs a float matrix or a stack of them, got {t}",
          hint=f"np.linalg.{what}(A) with A of shape (..., m, n)")


def _lower_sym(bd, x):
    """The symmetric matrix NumPy's cholesky/eigh read from x: its lower triangle
    mirrored, tril(x) + tril(x, -1)^T."""
    n = x.type.shape[-1]
    low = bd.mul(x, _mask(x, n, -1, True))
    return bd.add(bd.add(low, mT(bd, low)), bd.mul(x, eye_like(x, n)))


def _fold_lower(bd, x):
    """The transpose of `_lower_sym` (a cotangent on the lower triangle): for the
    symmetric gradient G = (x + x^T)/2, diag(G) on the diagonal and 2 G below it."""
    n = x.type.shape[-1]
    return bd.add(bd.mul(bd.add(x, mT(bd, x)), _mask(x, n, -1, True)), bd.mul(x, eye_like(x, n)))


def _mask(x, n, k, lower):
    """A 0/1 constant: the lower (tril(., k)) or upper (triu(., k)) triangle."""
    m = np.tril(np.ones((n, n)), k) if lower else np.triu(np.ones((n, n)), k)
    return const_like(x, m)


def _solve(bd, a, b):
    return bd.emit("solve", a, b)


def _cost(per):
    def cost(ts, outs, **p):
        t = ts[0]
        m, n = t.shape[-2], t.shape[-1]
        return int(max(nbatch(t), 1) * per(m, n))
    return cost


# -- cholesky ------------------------------------------------------------------------------

def _chol_type(ts):
    (a,) = ts
    square_float(a, "cholesky")
    return (a,)


def _chol_jvp(bd, args, tans, outs):
    """dL = L Phi(L^-1 dA_s L^-T), Phi: the lower triangle with the diagonal halved."""
    (ta,) = tans
    (L,) = outs
    n = L.type.shape[-1]
    y = _solve(bd, L, _lower_sym(bd, ta))          # L^-1 dA_s
    x = mT(bd, _solve(bd, L, mT(bd, y)))           # L^-1 dA_s L^-T
    phi = const_like(L, np.tril(np.ones((n, n))) - 0.5 * np.eye(n))
    return [bd.matmul(L, bd.mul(x, phi))]


def _chol_vjp(bd, args, outs, cts, need):
    """Abar = L^-T Phi(L^T Lbar) L^-1 (Murray 2016), folded onto the lower triangle."""
    (L,) = outs
    (g,) = cts
    n = L.type.shape[-1]
    phi = const_like(L, np.tril(np.ones((n, n))) - 0.5 * np.eye(n))
    p = bd.mul(bd.matmul(mT(bd, L), g), phi)
    lt = mT(bd, L)
    z = _solve(bd, lt, p)                          # L^-T P
    s = mT(bd, _solve(bd, lt, mT(bd, z)))          # L^-T P L^-1
    return [_fold_lower(bd, s)]


TABLE.add(Row("cholesky", _chol_type, lambda a: np.linalg.cholesky(a), _chol_jvp, _chol_vjp,
              _cost(lambda m, n: n ** 3 // 3 + n * n)))


# -- qr ------------------------------------------------------------------------------------

def _qr_type(ts, complete):
    (a,) = ts
    _float_matrix(a, "qr")
    m, n = a.shape[-2:]
    k = m if complete else min(m, n)
    b = batch_shape(a)
    return (TensorType(a.dtype, b + (m, k)), TensorType(a.dtype, b + (k, n)))


def _qr_impl(a, complete):
    q, r = np.linalg.qr(a, mode="complete" if complete else "reduced")
    return q, r


def _refuse_qr(bd, complete):
    if complete:
        raise MissingRuleError("np.linalg.qr(..., mode='complete') of a matrix with more rows than columns "
                               "has no derivative (the extra columns of Q are not unique)", loc=bd.loc,
                               hint="use mode='reduced' (the default) in code you differentiate")


def _rinv_right(bd, y, r):
    """Y R^-1 per matrix, as (R^-T Y^T)^T."""
    return mT(bd, _solve(bd, mT(bd, r), mT(bd, y)))


def _rinv_t_right(bd, y, r):
    """Y R^-T per matrix, as (R^-1 Y^T)^T."""
    return mT(bd, _solve(bd, r, mT(bd, y)))


def _qr_tall_jvp(bd, q, r, da):
    """m >= n: C = Q^T dA R^-1, Omega = tril(C, -1) - tril(C, -1)^T;
    dQ = Q (Omega - C) + dA R^-1, dR = (C - Omega) R."""
    n = r.type.shape[-1]
    dar = _rinv_right(bd, da, r)
    c = bd.matmul(mT(bd, q), dar)
    low = bd.mul(c, _mask(c, n, -1, True))
    om = bd.sub(low, mT(bd, low))
    dq = bd.add(bd.matmul(q, bd.sub(om, c)), dar)
    dr = bd.matmul(bd.sub(c, om), r)
    return dq, dr


def _qr_tall_vjp(bd, q, r, qbar, rbar):
    """M = Rbar R^T - Q^T Qbar, Cbar = triu(M) + triu(M, 1)^T, Abar = (Qbar + Q Cbar) R^-T."""
    n = r.type.shape[-1]
    m_ = add_all(bd, [None if rbar is None else bd.matmul(rbar, mT(bd, r)),
                      None if qbar is None else bd.neg(bd.matmul(mT(bd, q), qbar))])
    up1 = bd.mul(m_, _mask(m_, n, 1, False))
    cbar = bd.add(bd.mul(m_, _mask(m_, n, 0, False)), mT(bd, up1))
    y = bd.matmul(q, cbar)
    if qbar is not None:
        y = bd.add(y, qbar)
    return _rinv_t_right(bd, y, r)


def _split_last(bd, x, m):
    nd = x.type.ndim
    n = x.type.shape[-1]
    whole = tuple(("s", 0, d, 1) for d in x.type.shape[:-1])
    left = bd.index(x, spec=whole + (("s", 0, m, 1),))
    right = bd.index(x, spec=whole + (("s", m, n, 1),))
    return left, right, nd - 1


def _qr_jvp(bd, args, tans, outs, complete):
    _refuse_qr(bd, complete)
    (a,) = args
    (ta,) = tans
    q, r = outs
    m, n = a.type.shape[-2:]
    if m >= n:
        return list(_qr_tall_jvp(bd, q, r, ta))
    # m < n: A = [X | Y], Q R1 = X, R2 = Q^T Y
    r1, _ = _split_last(bd, r, m)[:2]
    dx, dy, ax = _split_last(bd, ta, m)
    _, y, _ = _split_last(bd, a, m)
    dq, dr1 = _qr_tall_jvp(bd, q, r1, dx)
    dr2 = bd.add(bd.matmul(mT(bd, dq), y), bd.matmul(mT(bd, q), dy))
    return [dq, bd.concatenate(dr1, dr2, axis=ax)]


def _qr_vjp(bd, args, outs, cts, need, complete):
    _refuse_qr(bd, complete)
    (a,) = args
    q, r = outs
    qbar, rbar = cts
    m, n = a.type.shape[-2:]
    if m >= n:
        return [_qr_tall_vjp(bd, q, r, qbar, rbar)]
    r1, _, ax = _split_last(bd, r, m)
    _, y, _ = _split_last(bd, a, m)
    r1bar = ybar = None
    if rbar is not None:
        r1bar, r2bar, _ = _split_last(bd, rbar, m)
        qbar = add_all(bd, [qbar, bd.matmul(y, mT(bd, r2bar))])
        ybar = bd.matmul(q, r2bar)
    else:
        ybar = bd.zeros(y.type)
    xbar = _qr_tall_vjp(bd, q, r1, qbar, r1bar)
    return [bd.concatenate(xbar, ybar, axis=ax)]


TABLE.add(Row("qr", _qr_type, _qr_impl, _qr_jvp, _qr_vjp,
              _cost(lambda m, n: 2 * m * n * min(m, n) + m * min(m, n) ** 2), multi=True))


# -- eigh ----------------------------------------------------------------------------------

def _eigh_type(ts):
    (a,) = ts
    square_float(a, "eigh")
    return (TensorType(a.dtype, tuple(a.shape[:-1])), a)


def _eigh_impl(a):
    w, v = np.linalg.eigh(a, UPLO="L")
    return w, v


def _gap_inverse(bd, w, squares=False):
    """F[i, j] = 1 / (w_j - w_i) off the diagonal (1 / (w_j^2 - w_i^2) with
    `squares`), 0 on it: inf where two values are equal."""
    k = w.type.shape[-1]
    row, col = as_row(bd, w), as_col(bd, w)
    d = bd.sub(row, col)
    if squares:
        d = bd.mul(bd.add(row, col), d)
    eye = eye_like(w, k)
    return bd.sub(bd.div(const_like(w, 1.0), bd.add(d, eye)), eye)


def _eigh_jvp(bd, args, tans, outs):
    """dw = diag(V^T dA_s V); dV = V (F o V^T dA_s V)."""
    (ta,) = tans
    w, v = outs
    m = bd.matmul(mT(bd, v), bd.matmul(_lower_sym(bd, ta), v))
    dw = diag_part(bd, m)
    dv = bd.matmul(v, smul(bd, _gap_inverse(bd, w), m))
    return [dw, dv]


def _eigh_vjp(bd, args, outs, cts, need):
    """Abar = V (diag(wbar) + F o (V^T Vbar)) V^T, folded onto the lower triangle."""
    w, v = outs
    wbar, vbar = cts
    inner = add_all(bd, [None if wbar is None else diag_embed(bd, wbar),
                         None if vbar is None else smul(bd, _gap_inverse(bd, w), bd.matmul(mT(bd, v), vbar))])
    return [_fold_lower(bd, bd.matmul(v, bd.matmul(inner, mT(bd, v))))]


TABLE.add(Row("eigh", _eigh_type, _eigh_impl, _eigh_jvp, _eigh_vjp, _cost(lambda m, n: 9 * n ** 3),
              multi=True))


# -- svd -----------------------------------------------------------------------------------

def _svd_type(ts, full):
    (a,) = ts
    _float_matrix(a, "svd")
    m, n = a.shape[-2:]
    k = min(m, n)
    b = batch_shape(a)
    ku, kv = (m, n) if full else (k, k)
    return (TensorType(a.dtype, b + (m, ku)), TensorType(a.dtype, b + (k,)), TensorType(a.dtype, b + (kv, n)))


def _svd_impl(a, full):
    u, s, vh = np.linalg.svd(a, full_matrices=full)
    return u, s, vh


def _refuse_svd(bd, a, full):
    m, n = a.type.shape[-2:]
    if full and m != n:
        raise MissingRuleError("np.linalg.svd with full_matrices=True of a non-square matrix has no derivative "
                               "(the extra singular vectors are not unique)", loc=bd.loc,
                               hint="pass full_matrices=False (or compute_uv=False for the singular values)")


def _svd_jvp(bd, args, tans, outs, full):
    """Townsend (2016), as JAX: dS = U^T dA V, ds = diag(dS),
    dU = U (F o (dS S + S dS^T)) [+ (I - U U^T) dA V S^-1 when m > n],
    dV = V (F o (S dS + dS^T S)) [+ (I - V V^T) dA^T U S^-1 when n > m]."""
    (a,) = args
    _refuse_svd(bd, a, full)
    (ta,) = tans
    u, s, vh = outs
    m, n = a.type.shape[-2:]
    v = mT(bd, vh)
    ds_m = bd.matmul(mT(bd, u), bd.matmul(ta, v))
    ds = diag_part(bd, ds_m)
    f = _gap_inverse(bd, s, squares=True)
    srow, scol = as_row(bd, s), as_col(bd, s)
    dss = bd.mul(ds_m, srow)
    sds = bd.mul(scol, ds_m)
    du = bd.matmul(u, smul(bd, f, bd.add(dss, mT(bd, dss))))
    dv = bd.matmul(v, smul(bd, f, bd.add(sds, mT(bd, sds))))
    inv_s = bd.div(const_like(s, 1.0), srow) if m != n else None
    if m > n:
        dav = bd.matmul(ta, v)
        du = bd.add(du, smul(bd, bd.sub(dav, bd.matmul(u, bd.matmul(mT(bd, u), dav))), inv_s))
    if n > m:
        dau = bd.matmul(mT(bd, ta), u)
        dv = bd.add(dv, smul(bd, bd.sub(dau, bd.matmul(v, bd.matmul(vh, dau))), inv_s))
    return [du, ds, mT(bd, dv)]


def _svd_vjp(bd, args, outs, cts, need, full):
    """Abar = U [diag(sbar) + (J + J^T) S + S (K + K^T)] V^T, J = F o (U^T Ubar),
    K = F o (V^T Vbar), plus the terms of the orthogonal complements."""
    (a,) = args
    _refuse_svd(bd, a, full)
    u, s, vh = outs
    ubar, sbar, vhbar = cts
    m, n = a.type.shape[-2:]
    srow, scol = as_row(bd, s), as_col(bd, s)
    terms = [None if sbar is None else diag_embed(bd, sbar)]
    f = _gap_inverse(bd, s, squares=True) if (ubar is not None or vhbar is not None) else None
    inv_s = bd.div(const_like(s, 1.0), srow) if f is not None and m != n else None
    extra = []
    if ubar is not None:
        utg = bd.matmul(mT(bd, u), ubar)
        j = smul(bd, f, utg)
        terms.append(bd.mul(bd.add(j, mT(bd, j)), srow))
        if m > n:   # (I - U U^T) Ubar S^-1 V^T
            resid = bd.sub(ubar, bd.matmul(u, utg))
            extra.append(bd.matmul(smul(bd, resid, inv_s), vh))
    if vhbar is not None:
        vbar = mT(bd, vhbar)
        vtg = bd.matmul(vh, vbar)
        kk = smul(bd, f, vtg)
        terms.append(bd.mul(scol, bd.add(kk, mT(bd, kk))))
        if n > m:   # U S^-1 ((I - V V^T) Vbar)^T
            resid = bd.sub(vbar, bd.matmul(mT(bd, vh), vtg))
            extra.append(bd.matmul(u, mT(bd, smul(bd, resid, inv_s))))
    inner = add_all(bd, terms)
    core = bd.matmul(u, bd.matmul(inner, vh))
    return [add_all(bd, [core] + extra)]


TABLE.add(Row("svd", _svd_type, _svd_impl, _svd_jvp, _svd_vjp,
              _cost(lambda m, n: 4 * m * n * min(m, n) + 8 * min(m, n) ** 3), multi=True))


# -- pinv ----------------------------------------------------------------------------------

def _pinv_type(ts, rcond):
    (a,) = ts
    _float_matrix(a, "pinv")
    m, n = a.shape[-2:]
    return (TensorType(a.dtype, batch_shape(a) + (n, m)),)


def _pinv_jvp(bd, args, tans, outs, rcond):
    """Golub & Pereyra: dX = -X dA X + X X^T dA^T (I - A X) + (I - X A) dA^T X^T X."""
    (a,) = args
    (ta,) = tans
    (x,) = outs
    dat = mT(bd, ta)
    t1 = bd.neg(bd.matmul(x, bd.matmul(ta, x)))
    p = bd.sub(dat, bd.matmul(bd.matmul(dat, a), x))                   # dA^T (I - A X)
    t2 = bd.matmul(bd.matmul(x, mT(bd, x)), p)
    qq = bd.matmul(bd.matmul(dat, mT(bd, x)), x)                       # dA^T X^T X
    t3 = bd.sub(qq, bd.matmul(x, bd.matmul(a, qq)))
    return [bd.add(bd.add(t1, t2), t3)]


def _pinv_vjp(bd, args, outs, cts, need, rcond):
    """Abar = -X^T G X^T + (I - A X) G^T X X^T + X^T X G^T (I - X A)."""
    (a,) = args
    (x,) = outs
    (g,) = cts
    xt, gt = mT(bd, x), mT(bd, g)
    t1 = bd.neg(bd.matmul(xt, bd.matmul(g, xt)))
    h = bd.matmul(gt, bd.matmul(x, xt))
    t2 = bd.sub(h, bd.matmul(a, bd.matmul(x, h)))
    kk = bd.matmul(bd.matmul(xt, x), gt)
    t3 = bd.sub(kk, bd.matmul(bd.matmul(kk, x), a))
    return [bd.add(bd.add(t1, t2), t3)]


TABLE.add(Row("pinv", _pinv_type, lambda a, rcond: np.linalg.pinv(a, rcond=rcond), _pinv_jvp, _pinv_vjp,
              _cost(lambda m, n: 4 * m * n * min(m, n) + 8 * min(m, n) ** 3 + 2 * m * n * min(m, n))))
