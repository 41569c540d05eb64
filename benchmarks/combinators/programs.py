"""The combinator benchmark's programs (issue 12 §4), written with pullback's combinators
as a user would, plus their JAX / PyTorch / hand-written NumPy counterparts.

Contract: every pullback program here is plain Python staged by pullback (`pb.map`,
`pb.vmap`, `pb.reduce` and `pb.hist` where this checkout has them); `run.py` times
`pb.jit` of the primal against `pb.grad` (or `pb.vmap(pb.grad(...))`) of it. Each
`*_input(size, rng)` returns the positional arguments; each `*_numpy_*` function is the
reference the runner checks pullback's numbers against. Nothing here times anything.

Where a combinator has not landed yet, the program falls back to the NumPy spelling
(`np.sum(a * b)` for `pb.reduce(pb.add, 0.0, a * b)`) and says so in `FALLBACKS`;
the programs that need `pb.hist` are reported as not measured without it.
"""
import numpy as np

import pullback as pb

HAVE_REDUCE = hasattr(pb, "reduce") and hasattr(pb, "add")
HAVE_HIST = hasattr(pb, "hist")
FALLBACKS = [] if HAVE_REDUCE else ["`pb.reduce` is not in this checkout: the dot products are `np.sum(a * b)`"]


# --------------------------------------------------------------------------- 1. matrix product

if HAVE_REDUCE:
    def dot(a, b):
        return pb.reduce(pb.add, 0.0, a * b)
else:
    def dot(a, b):
        return np.sum(a * b)


def matmul(A, BT):
    """C[i, j] = sum_k A[i, k] BT[j, k], as nested maps and a reduce (no np.matmul)."""
    return pb.map(lambda a: pb.map(lambda b: dot(a, b), BT), A)


def mm_loss(A, BT):
    """0.5 ||A B^T||^2: its adjoint needs the primal product C."""
    C = matmul(A, BT)
    return 0.5 * np.sum(C * C)


def mm_input(n, rng):
    return rng.standard_normal((n, n)) / np.sqrt(n), rng.standard_normal((n, n)) / np.sqrt(n)


def mm_numpy_primal(A, BT):
    C = A @ BT.T
    return 0.5 * np.sum(C * C)


def mm_numpy_grad(A, BT):
    """The hand-written adjoint: C = A B^T, dA = C B, dB^T = C^T A (three BLAS products)."""
    C = A @ BT.T
    return C @ BT, C.T @ A


# --------------------------------------------------------------------------- 2. k-means (pb.hist)

def sqdist(p, c):
    d = p - c
    return np.sum(d * d)


def kmeans_cost(P, C):
    """One Lloyd step, then the k-means cost of the moved centroids:
    assign every point to its nearest centroid, move each centroid to the mean of its points
    (the sums and counts per cluster are histograms, `pb.hist`), and return
    sum_i min_j ||P_i - C'_j||^2. The gradient is w.r.t. the points P (the assignment is
    piecewise constant; the moved centroids depend on P through the means)."""
    k = C.shape[0]
    assign = pb.map(lambda p: np.argmin(pb.map(lambda c: sqdist(p, c), C)), P)
    counts = pb.hist(pb.add, 0.0, k, assign, np.ones(P.shape[0]))
    sums = pb.map(lambda col: pb.hist(pb.add, 0.0, k, assign, col), P.T)        # d x k
    Cn = sums.T / np.maximum(counts, 1.0)[:, None]
    return np.sum(pb.map(lambda p: np.min(pb.map(lambda c: sqdist(p, c), Cn)), P))


def kmeans_input(size, rng):
    n, k, d = size
    C = rng.standard_normal((k, d)) * 3.0
    P = C[rng.integers(0, k, n)] + rng.standard_normal((n, d))
    return P, C[rng.permutation(k)] + 0.5 * rng.standard_normal((k, d))


def kmeans_numpy_primal(P, C):
    k = C.shape[0]
    a = np.argmin(((P[:, None, :] - C[None, :, :]) ** 2).sum(-1), axis=1)
    counts = np.bincount(a, minlength=k).astype(float)
    sums = np.stack([np.bincount(a, weights=P[:, j], minlength=k) for j in range(P.shape[1])], axis=1)
    Cn = sums / np.maximum(counts, 1.0)[:, None]
    return float(np.sum(np.min(((P[:, None, :] - Cn[None, :, :]) ** 2).sum(-1), axis=1)))


def kmeans_numpy_grad(P, C):
    """Closed form: with a = first assignment, b = second, Cn = means,
    dP_i = 2 (P_i - Cn[b_i]) - 2 sum_{l: b_l = a_i} (P_l - Cn[a_i]) / count[a_i]."""
    k = C.shape[0]
    a = np.argmin(((P[:, None, :] - C[None, :, :]) ** 2).sum(-1), axis=1)
    counts = np.maximum(np.bincount(a, minlength=k).astype(float), 1.0)
    sums = np.stack([np.bincount(a, weights=P[:, j], minlength=k) for j in range(P.shape[1])], axis=1)
    Cn = sums / counts[:, None]
    b = np.argmin(((P[:, None, :] - Cn[None, :, :]) ** 2).sum(-1), axis=1)
    R = P - Cn[b]                                   # residuals against the moved centroids
    dCn = np.zeros_like(Cn)
    np.add.at(dCn, b, -2.0 * R)
    return 2.0 * R + (dCn / counts[:, None])[a]


# --------------------------------------------------------------------------- 3. sparse histogram

def sparse_loss(x, idx, probe, coef, bins):
    """A large histogram (len(bins) bins) of per-sample values, of which the loss reads
    only the few bins `probe`. `bins` holds one weight per bin; only its shape and the
    probed entries matter. The adjoint of the histogram is nonzero at len(probe) bins;
    the gradient w.r.t. x gathers it at idx (O(len(x))), it must not do O(bins) work per
    sample or per probe."""
    vals = pb.map(lambda v: np.sin(v) * v, x)
    h = pb.hist(pb.add, 0.0, bins.shape[0], idx, vals)
    return np.sum(pb.map(lambda j, c: c * np.log1p(bins[j] * h[j] * h[j]), probe, coef))


def sparse_input(size, rng):
    n, nbins, m = size
    x = rng.standard_normal(n)
    probe = np.sort(rng.choice(nbins, m, replace=False)).astype(np.int64)
    # half the samples land in the probed bins, the rest anywhere (some out of range: ignored)
    idx = np.where(rng.random(n) < 0.5, probe[rng.integers(0, m, n)], rng.integers(-2, nbins + 2, n)).astype(np.int64)
    return x, idx, probe, rng.uniform(0.5, 1.5, m), np.full(nbins, 1.0)


def sparse_numpy_primal(x, idx, probe, coef, bins):
    ok = (idx >= 0) & (idx < bins.shape[0])
    h = np.bincount(idx[ok], weights=(np.sin(x) * x)[ok], minlength=bins.shape[0])
    return float(np.sum(coef * np.log1p(bins[probe] * h[probe] ** 2)))


def sparse_numpy_grad(x, idx, probe, coef, bins):
    ok = (idx >= 0) & (idx < bins.shape[0])
    h = np.bincount(idx[ok], weights=(np.sin(x) * x)[ok], minlength=bins.shape[0])
    hp = h[probe]
    hbar = np.zeros(bins.shape[0])
    hbar[probe] = coef * 2.0 * bins[probe] * hp / (1.0 + bins[probe] * hp * hp)
    g = np.zeros_like(x)
    g[ok] = hbar[idx[ok]]
    return g * (np.cos(x) * x + np.sin(x))


# --------------------------------------------------------------------------- 4. per-example gradients

def mlp_loss(W1, b1, w2, x, y):
    """Logistic loss of a one-hidden-layer tanh network on one example."""
    h = np.tanh(W1 @ x + b1)
    z = np.dot(w2, h)
    return np.log1p(np.exp(-y * z))


AXES = (None, None, None, 0, 0)


def per_example_losses(W1, b1, w2, X, Y):
    return pb.vmap(mlp_loss, in_axes=AXES)(W1, b1, w2, X, Y)


def per_example_grads(W1, b1, w2, X, Y):
    return pb.vmap(pb.grad(mlp_loss, argnums=(0, 1, 2)), in_axes=AXES)(W1, b1, w2, X, Y)


def mlp_input(size, rng):
    b, d, hid = size
    W1 = rng.standard_normal((hid, d)) / np.sqrt(d)
    return (W1, 0.1 * rng.standard_normal(hid), rng.standard_normal(hid) / np.sqrt(hid),
            rng.standard_normal((b, d)), np.sign(rng.standard_normal(b)))


def mlp_jax():
    """(primal, per-example gradients): jax.jit(jax.vmap(...)) and jax.jit(jax.vmap(jax.grad(...)))."""
    import jax
    import jax.numpy as jnp

    def loss(W1, b1, w2, x, y):
        h = jnp.tanh(W1 @ x + b1)
        return jnp.log1p(jnp.exp(-y * jnp.dot(w2, h)))

    return (jax.jit(jax.vmap(loss, in_axes=AXES)),
            jax.jit(jax.vmap(jax.grad(loss, argnums=(0, 1, 2)), in_axes=AXES)))


def mlp_torch():
    """(primal, per-example gradients): torch.func.vmap(loss) and torch.func.vmap(torch.func.grad(loss)), eager."""
    import torch
    from torch.func import grad, vmap

    def loss(W1, b1, w2, x, y):
        h = torch.tanh(W1 @ x + b1)
        return torch.log1p(torch.exp(-y * torch.dot(w2, h)))

    return vmap(loss, in_dims=AXES), vmap(grad(loss, argnums=(0, 1, 2)), in_dims=AXES)
