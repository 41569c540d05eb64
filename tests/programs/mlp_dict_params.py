"""MLP whose parameters are a dict pytree; regression loss."""
import numpy as np


def layer(W, b, x):
    return np.tanh(x @ W + b)


def f(params, X, y):
    h = layer(params["W1"], params["b1"], X)
    pred = h @ params["W2"] + params["b2"]
    err = pred[:, 0] - y
    reg = 0.0
    for name in ("W1", "W2"):
        reg = reg + np.sum(params[name] ** 2)
    return 0.5 * np.mean(err ** 2) + 1e-2 * reg


def args():
    rng = np.random.default_rng(4)
    params = {
        "W1": rng.normal(size=(3, 5)) * 0.6,
        "b1": rng.normal(size=5) * 0.1,
        "W2": rng.normal(size=(5, 1)) * 0.6,
        "b2": np.zeros(1),
    }
    X = rng.normal(size=(6, 3))
    y = rng.normal(size=6)
    return (params, X, y)


ARGNUMS = (0,)
ORDER = 2
TAGS = {"mlp", "pytree", "dict", "helper"}
