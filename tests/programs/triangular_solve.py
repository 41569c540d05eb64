"""Forward then back substitution (in-place writes) to solve A x = b with
A = L U given as separate factors; returns the solution vector."""
import numpy as np


def forward_sub(L, b):
    n = b.shape[0]
    y = np.zeros_like(b)
    for i in range(n):
        y[i] = (b[i] - np.dot(L[i, :i], y[:i])) / L[i, i]
    return y


def back_sub(U, y):
    n = y.shape[0]
    x = np.zeros_like(y)
    for i in range(n - 1, -1, -1):
        x[i] = (y[i] - np.dot(U[i, i + 1:], x[i + 1:])) / U[i, i]
    return x


def f(L, U, b):
    return back_sub(U, forward_sub(L, b))


def args():
    rng = np.random.default_rng(26)
    L = np.tril(rng.normal(size=(4, 4))) * 0.3 + 2.0 * np.eye(4)
    U = np.triu(rng.normal(size=(4, 4))) * 0.3 + 1.5 * np.eye(4)
    return (L, U, rng.normal(size=4))


ARGNUMS = (0, 1, 2)
ORDER = 1
TAGS = {"inplace", "setitem", "loop", "reverse_range", "linalg", "array_output", "helper"}
EXPECTED = lambda a: np.linalg.solve(a[0] @ a[1], a[2])
