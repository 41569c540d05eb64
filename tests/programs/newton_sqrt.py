"""Square root by Newton's method; the trip count depends on the data."""
import numpy as np


def f(a):
    x = a if a > 1.0 else 1.0
    fx = x * x - a
    it = 0
    while abs(fx) > 1e-12 and it < 100:
        x = x - fx / (2.0 * x)
        fx = x * x - a
        it += 1
    return x


def args():
    return (np.float64(2.7),)


ARGNUMS = (0,)
ORDER = 2
TAGS = {"while", "data_dependent_trip_count", "scalar"}
EXPECTED = lambda a: np.sqrt(a[0])
