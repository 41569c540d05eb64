"""Dict-in, dict-out: a pytree result (jacobian over a pytree)."""
import numpy as np


def f(state, dt):
    pos = state["pos"]
    vel = state["vel"]
    acc = -np.sin(pos) - 0.1 * vel
    new_vel = vel + dt * acc
    new_pos = pos + dt * new_vel
    return {"pos": new_pos, "vel": new_vel, "energy": 0.5 * np.sum(new_vel ** 2)}


def args():
    return ({"pos": np.array([0.3, -0.8, 1.1]), "vel": np.array([0.2, 0.0, -0.5])}, 0.1)


ARGNUMS = (0, 1)
ORDER = 1
TAGS = {"pytree", "dict", "dict_output"}
