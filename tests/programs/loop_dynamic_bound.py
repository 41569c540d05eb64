"""For-loop whose trip count is an int argument (not differentiated)."""
import numpy as np


def f(x, n):
    acc = x
    total = 0.0
    for i in range(n):
        acc = np.cos(acc) + 0.1 * i
        total = total + np.sum(acc ** 2)
    return total


def args():
    return (np.array([0.5, 1.0, -0.3]), 7)


ARGNUMS = (0,)
ORDER = 2
TAGS = {"loop", "dynamic_bound", "int_arg"}
