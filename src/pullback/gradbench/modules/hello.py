"""hello: GradBench's protocol check. "square" is f(x) = x * x and "double" its
derivative 2x, by `pb.grad`.

Contract: the input is a bare JSON number (not an object: GradBench's hello
sends no min_runs / min_seconds), and each function returns a float. Anything
else, and a number that is not finite, is an InputError (schema.Float's check).
"""
import pullback as pb

from ..schema import Float
from . import backend


def square(x):
    return x * x


# the input is a bare number, not an object: one field, checked by prepare()
SCHEMA = Float("input")


def prepare(inp, limits=None):
    """The arguments of FUNCTIONS for a GradBench input (a finite number); raises InputError."""
    return (SCHEMA.check("input", inp),)


FUNCTIONS = {
    "square": pb.jit(square, backend=backend()),
    "double": pb.grad(square, backend=backend()),
}
