"""1-D heat equation, explicit stencil, in-place updates over time steps,
with fixed (Dirichlet) boundaries."""
import numpy as np


def f(u0, kappa):
    u = u0.copy()
    n = u.shape[0]
    new = np.zeros(n)
    for step in range(10):
        new[0] = u[0]
        new[n - 1] = u[n - 1]
        for i in range(1, n - 1):
            new[i] = u[i] + kappa * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u[:] = new
    return np.sum(u ** 2) + u[n // 2]


def args():
    x = np.linspace(0.0, 1.0, 7)
    return (np.sin(np.pi * x) + 0.1 * x, 0.2)


ARGNUMS = (0, 1)
ORDER = 2
TAGS = {"inplace", "setitem", "stencil", "nested_loops", "slice_assign"}
