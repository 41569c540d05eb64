"""Root of x**3 + p*x - q by bisection (a data-dependent while loop),
polished by two Newton steps so the root depends smoothly on (p, q);
returns a smooth function of the root."""
import numpy as np


def g(x, p, q):
    return x * x * x + p * x - q


def f(p, q):
    lo = 0.0
    hi = 4.0
    steps = 0
    while hi - lo > 1e-9:
        mid = 0.5 * (lo + hi)
        if g(mid, p, q) > 0.0:
            hi = mid
        else:
            lo = mid
        steps += 1
    x = 0.5 * (lo + hi)
    for _ in range(2):
        x = x - g(x, p, q) / (3.0 * x * x + p)
    return x * x + np.sin(x) * p


def args():
    return (1.5, 4.2)


ARGNUMS = (0, 1)
ORDER = 1
RTOL = 1e-5
TAGS = {"while", "data_dependent_trip_count", "branch", "helper"}
