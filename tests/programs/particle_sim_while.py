"""Particles under gravity + drag + a spring to the origin, integrated with
semi-implicit Euler in a `while t < T` loop."""
import numpy as np


def accel(pos, vel, drag, k):
    g = np.array([0.0, -9.81])
    return g[None, :] - drag * vel - k * pos


def f(pos0, vel0, drag):
    pos = pos0.copy()
    vel = vel0.copy()
    t = 0.0
    dt = 0.01
    T = 0.505
    while t < T:
        vel = vel + dt * accel(pos, vel, drag, 2.0)
        pos = pos + dt * vel
        t = t + dt
    com = np.mean(pos, axis=0)
    return np.sum(com ** 2) + 0.5 * np.sum(vel ** 2)


def args():
    rng = np.random.default_rng(23)
    return (rng.normal(size=(4, 2)), rng.normal(size=(4, 2)), 0.3)


ARGNUMS = (0, 1, 2)
ORDER = 2
TAGS = {"while", "simulation", "helper", "broadcast", "array_literal"}
