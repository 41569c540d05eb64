"""Single-head scaled dot-product attention with a numerically stable softmax."""
import numpy as np


def softmax(z, axis):
    z = z - np.max(z, axis=axis, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=axis, keepdims=True)


def f(Wq, Wk, Wv, X):
    Q = X @ Wq
    K = X @ Wk
    V = X @ Wv
    scores = Q @ K.T / np.sqrt(Q.shape[1])
    P = softmax(scores, 1)
    out = P @ V
    return np.sum(out ** 2)


def args():
    rng = np.random.default_rng(28)
    d, k = 3, 2
    return (rng.normal(size=(d, k)), rng.normal(size=(d, k)),
            rng.normal(size=(d, k)), rng.normal(size=(4, d)))


ARGNUMS = (0, 1, 2, 3)
ORDER = 2
TAGS = {"softmax", "matmul", "transpose", "keepdims", "helper"}
