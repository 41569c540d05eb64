"""Trapezoid-rule integral of a parametrised integrand (scalar loop + helper)."""
import numpy as np


def integrand(t, theta):
    return np.exp(-theta[0] * t) * np.sin(theta[1] * t) + theta[2] * t * t


def f(theta, a, b):
    n = 20
    h = (b - a) / n
    total = 0.5 * (integrand(a, theta) + integrand(b, theta))
    for i in range(1, n):
        total = total + integrand(a + i * h, theta)
    return total * h


def args():
    return (np.array([0.5, 2.0, 0.3]), 0.0, 1.7)


ARGNUMS = (0, 1, 2)
ORDER = 2
TAGS = {"loop", "helper", "quadrature"}
