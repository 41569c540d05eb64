"""Running mean/variance with Welford's algorithm (sequential updates)."""
import numpy as np


def f(x):
    mean = 0.0
    m2 = 0.0
    count = 0
    for xi in x:
        count += 1
        delta = xi - mean
        mean = mean + delta / count
        m2 = m2 + delta * (xi - mean)
    return m2 / count


def args():
    return (np.array([1.3, -0.2, 0.8, 2.4, 0.1, -1.0]),)


ARGNUMS = (0,)
ORDER = 2
TAGS = {"for_over_array", "accumulator", "int_counter"}
EXPECTED = lambda a: np.var(a[0])
