"""Build a Python list in a loop, then np.stack it / sum over it."""
import numpy as np


def f(x, A):
    states = []
    h = x
    for t in range(5):
        h = np.tanh(A @ h + 0.1 * t)
        states.append(h)
    H = np.stack(states)                      # (5, n)
    weights = [0.5 ** t for t in range(len(states))]
    weighted = sum(w * s for w, s in zip(weights, states))
    return np.sum(H[-1] * H[0]) + np.sum(weighted)


def args():
    rng = np.random.default_rng(30)
    return (rng.normal(size=3), rng.normal(size=(3, 3)) * 0.7)


ARGNUMS = (0, 1)
ORDER = 2
TAGS = {"list_append", "stack", "zip", "generator", "negative_index"}
