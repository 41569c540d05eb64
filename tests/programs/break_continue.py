"""Loop with `continue` (skip small entries) and `break` (stop at a budget)."""
import numpy as np


def f(x, w):
    total = 0.0
    used = 0
    for i in range(x.shape[0]):
        if x[i] < 0.0:
            continue
        total = total + w[i] * np.log1p(x[i])
        used += 1
        if used >= 3:
            break
    return total * total


def args():
    # entries are far from 0, so the continue/break pattern is stable
    x = np.array([0.8, -0.5, 1.3, -1.1, 0.6, 2.0, 0.9])
    w = np.array([1.0, 2.0, -0.5, 0.7, 1.5, 0.3, 0.2])
    return (x, w)


ARGNUMS = (0, 1)
ORDER = 2
TAGS = {"break", "continue", "branch", "loop"}
