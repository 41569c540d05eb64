"""lstm: the ADBench LSTM objective; jacobian by pb.grad w.r.t. (main_params,
extra_params), flattened row by row and concatenated."""
import numpy as np

import pullback as pb

from ..schema import Array, Limits, Schema
from . import backend


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def lstm_objective(main_params, extra_params, state, sequence):
    layers = main_params.shape[0] // 2
    c = sequence.shape[0]
    b = sequence.shape[1]
    st = state.copy()
    total = 0.0
    for t in range(c - 1):
        x = sequence[t] * extra_params[0]
        for i in range(layers):
            W = main_params[2 * i]
            B = main_params[2 * i + 1]
            h = st[2 * i]
            cell = st[2 * i + 1]
            forget = sigmoid(x * W[0:b] + B[0:b])
            ingate = sigmoid(h * W[b:2 * b] + B[b:2 * b])
            outgate = sigmoid(x * W[2 * b:3 * b] + B[2 * b:3 * b])
            change = np.tanh(h * W[3 * b:4 * b] + B[3 * b:4 * b])
            cell = cell * forget + ingate * change
            h = outgate * np.tanh(cell)
            st[2 * i] = h
            st[2 * i + 1] = cell
            x = h
        ypred = x * extra_params[1] + extra_params[2]
        lse = np.log(np.sum(np.exp(ypred)) + 2.0)
        total = total + np.sum(sequence[t + 1] * (ypred - lse))
    return -total / ((c - 1) * b)


_objective = pb.jit(lstm_objective, backend=backend())
_grad = pb.grad(lstm_objective, argnums=(0, 1), backend=backend())


def objective(main_params, extra_params, state, sequence):
    return _objective(main_params, extra_params, state, sequence)


def jacobian(main_params, extra_params, state, sequence):
    gm, ge = _grad(main_params, extra_params, state, sequence)
    return np.concatenate([gm.reshape(-1), ge.reshape(-1)])


# L layers, b characters, c steps; the gradient saves a few length-b vectors per layer and step
SCHEMA = Schema("lstm", [
    Array("main_params", "2*L", "4*b"), Array("extra_params", 3, "b"), Array("state", "2*L", "b"),
    Array("sequence", "c", "b"),
], sizes={"L": (1, 1 << 62), "b": (1, 1 << 62), "c": (2, 1 << 62)},
    elements=("16*c*L*b", lambda z: 16 * z["c"] * z["L"] * z["b"]))


def prepare(inp, limits=None):
    """The arguments of FUNCTIONS for a GradBench input; raises InputError (see SCHEMA)."""
    v = SCHEMA.validate(inp, limits or Limits())
    return (v["main_params"], v["extra_params"], v["state"], v["sequence"])


FUNCTIONS = {"objective": objective, "jacobian": jacobian}
