"""Particles in a potential: explicit Euler steps in a for loop, each step a pb.map
over the particles (a map in a loop) reading free parameters; the per-particle
force has an if on the distance (away from the threshold at args())."""
import numpy as np
import pullback as pb


def f(pos, vel, params, steps):
    dt = 0.05

    def step(p, v):
        r2 = np.sum(p * p)
        if r2 > 1.0:
            force = -params[0] * p / r2
        else:
            force = -params[1] * p
        v2 = v + dt * force
        return p + dt * v2, v2

    for _ in range(steps):
        pos, vel = pb.map(step, pos, vel)
    return np.sum(pos * pos) + 0.5 * np.sum(vel * vel)


def args():
    rng = np.random.default_rng(123)
    pos = np.array([[0.3, 0.2], [1.2, -0.6], [0.1, -0.5], [-1.5, 0.9]])
    return (pos, rng.normal(size=(4, 2)) * 0.1, np.array([0.8, 1.3]), 4)


ARGNUMS = (0, 1, 2)
STATIC_ARGNUMS = (3,)
TAGS = {"map", "map_in_loop", "if"}
