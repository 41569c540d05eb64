"""RK4 on a Lotka-Volterra system; returns the whole final state (array output)."""
import numpy as np


def lv(z, theta):
    x, y = z[0], z[1]
    a, b, c, d = theta[0], theta[1], theta[2], theta[3]
    return np.stack([a * x - b * x * y, d * x * y - c * y])


def f(z0, theta):
    z = z0
    h = 0.1
    n_steps = 25
    for _ in range(n_steps):
        k1 = lv(z, theta)
        k2 = lv(z + h / 2 * k1, theta)
        k3 = lv(z + h / 2 * k2, theta)
        k4 = lv(z + h * k3, theta)
        z = z + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return z


def args():
    return (np.array([1.0, 0.5]), np.array([1.1, 0.4, 0.4, 0.1]))


ARGNUMS = (0, 1)
ORDER = 1
TAGS = {"ode", "loop", "helper", "stack", "array_output"}
