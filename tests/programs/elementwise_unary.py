"""Smooth elementwise functions: sin cos tan exp log log1p expm1 sqrt tanh."""
import numpy as np


def f(x):
    a = np.sin(x) * np.cos(2.0 * x) + np.tan(0.5 * x)
    b = np.exp(-x) + np.log(x + 2.0) + np.log1p(x * x)
    c = np.expm1(0.3 * x) * np.sqrt(x + 1.5) + np.tanh(3.0 * x)
    return np.sum(a * b + c)


def args():
    return (np.array([-0.6, 0.1, 0.5, 1.2, 0.9]),)


ARGNUMS = (0,)
ORDER = 2
TAGS = {"elementwise", "sin", "cos", "tan", "exp", "log", "log1p", "expm1", "sqrt", "tanh"}
