"""gmm by hand in Numba: the ADBench Gaussian mixture objective and its gradient w.r.t.
(alpha, mu, q, l), loops over points i and components k.

With Q_k lower triangular (diagonal exp(q_k), strictly lower part from l_k column by column),
v = x_i - mu_k, z = Q_k v, beta_ik = alpha_k + sum(q_k) - |z|^2 / 2 and w_ik = softmax_k(beta_i.):
  d/dalpha_k = sum_i w_ik - n softmax(alpha)_k
  d/dmu_k    = sum_i w_ik Q_k^T z
  d/dQ_k[a, b] (a >= b) = -sum_i w_ik z_a v_b  (=: D_k[a, b])
  d/dq_kj    = sum_i w_ik + D_k[j, j] exp(q_kj) - gamma^2 exp(2 q_kj) + m
  d/dl_k     = D_k below the diagonal (column by column) - gamma^2 l_k.
Per point, beta, z and v are kept for all k (k * d doubles) for the second pass.
"""
import math

import numba
import numpy as np


@numba.njit(cache=False, fastmath=False)
def _build_q(q, l):
    k, d = q.shape
    Q = np.zeros((k, d, d))
    for c in range(k):
        idx = 0
        for col in range(d):
            Q[c, col, col] = math.exp(q[c, col])
            for row in range(col + 1, d):
                Q[c, row, col] = l[c, idx]
                idx += 1
    return Q


@numba.njit(cache=False, fastmath=False)
def _lse(v):
    m = v[0]
    for j in range(1, v.shape[0]):
        if v[j] > m:
            m = v[j]
    s = 0.0
    for j in range(v.shape[0]):
        s += math.exp(v[j] - m)
    return m + math.log(s)


@numba.njit(cache=False, fastmath=False)
def _beta(x, i, mu, Q, sum_q, alpha, c, v, z):
    d = x.shape[1]
    for a in range(d):
        v[a] = x[i, a] - mu[c, a]
    sq = 0.0
    for a in range(d):
        s = 0.0
        for b in range(a + 1):
            s += Q[c, a, b] * v[b]
        z[a] = s
        sq += s * s
    return alpha[c] + sum_q[c] - 0.5 * sq


@numba.njit(cache=False, fastmath=False)
def _prior_terms(q, l, gamma, m):
    frob = 0.0
    sumq = 0.0
    for c in range(q.shape[0]):
        for a in range(q.shape[1]):
            e = math.exp(q[c, a])
            frob += e * e
            sumq += q[c, a]
        for a in range(l.shape[1]):
            frob += l[c, a] * l[c, a]
    return 0.5 * gamma * gamma * frob - m * sumq


@numba.njit(cache=False, fastmath=False)
def primal(alpha, mu, q, l, x, gamma, m, const):
    n, d = x.shape
    k = alpha.shape[0]
    Q = _build_q(q, l)
    sum_q = np.zeros(k)
    for c in range(k):
        for a in range(d):
            sum_q[c] += q[c, a]
    v = np.empty(d)
    z = np.empty(d)
    beta = np.empty(k)
    slse = 0.0
    for i in range(n):
        for c in range(k):
            beta[c] = _beta(x, i, mu, Q, sum_q, alpha, c, v, z)
        slse += _lse(beta)
    prior = _prior_terms(q, l, gamma, m)
    return -n * (0.5 * d * math.log(2.0 * math.pi) + _lse(alpha)) + slse - prior + const


@numba.njit(cache=False, fastmath=False)
def gradient(alpha, mu, q, l, x, gamma, m):
    n, d = x.shape
    k = alpha.shape[0]
    Q = _build_q(q, l)
    sum_q = np.zeros(k)
    for c in range(k):
        for a in range(d):
            sum_q[c] += q[c, a]
    V = np.empty((k, d))
    Z = np.empty((k, d))
    beta = np.empty(k)
    sumw = np.zeros(k)
    gmu = np.zeros((k, d))
    D = np.zeros((k, d, d))
    for i in range(n):
        for c in range(k):
            beta[c] = _beta(x, i, mu, Q, sum_q, alpha, c, V[c], Z[c])
        mx = beta[0]
        for c in range(1, k):
            if beta[c] > mx:
                mx = beta[c]
        s = 0.0
        for c in range(k):
            beta[c] = math.exp(beta[c] - mx)
            s += beta[c]
        for c in range(k):
            w = beta[c] / s
            sumw[c] += w
            for a in range(d):
                wz = w * Z[c, a]
                for b in range(a + 1):
                    gmu[c, b] += Q[c, a, b] * wz
                    D[c, a, b] -= wz * V[c, b]
    # alpha: softmax of alpha from the -n lse(alpha) term
    ma = alpha[0]
    for c in range(1, k):
        if alpha[c] > ma:
            ma = alpha[c]
    sa = 0.0
    for c in range(k):
        sa += math.exp(alpha[c] - ma)
    galpha = np.empty(k)
    gq = np.empty((k, d))
    gl = np.empty_like(l)
    g2 = gamma * gamma
    for c in range(k):
        galpha[c] = sumw[c] - n * math.exp(alpha[c] - ma) / sa
        idx = 0
        for col in range(d):
            e = math.exp(q[c, col])
            gq[c, col] = sumw[c] + D[c, col, col] * e - g2 * e * e + m
            for row in range(col + 1, d):
                gl[c, idx] = D[c, row, col] - g2 * l[c, idx]
                idx += 1
    return galpha, gmu, gq, gl
