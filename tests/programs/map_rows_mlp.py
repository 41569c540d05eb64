"""A per-example two-layer network written with pb.map over the rows of a batch
(weights are free arrays of the lambda), then a mean squared error."""
import numpy as np
import pullback as pb


def f(W1, b1, w2, X, y):
    def predict(x):
        h = np.tanh(W1 @ x + b1)
        return np.dot(w2, h)

    pred = pb.map(predict, X)
    return np.mean((pred - y) ** 2)


def PYTHON_REF(W1, b1, w2, X, y):
    pred = np.array([np.dot(w2, np.tanh(W1 @ x + b1)) for x in X])
    return np.mean((pred - y) ** 2)


def args():
    rng = np.random.default_rng(120)
    return (rng.normal(size=(4, 3)) * 0.7, rng.normal(size=4) * 0.3, rng.normal(size=4),
            rng.normal(size=(6, 3)), rng.normal(size=6))


ARGNUMS = (0, 1, 2, 3)
ORDER = 2
TAGS = {"map", "pytree"}
