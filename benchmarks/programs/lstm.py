"""lstm: the ADBench LSTM objective; derivative: gradient w.r.t. (main_params,
extra_params) (GradBench's "jacobian")."""
import numpy as np

import pullback as pb
from pullback.gradbench.modules import lstm as gb

DESCRIPTION = "ADBench LSTM next-character loss (loops over characters and layers); derivative = gradient w.r.t. main and extra params"

SIZES = {"small": {"l": 2, "c": 64, "b": 14}, "default": {"l": 2, "c": 4096, "b": 14},
         "gb-l4-c4096": {"l": 4, "c": 4096, "b": 14}}
GRADBENCH = ("default", "gb-l4-c4096")   # GradBench's lstm: l = 2, 4; c = 1024, 4096; b = 14
BUMP = ("c", 1)


def make_input(p, rng):
    l, c, b = p["l"], p["c"], p["b"]
    return {
        "main_params": (0.5 * rng.standard_normal((2 * l, 4 * b))).tolist(),
        "extra_params": (0.5 * rng.standard_normal((3, b))).tolist(),
        "state": (0.5 * rng.standard_normal((2 * l, b))).tolist(),
        "sequence": rng.uniform(0.0, 1.0, (c, b)).tolist(),
    }


def tool_pullback(inp, backend):
    args = gb.prepare(inp)
    return (pb.jit(gb.lstm_objective, backend=backend),
            pb.grad(gb.lstm_objective, argnums=(0, 1), backend=backend), args)


def tool_jax(inp):
    import jax
    import jax.numpy as jnp

    main_params, extra_params, state, sequence = gb.prepare(inp)
    layers = main_params.shape[0] // 2
    c, b = sequence.shape

    def sigmoid(v):
        return 1.0 / (1.0 + jnp.exp(-v))

    def objective(main_params, extra_params, state, sequence):
        def step(st, xs):
            cur, nxt = xs
            x = cur * extra_params[0]
            new = []
            for i in range(layers):
                W = main_params[2 * i]
                B = main_params[2 * i + 1]
                h, cell = st[2 * i], st[2 * i + 1]
                forget = sigmoid(x * W[0:b] + B[0:b])
                ingate = sigmoid(h * W[b:2 * b] + B[b:2 * b])
                outgate = sigmoid(x * W[2 * b:3 * b] + B[2 * b:3 * b])
                change = jnp.tanh(h * W[3 * b:4 * b] + B[3 * b:4 * b])
                cell = cell * forget + ingate * change
                h = outgate * jnp.tanh(cell)
                new += [h, cell]
                x = h
            ypred = x * extra_params[1] + extra_params[2]
            lse = jnp.log(jnp.sum(jnp.exp(ypred)) + 2.0)
            return jnp.stack(new), jnp.sum(nxt * (ypred - lse))

        _, terms = jax.lax.scan(step, state, (sequence[:-1], sequence[1:]))
        return -jnp.sum(terms) / ((c - 1) * b)

    args = tuple(jnp.asarray(a) for a in (main_params, extra_params, state, sequence))
    return jax.jit(objective), jax.jit(jax.grad(objective, argnums=(0, 1))), args


def tool_torch(inp):
    import torch

    main_params, extra_params, state, sequence = gb.prepare(inp)
    layers = main_params.shape[0] // 2
    c, b = sequence.shape

    def objective(main_params, extra_params, state, sequence):
        st = list(state.unbind(0))
        total = 0.0
        for t in range(c - 1):
            x = sequence[t] * extra_params[0]
            for i in range(layers):
                W = main_params[2 * i]
                B = main_params[2 * i + 1]
                h, cell = st[2 * i], st[2 * i + 1]
                forget = torch.sigmoid(x * W[0:b] + B[0:b])
                ingate = torch.sigmoid(h * W[b:2 * b] + B[b:2 * b])
                outgate = torch.sigmoid(x * W[2 * b:3 * b] + B[2 * b:3 * b])
                change = torch.tanh(h * W[3 * b:4 * b] + B[3 * b:4 * b])
                cell = cell * forget + ingate * change
                h = outgate * torch.tanh(cell)
                st[2 * i], st[2 * i + 1] = h, cell
                x = h
            ypred = x * extra_params[1] + extra_params[2]
            lse = torch.log(torch.sum(torch.exp(ypred)) + 2.0)
            total = total + torch.sum(sequence[t + 1] * (ypred - lse))
        return -total / ((c - 1) * b)

    def primal(*a):
        with torch.no_grad():
            return objective(*a)

    def grad(main_params, extra_params, state, sequence):
        ps = [t.detach().requires_grad_() for t in (main_params, extra_params)]
        return torch.autograd.grad(objective(*ps, state, sequence), ps)

    return primal, grad, tuple(torch.from_numpy(a) for a in (main_params, extra_params, state, sequence))


def tool_numba(inp):
    from .manual import lstm as hand

    return hand.primal, hand.gradient, gb.prepare(inp)
