"""Early return inside an if, in both a helper and the top-level function."""
import numpy as np


def safe_log(v):
    if v > 1.0:
        return np.log(v)
    return v - 1.0


def f(x):
    s = np.sum(x)
    if s > 5.0:
        return np.sqrt(s)
    acc = 0.0
    for i in range(x.shape[0]):
        acc = acc + safe_log(x[i] + 1.0) * x[i]
    if acc < 0.0:
        return -acc
    return acc * np.cos(s)


def args():
    return (np.array([0.4, -0.3, 1.2, 0.8]),)


ARGNUMS = (0,)
ORDER = 2
TAGS = {"early_return", "branch", "helper"}
