"""`while i < n` with an int bound argument, plus an inner data-dependent
loop that halves a value until it is below 1 (trip count depends on x)."""
import numpy as np


def f(x, n):
    i = 0
    total = 0.0
    while i < n:
        v = x[i % x.shape[0]] * (i + 1)
        halvings = 0
        while v > 1.0:
            v = v * 0.5
            halvings += 1
        total = total + v * v + halvings
        i += 1
    return total


def args():
    # no scaled value sits exactly on a power of two
    return (np.array([0.7, 1.9, 3.3]), 6)


ARGNUMS = (0,)
ORDER = 2
TAGS = {"while", "int_arg", "nested_while", "data_dependent_trip_count", "modulo"}
