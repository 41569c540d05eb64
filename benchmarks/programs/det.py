"""det: determinant by recursive Laplace expansion along the first row (ell! products
at run time; the staged program grows like ell^2); derivative: gradient w.r.t. A."""
import numpy as np

import pullback as pb
from pullback.gradbench.modules import det as gb

DESCRIPTION = "determinant by recursive Laplace expansion (ell! terms); derivative = gradient"

SIZES = {"small": {"ell": 4}, "default": {"ell": 7}, "gb-ell8": {"ell": 8}, "gb-ell9": {"ell": 9},
         "gb-ell10": {"ell": 10}, "gb-ell11": {"ell": 11},
         "gb-ell5": {"ell": 5}, "gb-ell6": {"ell": 6}}   # GradBench's small ones: per-call overhead shows
GRADBENCH = ("default",)         # ell = 7, inside GradBench's 5..11 (ell = 8: named size gb-ell8)
BUMP = ("ell", -1)               # a smaller matrix: its work shrinks like ell!


def make_input(p, rng):
    ell = p["ell"]
    A = rng.standard_normal((ell, ell)) + ell * np.eye(ell)
    return {"A": A.reshape(-1).tolist(), "ell": ell}


def tool_pullback(inp, backend):
    args = gb.prepare(inp)
    return pb.jit(gb.det, backend=backend), pb.grad(gb.det, backend=backend), args


def tool_jax(inp):
    import jax
    import jax.numpy as jnp

    # The same Laplace expansion (the same products and sums), but one level of the
    # recursion at a time over a batch of all minors of that size: tracing the scalar
    # recursion instead makes XLA compile ~e*ell! small ops (over a minute for ell = 6).
    def det_batch(M):                       # M: (batch, n, n)
        n = M.shape[1]
        if n == 1:
            return M[:, 0, 0]
        if n == 2:
            return M[:, 0, 0] * M[:, 1, 1] - M[:, 0, 1] * M[:, 1, 0]
        rest = M[:, 1:, :]
        minors = jnp.stack([jnp.concatenate([rest[:, :, :j], rest[:, :, j + 1:]], axis=2)
                            for j in range(n)], axis=1)          # (batch, n, n-1, n-1)
        sub = det_batch(minors.reshape(-1, n - 1, n - 1)).reshape(-1, n)
        signs = jnp.array([(-1.0) ** j for j in range(n)])
        return jnp.sum(signs * M[:, 0, :] * sub, axis=1)

    def det(A):
        return det_batch(A[None])[0]

    return jax.jit(det), jax.jit(jax.grad(det)), (jnp.asarray(gb.prepare(inp)[0]),)


def tool_torch(inp):
    import torch

    def minor(A, j):
        rest = A[1:, :]
        return torch.cat([rest[:, :j], rest[:, j + 1:]], dim=1)

    def det(A):
        n = A.shape[0]
        if n == 1:
            return A[0, 0]
        if n == 2:
            return A[0, 0] * A[1, 1] - A[0, 1] * A[1, 0]
        total = 0.0
        sign = 1.0
        for j in range(n):
            total = total + sign * A[0, j] * det(minor(A, j))
            sign = -sign
        return total

    def primal(A):
        with torch.no_grad():
            return det(A)

    def grad(A):
        A = A.detach().requires_grad_()
        (g,) = torch.autograd.grad(det(A), (A,))
        return g

    return primal, grad, (torch.from_numpy(gb.prepare(inp)[0]),)


def tool_numpy(inp):
    # LAPACK, not Laplace: a reference point, not the same algorithm.
    def grad(A):
        return np.linalg.det(A) * np.linalg.inv(A).T

    return np.linalg.det, grad, gb.prepare(inp)


def tool_numba(inp):
    from .manual import det as hand

    return hand.primal, hand.gradient, gb.prepare(inp)
