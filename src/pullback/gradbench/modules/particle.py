"""particle: a charged particle, started at (0, 8) with velocity (0.75, 0), moves
in the field of two unit charges at (10, 10 - w) and (10, 0) (Euler steps of
0.1, its acceleration minus the gradient of the potential p(x; w) = sum of
1/||x - c||) until it would cross the x axis; the intersection point x(t_f) is
found by linear extrapolation. Gradient descent on w (from the input's w)
minimises x_0(t_f)^2; the output is the final w.

Nested derivatives: the objective takes the inner gradient d p / d x at every
Euler step, and gradient descent differentiates the objective (a data-dependent
while loop whose body holds that inner derivative) with respect to w. The
functions are GradBench's four variants, named outer mode then inner mode:
"rr", "rf", "fr", "ff" (r: reverse, `pb.grad`; f: forward, `pb.jacfwd`).

Contract: each FUNCTIONS entry takes the float w0 and returns the float w; all
four agree to rounding. The Euler loop and gradient descent are capped (far
above what a trajectory that reaches the axis, or a descent that converges,
needs); an input that hits a cap gets a PullbackError saying which.
"""
import math

import numpy as np

import pullback as pb

from ...errors import PullbackError
from ..schema import Float, Limits, Schema
from . import backend
from ._descent import argmin

MAX_EULER_STEPS = 10_000      # the trajectory from w = 0 takes 352 steps
MAX_DESCENT_STEPS = 10_000    # gradient descent from w = 0 takes 92 steps


def potential(x, w):
    """The electric potential at the point x (shape (2,)) of the two charges."""
    c1 = np.array([10.0, 10.0 - w])
    c2 = np.array([10.0, 0.0])
    return 1.0 / np.sqrt(np.sum((x - c1) ** 2)) + 1.0 / np.sqrt(np.sum((x - c2) ** 2))


def accel_r(x, w):
    return -pb.grad(potential)(x, w)


def accel_f(x, w):
    return -pb.jacfwd(potential)(x, w)


def naive_euler(w, accel):
    """x_0(t_f)^2 for the charge position w; `accel(x, w)` is the force on the particle."""
    x = np.array([0.0, 8.0])
    xdot = np.array([0.75, 0.0])
    dt = 0.1
    steps = 0
    while True:
        xddot = accel(x, w)
        x_new = x + dt * xdot
        if x_new[1] <= 0.0:
            break
        steps += 1
        if steps > MAX_EULER_STEPS:  # the particle does not reach the x axis: the objective is NaN
            x = x * np.nan
            break
        x = x_new
        xdot = xdot + dt * xddot
    dt_f = -x[1] / xdot[1]
    x_f = x + dt_f * xdot
    return x_f[0] ** 2


def objective_r(w):
    return naive_euler(w[0], accel_r)


def objective_f(w):
    return naive_euler(w[0], accel_f)


def particle_rr(w0):
    return argmin(objective_r, pb.grad, np.array([w0]), MAX_DESCENT_STEPS)[0]


def particle_rf(w0):
    return argmin(objective_f, pb.grad, np.array([w0]), MAX_DESCENT_STEPS)[0]


def particle_fr(w0):
    return argmin(objective_r, pb.jacfwd, np.array([w0]), MAX_DESCENT_STEPS)[0]


def particle_ff(w0):
    return argmin(objective_f, pb.jacfwd, np.array([w0]), MAX_DESCENT_STEPS)[0]


SCHEMA = Schema("particle", [Float("w")])


def prepare(inp, limits=None):
    """The arguments of FUNCTIONS for a GradBench input; raises InputError (see SCHEMA)."""
    v = SCHEMA.validate(inp, limits or Limits())
    return (v["w"],)


def _checked(fn):
    """`fn`, raising a PullbackError when a cap was hit (the result is then NaN)."""
    def run(w0):
        w = fn(w0)
        if not math.isfinite(w):
            raise PullbackError(f"particle: no result from w = {w0!r}: the particle does not reach the x axis "
                                f"within {MAX_EULER_STEPS} Euler steps, or gradient descent does not converge "
                                f"within {MAX_DESCENT_STEPS} steps",
                                hint="start from a w nearer 0 (GradBench's input is w = 0)")
        return w
    run.__name__ = fn.__name__
    return run


FUNCTIONS = {name: _checked(pb.jit(fn, backend=backend()))
             for name, fn in [("rr", particle_rr), ("ff", particle_ff), ("fr", particle_fr), ("rf", particle_rf)]}
