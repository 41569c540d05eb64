"""Polynomial evaluation with Horner's rule (loop over coefficients)."""
import numpy as np


def f(coeffs, x):
    # coeffs[0] is the leading coefficient
    acc = 0.0
    for i in range(coeffs.shape[0]):
        acc = acc * x + coeffs[i]
    return acc


def args():
    rng = np.random.default_rng(0)
    return (rng.normal(size=6), 0.7)


ARGNUMS = (0, 1)
ORDER = 2
TAGS = {"loop", "accumulator", "scalar_arg"}
EXPECTED = lambda a: np.polyval(a[0], a[1])
