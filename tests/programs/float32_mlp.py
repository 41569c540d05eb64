"""A small tanh MLP on float32 inputs (looser tolerances)."""
import numpy as np


def f(W1, b1, W2, X):
    h = np.tanh(X @ W1 + b1)
    out = h @ W2
    return np.mean(out ** 2)


def args():
    rng = np.random.default_rng(18)
    W1 = (rng.normal(size=(3, 4)) * 0.5).astype(np.float32)
    b1 = (rng.normal(size=4) * 0.1).astype(np.float32)
    W2 = (rng.normal(size=4) * 0.5).astype(np.float32)
    X = rng.normal(size=(5, 3)).astype(np.float32)
    return (W1, b1, W2, X)


ARGNUMS = (0, 1, 2)
ORDER = 1
RTOL = 2e-3
ATOL = 1e-4
TAGS = {"f32", "mlp", "matmul"}
