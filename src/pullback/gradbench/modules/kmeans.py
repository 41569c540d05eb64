"""kmeans: cost = sum_i min_j ||C_j - P_i||^2; dir = J / H, with J the gradient
w.r.t. C and H the diagonal of its Hessian from one jvp of the gradient
(tangent ones for C, zeros for P; the Hessian is diagonal)."""
import numpy as np

import pullback as pb

from ..schema import Array, Limits, Schema
from . import backend


def cost(C, P):
    n = P.shape[0]
    k = C.shape[0]
    D = np.zeros((n, k))
    for j in range(k):
        diff = P - C[j]
        D[:, j] = np.sum(diff * diff, axis=1)
    return np.sum(np.min(D, axis=1))


def direction(C, P):
    J, H = pb.jvp(pb.grad(cost), (C, P), (np.ones_like(C), np.zeros_like(P)))
    return J / H


# the loop over the k centroids makes (and the gradient saves) an (n, d) array per step
SCHEMA = Schema("kmeans", [Array("centroids", "k", "d"), Array("points", "n", "d")],
                sizes={"k": (1, 1 << 62), "n": (1, 1 << 62), "d": (1, 1 << 62)},
                elements=("k*n*d + n*k", lambda z: z["k"] * z["n"] * z["d"] + z["n"] * z["k"]))


def prepare(inp, limits=None):
    """The arguments of FUNCTIONS for a GradBench input; raises InputError (see SCHEMA)."""
    v = SCHEMA.validate(inp, limits or Limits())
    return (v["centroids"], v["points"])


FUNCTIONS = {
    "cost": pb.jit(cost, backend=backend()),
    "dir": pb.jit(direction, backend=backend()),
}
