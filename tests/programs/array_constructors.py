"""np.concatenate / np.stack / np.zeros / np.ones / np.full / np.arange / np.eye."""
import numpy as np


def f(x, y):
    n = x.shape[0]
    z = np.concatenate([x, y, np.zeros(2)])
    s = np.stack([x, y * 2.0, np.ones(n)], axis=0)       # (3, n)
    t = np.stack([x, y], axis=1)                          # (n, 2)
    full = np.full((n,), 0.5)
    ramp = np.arange(n) * 0.25
    I = np.eye(n)
    M = I * x[None, :] + np.outer(full, y)
    return np.sum(z ** 2) + np.sum(s @ ramp) + np.sum(t * t) + np.sum(M @ (y + ramp))


def args():
    rng = np.random.default_rng(16)
    return (rng.normal(size=4), rng.normal(size=4))


ARGNUMS = (0, 1)
ORDER = 2
TAGS = {"concatenate", "stack", "zeros", "ones", "full", "arange", "eye", "broadcast"}
