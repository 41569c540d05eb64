"""ode: y'_0 = x_0, y'_i = x_i y_{i-1}; y(0) = 0; s classical RK4 steps on [0, 2]."""
import numpy as np

import pullback as pb

from ..schema import Array, Int, Limits, Schema
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


# the gradient saves the state at each of the s steps
SCHEMA = Schema("ode", [Array("x", "n"), Int("s", min=1)], sizes={"n": (1, 1 << 62)},
                elements=("n*(s+1)", lambda z: z["n"] * (z["s"] + 1)))


def prepare(inp, limits=None):
    """The arguments of FUNCTIONS for a GradBench input; raises InputError (see SCHEMA)."""
    v = SCHEMA.validate(inp, limits or Limits())
    return (v["x"], v["s"])


FUNCTIONS = {
    "primal": pb.jit(ode, backend=backend()),
    "gradient": pb.grad(ode_last, backend=backend()),
}
