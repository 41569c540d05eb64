"""ode: y'_0 = x_0, y'_i = x_i y_{i-1}; y(0) = 0; s classical RK4 steps on [0, 2]."""
import numpy as np

import pullback as pb

from . import backend


def rhs(x, y):
    return np.concatenate([x[:1], x[1:] * y[:-1]])


def ode(x, s):
    h = 2.0 / s
    y = np.zeros(x.shape[0])
    for _ in range(s):
        k1 = rhs(x, y)
        k2 = rhs(x, y + (0.5 * h) * k1)
        k3 = rhs(x, y + (0.5 * h) * k2)
        k4 = rhs(x, y + h * k3)
        y = y + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return y


def ode_last(x, s):
    y = ode(x, s)
    return y[y.shape[0] - 1]


def prepare(inp):
    s = int(inp["s"])
    if s < 1:
        raise ValueError("ode needs s >= 1")
    return (np.asarray(inp["x"], dtype=np.float64), s)


FUNCTIONS = {
    "primal": pb.jit(ode, backend=backend()),
    "gradient": pb.grad(ode_last, backend=backend()),
}
