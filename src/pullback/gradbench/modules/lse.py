"""lse: logsumexp with the max trick; gradient by pb.grad."""
import numpy as np

import pullback as pb

from ..schema import Array, Limits, Schema
from . import backend


def logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


SCHEMA = Schema("lse", [Array("x", "n")], sizes={"n": (1, 1 << 62)}, elements=("n", lambda z: z["n"]))


def prepare(inp, limits=None):
    """The arguments of FUNCTIONS for a GradBench input; raises InputError (see SCHEMA)."""
    v = SCHEMA.validate(inp, limits or Limits())
    return (v["x"],)


FUNCTIONS = {
    "primal": pb.jit(logsumexp, backend=backend()),
    "gradient": pb.grad(logsumexp, backend=backend()),
}
