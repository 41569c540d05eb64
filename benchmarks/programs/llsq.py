"""llsq: 0.5 * sum_i (s_i - sum_j x_j t_i^j)^2 with t_i = -1 + 2i/(n-1), s_i = sign(t_i);
derivative: gradient w.r.t. x."""
import numpy as np

import pullback as pb
from pullback.gradbench.modules import llsq as gb

DESCRIPTION = "linear least squares of a polynomial fit (loop over m coefficients); derivative = gradient"

SIZES = {"small": {"m": 8, "n": 1_000}, "default": {"m": 64, "n": 200_000},
         "gb-m128-n16392": {"m": 128, "n": 16_392}}
GRADBENCH = ("gb-m128-n16392",)  # GradBench's largest llsq input
BUMP = ("m", 1)                  # n is closed over (one staged function per n); x's length is m


def make_input(p, rng):
    m, n = p["m"], p["n"]
    return {"x": (0.1 * rng.standard_normal(m)).tolist(), "n": n}


def tool_pullback(inp, backend):
    x, n = gb.prepare(inp)
    f = gb._for_n(n)  # the gradbench objective with n closed over
    return pb.jit(f, backend=backend), pb.grad(f, backend=backend), (x,)


def tool_jax(inp):
    import jax
    import jax.numpy as jnp

    x, n = gb.prepare(inp)

    def llsq(x):
        t = -1.0 + 2.0 * jnp.arange(n) / (n - 1)
        s = jnp.sign(t)
        acc = jnp.zeros(n)
        p = jnp.ones(n)
        for j in range(x.shape[0]):
            acc = acc + x[j] * p
            p = p * t
        r = s - acc
        return 0.5 * jnp.sum(r * r)

    return jax.jit(llsq), jax.jit(jax.grad(llsq)), (jnp.asarray(x),)


def tool_torch(inp):
    import torch

    x, n = gb.prepare(inp)
    t = -1.0 + 2.0 * torch.arange(n, dtype=torch.float64) / (n - 1)
    s = torch.sign(t)

    def llsq(x):
        acc = torch.zeros(n, dtype=torch.float64)
        p = torch.ones(n, dtype=torch.float64)
        for j in range(x.shape[0]):
            acc = acc + x[j] * p
            p = p * t
        r = s - acc
        return 0.5 * torch.sum(r * r)

    def primal(x):
        with torch.no_grad():
            return llsq(x)

    def grad(x):
        x = x.detach().requires_grad_()
        (g,) = torch.autograd.grad(llsq(x), (x,))
        return g

    return primal, grad, (torch.from_numpy(x),)


def tool_numpy(inp):
    x, n = gb.prepare(inp)
    m = x.shape[0]
    t = -1.0 + 2.0 * np.arange(n) / (n - 1)
    s = np.sign(t)

    def primal(x):
        acc = np.zeros(n)
        p = np.ones(n)
        for j in range(m):
            acc += x[j] * p
            p = p * t
        r = s - acc
        return 0.5 * np.dot(r, r)

    def grad(x):
        # r = s - T x with T[i, j] = t_i^j; d/dx = -T^T r, without forming T.
        acc = np.zeros(n)
        p = np.ones(n)
        for j in range(m):
            acc += x[j] * p
            p = p * t
        r = s - acc
        g = np.empty(m)
        p = np.ones(n)
        for j in range(m):
            g[j] = -np.dot(r, p)
            p = p * t
        return g

    return primal, grad, (x,)


def tool_numba(inp):
    from .manual import llsq as hand

    x, n = gb.prepare(inp)
    return hand.primal, hand.gradient, (x, n)
