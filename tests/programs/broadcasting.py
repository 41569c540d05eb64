"""Broadcasting: row vector + column vector, scalars, (n,1) x (1,m)."""
import numpy as np


def f(r, c, s):
    grid = r[None, :] + c[:, None]               # (m, n)
    scaled = grid * s + c.reshape(-1, 1) * r.reshape(1, -1)
    norm = scaled / np.sum(scaled ** 2, axis=1, keepdims=True)
    return np.sum(np.sin(norm)) + np.sum(grid ** 2) * s


def args():
    rng = np.random.default_rng(17)
    return (rng.normal(size=4), rng.normal(size=3), 0.7)


ARGNUMS = (0, 1, 2)
ORDER = 2
TAGS = {"broadcast", "reshape", "keepdims"}
