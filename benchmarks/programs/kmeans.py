"""kmeans: cost = sum_i min_j ||C_j - P_i||^2; derivative: the Newton direction J / H,
J the gradient w.r.t. C and H the (diagonal) Hessian from one jvp of the gradient with
tangent ones (GradBench's "dir")."""
import numpy as np

import pullback as pb
from pullback.gradbench.modules import kmeans as gb

DESCRIPTION = "k-means cost (loop over k centroids); derivative = J / H, H by forward-over-reverse (jvp of grad)"

SIZES = {"small": {"n": 200, "k": 5, "d": 2}, "default": {"n": 10_000, "k": 100, "d": 8},
         "gb-k1000": {"n": 10_000, "k": 1000, "d": 8}}
GRADBENCH = ("default", "gb-k1000")      # GradBench's kmeans: k = 100, 1000 at n = 10^4, d = 8
BUMP = ("n", 1)


def make_input(p, rng):
    n, k, d = p["n"], p["k"], p["d"]
    P = rng.uniform(0.0, 1.0, (n, d))
    # centroids at data points (jittered), so that every cluster is non-empty (H > 0)
    C = P[rng.choice(n, k, replace=False)] + 1e-3 * rng.standard_normal((k, d))
    return {"centroids": C.tolist(), "points": P.tolist()}


def tool_pullback(inp, backend):
    args = gb.prepare(inp)
    return pb.jit(gb.cost, backend=backend), pb.jit(gb.direction, backend=backend), args


def tool_jax(inp):
    import jax
    import jax.numpy as jnp

    from . import NotRun

    if len(inp["centroids"]) > 200:
        # The loop over k is unrolled into the trace (as for k = 100). At k = 1000 XLA's compile
        # of jvp(grad) took over 20 GB of memory (killed); the other formulations tried were
        # slower than pullback by far at k = 100 already (broadcast (n, k, d): 0.6 s; lax.map
        # over the centroids: 1.3 s, 16 s at k = 1000), so JAX is left out here.
        raise NotRun("k > 200: XLA's compile of the unrolled loop needs > 20 GB (see kmeans.py)")

    def cost(C, P):
        cols = []
        for j in range(C.shape[0]):
            diff = P - C[j]
            cols.append(jnp.sum(diff * diff, axis=1))
        return jnp.sum(jnp.min(jnp.stack(cols, axis=1), axis=1))

    def direction(C, P):
        J, H = jax.jvp(lambda c: jax.grad(cost)(c, P), (C,), (jnp.ones_like(C),))
        return J / H

    args = tuple(jnp.asarray(a) for a in gb.prepare(inp))
    return jax.jit(cost), jax.jit(direction), args


def tool_torch(inp):
    import torch

    def cost(C, P):
        cols = []
        for j in range(C.shape[0]):
            diff = P - C[j]
            cols.append(torch.sum(diff * diff, dim=1))
        return torch.sum(torch.min(torch.stack(cols, dim=1), dim=1).values)

    def primal(C, P):
        with torch.no_grad():
            return cost(C, P)

    def direction(C, P):
        # double backward: H @ ones, which is diag(H) because the Hessian is diagonal
        # (torch.func.jvp(torch.func.grad(cost)) gives the same, about 10x slower here)
        C = C.detach().requires_grad_()
        (J,) = torch.autograd.grad(cost(C, P), (C,), create_graph=True)
        (H,) = torch.autograd.grad(J, (C,), grad_outputs=torch.ones_like(C))
        return J.detach() / H

    return primal, direction, tuple(torch.from_numpy(a) for a in gb.prepare(inp))


def tool_numpy(inp):
    def cost(C, P):
        n = P.shape[0]
        k = C.shape[0]
        Dm = np.empty((n, k))
        for j in range(k):
            diff = P - C[j]
            Dm[:, j] = np.sum(diff * diff, axis=1)
        return np.sum(np.min(Dm, axis=1))

    def direction(C, P):
        n = P.shape[0]
        k = C.shape[0]
        Dm = np.empty((n, k))
        for j in range(k):
            diff = P - C[j]
            Dm[:, j] = np.sum(diff * diff, axis=1)
        a = np.argmin(Dm, axis=1)
        counts = np.bincount(a, minlength=k).astype(np.float64)
        sums = np.zeros_like(C)
        np.add.at(sums, a, P)
        J = 2.0 * (counts[:, None] * C - sums)
        H = 2.0 * counts[:, None]
        return J / H

    return cost, direction, gb.prepare(inp)


def tool_numba(inp):
    from .manual import kmeans as hand

    return hand.primal, hand.direction, gb.prepare(inp)
