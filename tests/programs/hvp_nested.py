"""Hessian-vector product: f itself calls pb.grad (nested differentiation)."""
import numpy as np
import pullback as pb


def energy(x):
    return np.sum(np.cos(x) * x ** 2) + 0.5 * np.sum(x[1:] * x[:-1])


def f(x, v):
    g = pb.grad(energy)(x)
    return np.dot(g, v)


def PYTHON_REF(x, v):
    g = -np.sin(x) * x ** 2 + 2.0 * x * np.cos(x)
    g = g.copy()
    g[1:] += 0.5 * x[:-1]
    g[:-1] += 0.5 * x[1:]
    return np.dot(g, v)


def args():
    rng = np.random.default_rng(10)
    return (rng.normal(size=5), rng.normal(size=5))


ARGNUMS = (0, 1)
ORDER = 1
TAGS = {"nested"}
