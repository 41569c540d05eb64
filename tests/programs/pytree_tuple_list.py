"""Tuple and list pytree arguments, with a list of layers."""
import numpy as np


def f(layers, pair):
    x, scale = pair
    h = x
    for (W, b) in layers:
        h = np.tanh(W @ h + b)
    return np.sum(h) * scale + np.sum(x ** 2)


def args():
    rng = np.random.default_rng(19)
    layers = [
        (rng.normal(size=(4, 3)) * 0.5, rng.normal(size=4) * 0.1),
        (rng.normal(size=(2, 4)) * 0.5, rng.normal(size=2) * 0.1),
    ]
    pair = (rng.normal(size=3), np.float64(1.3))
    return (layers, pair)


ARGNUMS = (0, 1)
ORDER = 2
TAGS = {"pytree", "list", "tuple", "tuple_unpack", "for_over_list"}
