"""saddle: the saddle point of f(x, y) = (x_1^2 + x_2^2) - (y_1^2 + y_2^2),
x, y in R^2, by gradient descent: x = argmin_x max_y f(x, y), then
y = argmax_y f(x, y), every descent starting from the input's `start`. The
output is [x_1, x_2, y_1, y_2].

Nested derivatives: the outer descent differentiates max_y f(x, y), whose
value is itself found by a descent on y (a data-dependent while loop) that
takes the inner derivative d f / d y. The functions are GradBench's four
variants, named outer mode then inner mode: "rr", "rf", "fr", "ff" (r:
reverse, `pb.grad`; f: forward, `pb.jacfwd`); the final argmax uses the outer
mode, as GradBench specifies.

Contract: each FUNCTIONS entry takes `start` (shape (2,)) and returns an array
of shape (4,); all four agree to rounding. Every descent is capped at
MAX_DESCENT_STEPS iterations (far above what a convergent one needs); an input
that hits the cap gets a PullbackError.
"""
import numpy as np

import pullback as pb

from ...errors import PullbackError
from ..schema import Array, Limits, Schema
from . import backend
from ._descent import argmax, argmin, max_value

MAX_DESCENT_STEPS = 10_000   # each descent from GradBench's start (1, 1) takes ~100 steps


def f(x, y):
    return (x[0] ** 2 + x[1] ** 2) - (y[0] ** 2 + y[1] ** 2)


def max_over_y(x, start, inner):
    """max_y f(x, y), by gradient ascent on y from `start` with the derivative operator `inner`."""
    return max_value(lambda y: f(x, y), inner, start, MAX_DESCENT_STEPS)


def saddle(start, outer, inner):
    """The saddle point from `start`; `outer` and `inner` are the derivative operators."""
    x = argmin(lambda x: max_over_y(x, start, inner), outer, start, MAX_DESCENT_STEPS)
    y = argmax(lambda y: f(x, y), outer, start, MAX_DESCENT_STEPS)
    return np.concatenate([x, y])


def saddle_rr(start):
    return saddle(start, pb.grad, pb.grad)


def saddle_rf(start):
    return saddle(start, pb.grad, pb.jacfwd)


def saddle_fr(start):
    return saddle(start, pb.jacfwd, pb.grad)


def saddle_ff(start):
    return saddle(start, pb.jacfwd, pb.jacfwd)


SCHEMA = Schema("saddle", [Array("start", 2)])


def prepare(inp, limits=None):
    """The arguments of FUNCTIONS for a GradBench input; raises InputError (see SCHEMA)."""
    v = SCHEMA.validate(inp, limits or Limits())
    return (v["start"],)


def _checked(fn):
    """`fn`, raising a PullbackError when a descent hit its cap (the result then holds NaNs)."""
    def run(start):
        out = fn(start)
        if not np.isfinite(out).all():
            raise PullbackError(f"saddle: no result from start = {start.tolist()}: a gradient descent does not "
                                f"converge within {MAX_DESCENT_STEPS} steps",
                                hint="start nearer the saddle point (0, 0) (GradBench's input is (1, 1))")
        return out
    run.__name__ = fn.__name__
    return run


FUNCTIONS = {name: _checked(pb.jit(fn, backend=backend()))
             for name, fn in [("rr", saddle_rr), ("ff", saddle_ff), ("fr", saddle_fr), ("rf", saddle_rf)]}
