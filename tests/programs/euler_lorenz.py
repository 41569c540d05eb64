"""Forward-Euler integration of the Lorenz system over a short horizon."""
import numpy as np


def lorenz(s, sigma, rho, beta):
    x, y, z = s[0], s[1], s[2]
    return np.array([sigma * (y - x), x * (rho - z) - y, x * y - beta * z])


def f(s0, params):
    sigma, rho, beta = params[0], params[1], params[2]
    s = s0
    dt = 0.005
    for _ in range(60):
        s = s + dt * lorenz(s, sigma, rho, beta)
    return np.sum(s ** 2)


def args():
    return (np.array([1.0, 1.0, 1.0]), np.array([10.0, 28.0, 8.0 / 3.0]))


ARGNUMS = (0, 1)
ORDER = 2
TAGS = {"ode", "loop", "helper", "array_literal", "tuple_unpack"}
