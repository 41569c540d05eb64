"""matmul / @ / np.dot / np.outer / .T / reshape."""
import numpy as np


def f(A, B, u, v):
    C = A @ B.T
    D = np.dot(C, C.T)
    O = np.outer(u, v)
    flat = O.reshape(-1)
    M = flat.reshape(v.shape[0], u.shape[0])
    I = np.eye(v.shape[0])
    return np.sum(D * np.outer(u, u)) + np.trace(M @ A.T @ I) + u @ A @ v


def args():
    rng = np.random.default_rng(15)
    A = rng.normal(size=(3, 3))
    B = rng.normal(size=(3, 3))
    return (A, B, rng.normal(size=3), rng.normal(size=3))


ARGNUMS = (0, 1, 2, 3)
ORDER = 2
TAGS = {"matmul", "dot", "outer", "transpose", "reshape", "eye"}
