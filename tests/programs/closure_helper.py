"""Nested function definitions that close over differentiated values."""
import numpy as np


def make_model(w, b):
    def model(x):
        return np.tanh(w * x + b)
    return model


def f(w, b, xs):
    model = make_model(w, b)
    scale = np.sum(w ** 2)

    def penalty(v):
        return scale * v * v

    total = 0.0
    for x in xs:
        total = total + model(x) ** 2 + penalty(x)
    return total


def args():
    return (np.float64(0.8), np.float64(-0.3), np.array([0.5, -1.0, 1.5, 0.2]))


ARGNUMS = (0, 1, 2)
ORDER = 2
TAGS = {"closure", "nested_def", "for_over_array"}
