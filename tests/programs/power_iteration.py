"""Largest eigenvalue of a symmetric matrix by power iteration (fixed
iteration count, well-separated spectrum) and a Rayleigh quotient."""
import numpy as np


def f(B):
    A = 0.5 * (B + B.T)
    v = np.ones(A.shape[0]) / np.sqrt(A.shape[0])
    for _ in range(200):
        w = A @ v
        v = w / np.sqrt(np.dot(w, w))
    return v @ A @ v


def args():
    rng = np.random.default_rng(27)
    B = rng.normal(size=(4, 4)) * 0.3 + np.diag([4.0, 2.0, 1.0, 0.5])
    return (B,)


ARGNUMS = (0,)
ORDER = 1
RTOL = 1e-4
TAGS = {"loop", "linalg", "normalization", "ones"}
EXPECTED = lambda a: np.max(np.linalg.eigvalsh(0.5 * (a[0] + a[0].T)))
