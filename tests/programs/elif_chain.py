"""A piecewise function with an if/elif/else chain applied elementwise."""
import numpy as np


def piece(v):
    if v < -1.0:
        r = -v * v
    elif v < 0.0:
        r = np.sin(v)
    elif v < 1.0:
        r = v * np.exp(v)
    elif v < 2.0:
        r = np.log(v) + 2.0
    else:
        r = np.sqrt(v)
    return r


def f(x):
    total = 0.0
    for i in range(x.shape[0]):
        total = total + piece(x[i]) * (i + 1)
    return total


def args():
    return (np.array([-1.7, -0.4, 0.6, 1.4, 2.8, 0.3]),)


ARGNUMS = (0,)
ORDER = 2
TAGS = {"elif", "branch", "helper", "loop"}
