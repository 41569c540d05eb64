"""Sample calls (format: `_spec`) of the reducers: `pb.reduce`,
`pb.associative_scan`, `pb.hist`, `pb.scatter` with named and general
operators, and the named operators `pb.add`/`pb.mul`/`pb.min`/`pb.max` called
directly. min/max are piecewise smooth: order 1."""
import numpy as np

import pullback as pb

from ._spec import F, S

IDX = np.array([2, 0, 2, -1, 5, 1])     # two out of range (-1, 5): ignored
UNIQUE = np.array([3, 0, -2, 1])        # one out of range


def _reduce(x, y):
    a, b = pb.reduce(lambda p, q: (p[0] + q[0] * q[1], p[1] * q[1]), (0.0, 1.0), x, y)
    return pb.reduce(pb.add, 0.5, x * y) + pb.reduce(pb.mul, 1.0, x) + a * b


def _scan(x):
    return (pb.associative_scan(pb.add, 0.0, x) * pb.associative_scan(pb.mul, 1.0, x)
            + pb.associative_scan(lambda p, q: p * 0.5 + q, 0.0, x))


def _hist(v):
    return pb.hist(pb.add, 0.0, 4, IDX, v * v) + pb.hist(pb.mul, 1.0, 4, IDX, v)


def _scatter(d, v):
    return pb.scatter(d * d, UNIQUE, np.sin(v))


SAMPLES = [
    S("pullback.reducers.add", lambda a, b: pb.add(a, b) * a, (F(3), F(3))),
    S("pullback.reducers.mul", lambda a, b: pb.mul(a, b) + a, (F(3), F(3))),
    S("pullback.reducers.max", lambda a, b: pb.max(a, b) * b, (F(3), F(3)), order=1),
    S("pullback.reducers.min", lambda a, b: pb.min(a, b) * b, (F(3), F(3)), order=1),
    S("pullback.reducers.reduce", _reduce, (F(4), F(4))),
    S("pullback.reducers.reduce", lambda x: pb.reduce(pb.max, -np.inf, x) * x, (F(5),), order=1,
      id="pullback.reducers.reduce(max)"),
    S("pullback.reducers.associative_scan", _scan, (F(4),)),
    S("pullback.reducers.hist", _hist, (F(6),)),
    S("pullback.reducers.hist", lambda v: pb.hist(pb.max, -10.0, 3, IDX[:3], v), (F(3),), order=1,
      id="pullback.reducers.hist(max)"),
    S("pullback.reducers.scatter", _scatter, (F(5), F(4))),
]
