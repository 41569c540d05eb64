"""lse: logsumexp(x) = m + log(sum(exp(x - m))), m = max(x); derivative: gradient (softmax)."""
import numpy as np

import pullback as pb
from pullback.gradbench.modules import lse as gb

DESCRIPTION = "logsumexp of a vector with the max trick; derivative = gradient"

SIZES = {"small": {"n": 1_000}, "default": {"n": 2_000_000}, "gb-n1280000": {"n": 1_280_000}}
GRADBENCH = ("gb-n1280000",)     # GradBench's largest lse input
BUMP = ("n", 1)


def make_input(p, rng):
    return {"x": rng.standard_normal(p["n"]).tolist()}


def tool_pullback(inp, backend):
    args = gb.prepare(inp)
    return pb.jit(gb.logsumexp, backend=backend), pb.grad(gb.logsumexp, backend=backend), args


def tool_jax(inp):
    import jax
    import jax.numpy as jnp

    def lse(x):
        m = jnp.max(x)
        return m + jnp.log(jnp.sum(jnp.exp(x - m)))

    return jax.jit(lse), jax.jit(jax.grad(lse)), (jnp.asarray(gb.prepare(inp)[0]),)


def tool_torch(inp):
    import torch

    def lse(x):
        m = torch.max(x)
        return m + torch.log(torch.sum(torch.exp(x - m)))

    def grad(x):
        x = x.detach().requires_grad_()
        (g,) = torch.autograd.grad(lse(x), (x,))
        return g

    def primal(x):
        with torch.no_grad():
            return lse(x)

    return primal, grad, (torch.from_numpy(gb.prepare(inp)[0]),)


def tool_numpy(inp):
    def primal(x):
        m = np.max(x)
        return m + np.log(np.sum(np.exp(x - m)))

    def grad(x):
        e = np.exp(x - np.max(x))
        return e / np.sum(e)

    return primal, grad, gb.prepare(inp)


def tool_numba(inp):
    from .manual import lse as hand

    return hand.primal, hand.gradient, gb.prepare(inp)
