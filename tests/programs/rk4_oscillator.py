"""Runge-Kutta 4 integration of a damped nonlinear oscillator (fixed steps)."""
import numpy as np


def rhs(y, params):
    k, c = params[0], params[1]
    pos, vel = y[0], y[1]
    return np.array([vel, -k * np.sin(pos) - c * vel])


def rk4_step(y, params, dt):
    k1 = rhs(y, params)
    k2 = rhs(y + 0.5 * dt * k1, params)
    k3 = rhs(y + 0.5 * dt * k2, params)
    k4 = rhs(y + dt * k3, params)
    return y + (dt / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


def f(y0, params):
    y = y0
    dt = 0.05
    for _ in range(40):
        y = rk4_step(y, params, dt)
    energy = 0.5 * y[1] ** 2 + params[0] * (1.0 - np.cos(y[0]))
    return energy


def args():
    return (np.array([1.0, 0.0]), np.array([2.0, 0.3]))


ARGNUMS = (0, 1)
ORDER = 2
TAGS = {"ode", "loop", "helper", "array_literal"}
