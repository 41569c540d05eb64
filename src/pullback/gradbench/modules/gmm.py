"""gmm: the ADBench Gaussian mixture objective; jacobian by pb.grad w.r.t.
(alpha, mu, q, l).

Q_k is lower triangular with diagonal exp(q_k) and strictly lower part filled
column by column from l_k. It is built by gathering from [0, l_k] with a
constant integer index matrix (structure only, computed once per d). The terms
that do not depend on the parameters (involving lgamma) are computed in plain
Python and added outside the differentiated function.
"""
import math

import numpy as np

import pullback as pb

from ..schema import Array, Derived, Float, Int, Limits, Schema
from . import backend


def logsumexp(v):
    m = np.max(v)
    return m + np.log(np.sum(np.exp(v - m)))


def gmm_objective(alpha, mu, q, l, x, lidx, wishart_gamma, wishart_m):
    n = x.shape[0]
    d = x.shape[1]
    k = alpha.shape[0]
    lz = np.concatenate([np.zeros((k, 1)), l], axis=1)
    Ls = lz[:, lidx]                        # (k, d, d): strictly lower parts
    qdiag = np.exp(q)
    sum_q = np.sum(q, axis=1)
    beta = np.zeros((n, k))
    for j in range(k):
        Q = Ls[j] + np.diag(qdiag[j])
        Qx = (x - mu[j]) @ Q.T              # row i: Q_j (x_i - mu_j)
        beta[:, j] = alpha[j] + sum_q[j] - 0.5 * np.sum(Qx * Qx, axis=1)
    mx = np.max(beta, axis=1, keepdims=True)
    slse = np.sum(mx[:, 0] + np.log(np.sum(np.exp(beta - mx), axis=1)))
    frob = np.sum(qdiag * qdiag) + np.sum(l * l)
    prior = 0.5 * wishart_gamma * wishart_gamma * frob - wishart_m * np.sum(q)
    return -n * (0.5 * d * np.log(2.0 * np.pi) + logsumexp(alpha)) + slse - prior


def lower_index(d):
    """(d, d) int matrix: 0 on and above the diagonal, 1 + the position in l
    (column by column) below it."""
    idx = np.zeros((d, d), dtype=np.int64)
    c = 1
    for col in range(d):
        for row in range(col + 1, d):
            idx[row, col] = c
            c += 1
    return idx


def log_gamma_distrib(a, p):
    return 0.25 * p * (p - 1) * math.log(math.pi) + sum(math.lgamma(a + 0.5 * (1 - j)) for j in range(1, p + 1))


def constant(d, k, wishart_gamma, wishart_m):
    n1 = d + wishart_m + 1
    return k * (n1 * d * (math.log(wishart_gamma) - 0.5 * math.log(2.0))
                - log_gamma_distrib(0.5 * n1, d))


_objective = pb.jit(gmm_objective, backend=backend())
_grad = pb.grad(gmm_objective, argnums=(0, 1, 2, 3), backend=backend())


def objective(alpha, mu, q, l, x, lidx, gamma, m, const):
    return _objective(alpha, mu, q, l, x, lidx, gamma, m) + const


def jacobian(alpha, mu, q, l, x, lidx, gamma, m, const):
    ga, gmu, gq, gl = _grad(alpha, mu, q, l, x, lidx, gamma, m)
    return {"alpha": ga, "mu": gmu, "q": gq, "l": gl}


_TRI = Derived("d*(d-1)/2", lambda z: z["d"] * (z["d"] - 1) // 2)
# the loop over the k components makes (and the gradient saves) (n, d) arrays and a (d, d) matrix per step
SCHEMA = Schema("gmm", [
    Int("d", min=1), Int("k", min=1), Int("n", min=1),
    Array("alpha", "k"), Array("mu", "k", "d"), Array("q", "k", "d"), Array("l", "k", _TRI),
    Array("x", "n", "d"),
    Int("m", min=0, max=1 << 20), Float("gamma", positive=True),
], sizes={"d": (1, 1 << 62), "k": (1, 1 << 62), "n": (1, 1 << 62)},
    elements=("k*(n*d + d*d) + n*k", lambda z: z["k"] * (z["n"] * z["d"] + z["d"] * z["d"]) + z["n"] * z["k"]))


def prepare(inp, limits=None):
    """The arguments of FUNCTIONS for a GradBench input; raises InputError (see SCHEMA)."""
    v = SCHEMA.validate(inp, limits or Limits())
    d, k, gamma, m = v["d"], v["k"], v["gamma"], v["m"]
    return (v["alpha"], v["mu"], v["q"], v["l"], v["x"], lower_index(d), gamma, float(m),
            constant(d, k, gamma, m))


FUNCTIONS = {"objective": objective, "jacobian": jacobian}
