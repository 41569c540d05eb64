"""`while True` with a data-dependent `break`: geometric damping until small."""
import numpy as np


def f(x):
    y = x
    n = 0
    while True:
        y = 0.7 * y + 0.1 * np.sin(y)
        n += 1
        if np.sum(y * y) < 0.06:
            break
    return np.sum(y) * n


def args():
    # ||y||^2 sequence stays well away from 0.06 (0.077 -> 0.049) at the stopping step
    return (np.array([1.5, -0.8, 0.6]),)


ARGNUMS = (0,)
ORDER = 2
TAGS = {"while", "break", "data_dependent_trip_count"}
