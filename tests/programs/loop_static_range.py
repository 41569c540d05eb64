"""Several accumulators updated in a fixed-length for-loop."""
import numpy as np


def f(x):
    s = 0.0
    p = 1.0
    v = np.zeros_like(x)
    for i in range(6):
        s = s + np.sum(np.sin(x * (i + 1)))
        p = p * (1.0 + 0.1 * np.mean(x) * i)
        v = 0.5 * v + x / (i + 1)
    return s * p + np.dot(v, v)


def args():
    return (np.array([0.2, -0.4, 0.9, 0.1]),)


ARGNUMS = (0,)
ORDER = 2
TAGS = {"loop", "accumulator"}
