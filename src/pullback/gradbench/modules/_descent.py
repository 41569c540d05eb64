"""Gradient descent with an adaptive step, shared by particle and saddle (the
solver of Pearlmutter and Siskind's benchmarks, as GradBench's tools use it).

Contract: `argmin(f, grad, x, max_steps)` minimises f: R^n -> R from x (shape
(n,)); `grad` is the derivative operator to use (`pb.grad`, `pb.jacfwd`), and
the descent calls `grad(f)`. The step size eta starts at
1e-5, doubles after every 10 accepted steps and halves after a rejected one (a
step that does not lower f). It stops when ||df(x)|| <= 1e-5 or a step would
move x by at most 1e-5, and returns x. It returns NaNs (the callers report
that as an error) after `max_steps` iterations without converging, or as soon
as f or its gradient is not finite at the current point (a trial point where
f is NaN is rejected like one where f does not decrease). `argmax` and `max_value` maximise
the same way (descent on -f, whose derivative `grad` takes). All are meant to
be staged by pullback (`pb.jit`); f may be a closure over staged values.
"""
import numpy as np


def argmin(f, grad, x, max_steps):
    df = grad(f)
    fx = f(x)
    gx = df(x)
    eta = 1e-5
    accepted = 0
    steps = 0
    done = False
    while not done and steps < max_steps:
        steps += 1
        if not abs(fx) + np.sum(np.abs(gx)) < np.inf:  # a NaN or an infinity: give up (no np.isfinite in pullback)
            break
        if np.sqrt(np.sum(gx * gx)) <= 1e-5:
            done = True
        elif accepted == 10:
            eta = 2.0 * eta
            accepted = 0
        else:
            x_new = x - eta * gx
            if np.sqrt(np.sum((x - x_new) ** 2)) <= 1e-5:
                done = True
            else:
                fx_new = f(x_new)
                if fx_new < fx:
                    x = x_new
                    fx = fx_new
                    gx = df(x_new)
                    accepted += 1
                else:
                    eta = eta / 2.0
                    accepted = 0
    if not done:
        x = x * np.nan
    return x


def argmax(f, grad, x, max_steps):
    return argmin(lambda y: -f(y), grad, x, max_steps)


def max_value(f, grad, x, max_steps):
    return f(argmax(f, grad, x, max_steps))
