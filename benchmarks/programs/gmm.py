"""gmm: the ADBench Gaussian mixture model objective; derivative: gradient w.r.t.
(alpha, mu, q, l) (GradBench's "jacobian")."""
import numpy as np

import pullback as pb
from pullback.gradbench.modules import gmm as gb

DESCRIPTION = "ADBench Gaussian mixture log-likelihood (loop over k components); derivative = gradient w.r.t. alpha, mu, q, l"

SIZES = {"small": {"d": 2, "k": 5, "n": 100}, "default": {"d": 10, "k": 25, "n": 10_000},
         "gb-d64-k5": {"d": 64, "k": 5, "n": 1_000}, "gb-d64-k25": {"d": 64, "k": 25, "n": 1_000},
         "gb-d64-k100": {"d": 64, "k": 100, "n": 1_000}}
GRADBENCH = ("gb-d64-k5", "gb-d64-k25", "gb-d64-k100")   # GradBench's gmm: n = 1000
BUMP = ("n", 1)


def make_input(p, rng):
    d, k, n = p["d"], p["k"], p["n"]
    return {
        "d": d, "k": k, "n": n,
        "alpha": rng.standard_normal(k).tolist(),
        "mu": rng.uniform(0.0, 1.0, (k, d)).tolist(),
        "q": (0.1 * rng.standard_normal((k, d))).tolist(),
        "l": (0.1 * rng.standard_normal((k, d * (d - 1) // 2))).tolist(),
        "x": rng.uniform(0.0, 1.0, (n, d)).tolist(),
        "gamma": 1.0, "m": 0,
    }


def tool_pullback(inp, backend):
    args = gb.prepare(inp)  # (alpha, mu, q, l, x, lidx, gamma, m, const)
    obj = pb.jit(gb.gmm_objective, backend=backend)
    grad = pb.grad(gb.gmm_objective, argnums=(0, 1, 2, 3), backend=backend)

    def primal(*a):
        return obj(*a[:8]) + a[8]

    def derivative(*a):
        return grad(*a[:8])

    return primal, derivative, args


def tool_jax(inp):
    import jax
    import jax.numpy as jnp

    alpha, mu, q, l, x, lidx, gamma, m, const = gb.prepare(inp)

    def lse(v):
        mx = jnp.max(v)
        return mx + jnp.log(jnp.sum(jnp.exp(v - mx)))

    def objective(alpha, mu, q, l, x):
        n, d = x.shape
        k = alpha.shape[0]
        lz = jnp.concatenate([jnp.zeros((k, 1)), l], axis=1)
        Ls = lz[:, lidx]
        qdiag = jnp.exp(q)
        sum_q = jnp.sum(q, axis=1)
        cols = []
        for j in range(k):
            Q = Ls[j] + jnp.diag(qdiag[j])
            Qx = (x - mu[j]) @ Q.T
            cols.append(alpha[j] + sum_q[j] - 0.5 * jnp.sum(Qx * Qx, axis=1))
        beta = jnp.stack(cols, axis=1)
        mx = jnp.max(beta, axis=1, keepdims=True)
        slse = jnp.sum(mx[:, 0] + jnp.log(jnp.sum(jnp.exp(beta - mx), axis=1)))
        frob = jnp.sum(qdiag * qdiag) + jnp.sum(l * l)
        prior = 0.5 * gamma * gamma * frob - m * jnp.sum(q)
        return -n * (0.5 * d * jnp.log(2.0 * jnp.pi) + lse(alpha)) + slse - prior + const

    args = tuple(jnp.asarray(a) for a in (alpha, mu, q, l, x))
    return jax.jit(objective), jax.jit(jax.grad(objective, argnums=(0, 1, 2, 3))), args


def tool_torch(inp):
    import math

    import torch

    alpha, mu, q, l, x, lidx, gamma, m, const = gb.prepare(inp)
    tidx = torch.from_numpy(lidx)

    def lse(v):
        mx = torch.max(v)
        return mx + torch.log(torch.sum(torch.exp(v - mx)))

    def objective(alpha, mu, q, l, x):
        n, d = x.shape
        k = alpha.shape[0]
        lz = torch.cat([torch.zeros((k, 1), dtype=l.dtype), l], dim=1)
        Ls = lz[:, tidx]
        qdiag = torch.exp(q)
        sum_q = torch.sum(q, dim=1)
        cols = []
        for j in range(k):
            Q = Ls[j] + torch.diag(qdiag[j])
            Qx = (x - mu[j]) @ Q.T
            cols.append(alpha[j] + sum_q[j] - 0.5 * torch.sum(Qx * Qx, dim=1))
        beta = torch.stack(cols, dim=1)
        mx = torch.max(beta, dim=1, keepdim=True).values
        slse = torch.sum(mx[:, 0] + torch.log(torch.sum(torch.exp(beta - mx), dim=1)))
        frob = torch.sum(qdiag * qdiag) + torch.sum(l * l)
        prior = 0.5 * gamma * gamma * frob - m * torch.sum(q)
        return -n * (0.5 * d * math.log(2.0 * math.pi) + lse(alpha)) + slse - prior + const

    def primal(*a):
        with torch.no_grad():
            return objective(*a)

    def grad(alpha, mu, q, l, x):
        ps = [t.detach().requires_grad_() for t in (alpha, mu, q, l)]
        return torch.autograd.grad(objective(*ps, x), ps)

    return primal, grad, tuple(torch.from_numpy(a) for a in (alpha, mu, q, l, x))


def tool_numba(inp):
    from .manual import gmm as hand

    alpha, mu, q, l, x, lidx, gamma, m, const = gb.prepare(inp)

    def primal(alpha, mu, q, l, x, gamma, m, const):
        return hand.primal(alpha, mu, q, l, x, gamma, m, const)

    def derivative(alpha, mu, q, l, x, gamma, m, const):
        return hand.gradient(alpha, mu, q, l, x, gamma, m)

    return primal, derivative, (alpha, mu, q, l, x, gamma, m, const)
