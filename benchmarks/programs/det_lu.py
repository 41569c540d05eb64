"""det_lu: determinant by Gaussian elimination without pivoting (inputs have a dominant
diagonal), with scalar in-place row updates in loops; derivative: gradient w.r.t. A.

The pullback version is plain pullback-style scalar loops (defined here, no gradbench
counterpart). JAX and PyTorch use the same elimination with one vectorised rank-1 update
per pivot (a scalar triple loop is not a sensible program for either: JAX would unroll
n^3 scatters into the trace, PyTorch eager would record n^3 autograd nodes).
"""
import numpy as np

import pullback as pb

DESCRIPTION = "determinant by Gaussian elimination, scalar in-place loops A[j,k] -= f*A[i,k]; derivative = gradient"

SIZES = {"small": {"n": 8}, "default": {"n": 100}}
GRADBENCH = ("default",)         # not a GradBench eval: its default size
BUMP = ("n", 1)


def det_lu(A):
    n = A.shape[0]
    A = A.copy()
    d = 1.0
    for i in range(n):
        p = A[i, i]
        d = d * p
        for j in range(i + 1, n):
            f = A[j, i] / p
            for k in range(i + 1, n):
                A[j, k] -= f * A[i, k]
    return d


def make_input(p, rng):
    n = p["n"]
    A = rng.uniform(-1.0, 1.0, (n, n)) + n * np.eye(n)
    return {"A": A.reshape(-1).tolist(), "n": n}


def _prepare(inp):
    n = int(inp["n"])
    return (np.asarray(inp["A"], dtype=np.float64).reshape(n, n),)


def tool_pullback(inp, backend):
    return pb.jit(det_lu, backend=backend), pb.grad(det_lu, backend=backend), _prepare(inp)


def tool_jax(inp):
    import jax
    import jax.numpy as jnp

    (A,) = _prepare(inp)
    n = A.shape[0]
    rows = jnp.arange(n)

    def det(A):
        def step(i, U):
            p = U[i, i]
            f = jnp.where(rows > i, U[:, i] / p, 0.0)
            return U - jnp.outer(f, U[i])   # only rows > i change; columns <= i are never read again
        U = jax.lax.fori_loop(0, n, step, A)
        return jnp.prod(jnp.diagonal(U))

    return jax.jit(det), jax.jit(jax.grad(det)), (jnp.asarray(A),)


def tool_torch(inp):
    import torch

    (A,) = _prepare(inp)
    n = A.shape[0]

    def det(A):
        U = A
        for i in range(n - 1):
            f = U[i + 1:, i] / U[i, i]
            lower = U[i + 1:, i + 1:] - torch.outer(f, U[i, i + 1:])
            top = U[:i + 1, i + 1:]
            left = U[:, :i + 1]
            U = torch.cat([left, torch.cat([top, lower], dim=0)], dim=1)
        return torch.prod(torch.diagonal(U))

    def primal(A):
        with torch.no_grad():
            return det(A)

    def grad(A):
        A = A.detach().requires_grad_()
        (g,) = torch.autograd.grad(det(A), (A,))
        return g

    return primal, grad, (torch.from_numpy(A),)


def tool_numpy(inp):
    def grad(A):
        return np.linalg.det(A) * np.linalg.inv(A).T

    return np.linalg.det, grad, _prepare(inp)


def tool_numba(inp):
    from .manual import det_lu as hand

    return hand.primal, hand.gradient, _prepare(inp)
