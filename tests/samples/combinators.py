"""Sample calls (format: `_spec`) of the parallel combinators: `pb.map` over one
and several arrays, with a tuple result, reading free arrays (one element and
whole), and nested."""
import numpy as np

import pullback as pb

from ._spec import F, S


def _map_free(x, w):
    return pb.map(lambda xi: np.sin(xi * w[1]) + np.dot(w, w) * xi, x)


def _map_nested(a, b):
    return pb.map(lambda r: pb.map(lambda c: np.sum(r * c), b), a)


def _map_tuple(x, y):
    s, p = pb.map(lambda u, v: (u + v, u * np.exp(v)), x, y)
    return s * p


SAMPLES = [
    S("pullback.combinators.map", _map_free, (F(4), F(3))),
    S("pullback.combinators.map", _map_nested, (F(3, 2), F(2, 2)), id="pb.map(nested)"),
    S("pullback.combinators.map", _map_tuple, (F(3), F(3)), id="pb.map(tuple)"),
]
