"""A map whose lambda runs a loop: Horner evaluation of a free polynomial at each
point, and a while loop (a data-independent counter) around the map."""
import numpy as np
import pullback as pb


def f(coeffs, xs, scale):
    def horner(x):
        acc = 0.0
        for k in range(coeffs.shape[0]):
            acc = acc * x + coeffs[k]
        return np.tanh(acc)

    ys = xs
    n = 0
    while n < 2:
        ys = pb.map(horner, ys * scale)
        n += 1
    return np.sum(ys * xs)


def PYTHON_REF(coeffs, xs, scale):
    ys = xs
    for _ in range(2):
        ys = np.tanh(np.polyval(coeffs, ys * scale))
    return np.sum(ys * xs)


def args():
    rng = np.random.default_rng(124)
    return (rng.normal(size=4) * 0.5, rng.normal(size=5), 0.9)


ARGNUMS = (0, 1, 2)
ORDER = 2
TAGS = {"map", "loop_in_map", "while"}
