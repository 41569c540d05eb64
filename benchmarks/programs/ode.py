"""ode: y'_0 = x_0, y'_i = x_i y_{i-1}, y(0) = 0, s classical RK4 steps on [0, 2].
primal: y(2) (a vector); derivative: gradient of its last entry w.r.t. x."""
import numpy as np

import pullback as pb
from pullback.gradbench.modules import ode as gb

DESCRIPTION = "RK4 integration of a linear-chain ODE, s steps (loop); derivative = gradient of y_last(2)"

SIZES = {"small": {"n": 10, "s": 20}, "default": {"n": 100, "s": 10_000},
         "gb-n10000-s100": {"n": 10_000, "s": 100}}
GRADBENCH = ("gb-n10000-s100",)  # one of GradBench's ode inputs (n = 10^3..10^5, s = 1..100)
BUMP = ("n", 1)


def make_input(p, rng):
    n, s = p["n"], p["s"]
    return {"x": rng.uniform(0.0, 1.0, n).tolist(), "s": s}


def tool_pullback(inp, backend):
    args = gb.prepare(inp)
    return pb.jit(gb.ode, backend=backend), pb.grad(gb.ode_last, backend=backend), args


def tool_jax(inp):
    import jax
    import jax.numpy as jnp

    x, s = gb.prepare(inp)
    h = 2.0 / s

    def rhs(x, y):
        return jnp.concatenate([x[:1], x[1:] * y[:-1]])

    def ode(x):
        def step(_, y):
            k1 = rhs(x, y)
            k2 = rhs(x, y + (0.5 * h) * k1)
            k3 = rhs(x, y + (0.5 * h) * k2)
            k4 = rhs(x, y + h * k3)
            return y + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        # fixed trip count: fori_loop lowers to scan, which jax.grad differentiates
        return jax.lax.fori_loop(0, s, step, jnp.zeros(x.shape[0]))

    def ode_last(x):
        return ode(x)[-1]

    return jax.jit(ode), jax.jit(jax.grad(ode_last)), (jnp.asarray(x),)


def tool_torch(inp):
    import torch

    x, s = gb.prepare(inp)
    h = 2.0 / s

    def rhs(x, y):
        return torch.cat([x[:1], x[1:] * y[:-1]])

    def ode(x):
        y = torch.zeros(x.shape[0], dtype=x.dtype)
        for _ in range(s):
            k1 = rhs(x, y)
            k2 = rhs(x, y + (0.5 * h) * k1)
            k3 = rhs(x, y + (0.5 * h) * k2)
            k4 = rhs(x, y + h * k3)
            y = y + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        return y

    def primal(x):
        with torch.no_grad():
            return ode(x)

    def grad(x):
        x = x.detach().requires_grad_()
        (g,) = torch.autograd.grad(ode(x)[-1], (x,))
        return g

    return primal, grad, (torch.from_numpy(x),)


def tool_numba(inp):
    from .manual import ode as hand

    x, s = gb.prepare(inp)

    return hand.primal, hand.gradient, (x, s)
