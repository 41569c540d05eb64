"""Matrix power by repeated multiplication; exponent is an int argument."""
import numpy as np


def f(A, v, n):
    M = np.eye(A.shape[0])
    for _ in range(n):
        M = M @ A
    return v @ M @ v


def args():
    rng = np.random.default_rng(6)
    A = rng.normal(size=(3, 3)) * 0.4 + np.eye(3) * 0.5
    return (A, rng.normal(size=3), 5)


ARGNUMS = (0, 1)
ORDER = 2
TAGS = {"loop", "dynamic_bound", "int_arg", "matmul", "eye"}
EXPECTED = lambda a: a[1] @ np.linalg.matrix_power(a[0], a[2]) @ a[1]
