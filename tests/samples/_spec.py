"""The format of a sample call of a supported NumPy/SciPy function, used by the
function-table tests (tests/test_numpy_table.py): every function listed in
docs/numpy_coverage.md with derivatives has at least one sample.

A sample module (one per area, `tests/samples/<area>.py`) defines
``SAMPLES = [S(...), ...]``. `S(name, fn, args)`:

- ``name``: the function's row on the coverage page, e.g. ``"np.linalg.cholesky"``;
- ``fn``: a Python function of the float arguments that calls it (it may
  compose, e.g. make a matrix symmetric positive definite first), returning a
  float array or scalar;
- ``args``: argument specs, `F(*shape, lo=, hi=)` (uniform floats in [lo, hi]);
- ``order``: highest derivative order checked (2 unless the function is only
  piecewise smooth there); ``rtol``/``atol``: tolerances of the comparisons;
- ``backends``: where it is checked (all three by default);
- ``id``: a short label that tells apart several samples of one function
  (default: the function's name, numbered when it has several samples);
- ``eps``: the step of the central differences (widen it for float32 results).

Each function's first sample whose arguments have rank <= 2 is the one the fast
numba tests compile (bundled with others'); keep it small. Every sample is
checked on interp (and, in the slow tests, on pysource and numba) on its own.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class F:
    shape: tuple
    lo: float = -2.0
    hi: float = 2.0

    def __init__(self, *shape, lo=-2.0, hi=2.0):
        object.__setattr__(self, "shape", tuple(shape))
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)

    def make(self, rng):
        v = rng.uniform(self.lo, self.hi, self.shape)
        return float(v) if not self.shape else v


@dataclass(frozen=True)
class S:
    name: str
    fn: Callable
    args: tuple
    order: int = 2
    rtol: float = 1e-5
    atol: float = 1e-7
    backends: tuple = ("interp", "pysource", "numba")
    id: str = field(default="")
    eps: float = 1e-6

    def make(self, seed: int = 0):
        rng = np.random.default_rng(seed)
        return tuple(a.make(rng) for a in self.args)
