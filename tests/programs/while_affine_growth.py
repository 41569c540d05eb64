"""A while loop whose trip count depends on data: iterate an affine map until
x exceeds a limit, then return a smooth function of the final state."""
import numpy as np


def f(x0, a, b, c):
    x = x0
    count = 0
    while x < 10.0:
        x = x * a + b
        count += 1
    return x * c + count


def args():
    # trajectory: 1.0 -> 1.8 -> 2.74 -> ... ; no iterate lies near 10.0
    return (1.0, 1.3, 0.5, 0.75)


ARGNUMS = (0, 1, 2, 3)
ORDER = 2
TAGS = {"while", "data_dependent_trip_count", "scalar"}
