"""The checkpointing benchmark's programs (plain pullback-style Python; no annotations).

Each workload is one function differentiated as is under every `checkpoint=` strategy;
`run.py` measures them. The problem size is an argument where it can be traced (the ODE's
step count, the while loop's threshold, the recursion's range), so one compiled gradient
serves every size; the determinant's order is an array shape, so each n is its own program.
"""
import importlib.util
import pathlib

import numpy as np


def _det_lu_module():
    path = pathlib.Path(__file__).resolve().parent.parent / "programs" / "det_lu.py"
    spec = importlib.util.spec_from_file_location("_bench_det_lu", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# --------------------------------------------------------------------------- 1. determinant

# the benchmark suite's det_lu (benchmarks/programs/det_lu.py): Gaussian elimination without
# pivoting, scalar in-place row updates (the slides' experiment). Stored bytes under "store"
# grow like the n^3/3 updates' undo log, under a loop schedule like n^2 state x log snapshots.
det_lu = _det_lu_module().det_lu


def det_input(n, rng):
    """A diagonally dominant n x n matrix (no pivoting needed)."""
    return rng.uniform(-1.0, 1.0, (n, n)) + n * np.eye(n)


# --------------------------------------------------------------------------- 2. ODE

def ode(x0, k, t):
    """t explicit-Euler steps of a ring of m coupled nonlinear oscillators
    x' = k * sin(roll(x)) - x / 2 (m doubles of loop-carried state; t traced)."""
    x = x0
    h = 1e-3
    for i in range(t):
        x = x + h * (k * np.sin(x[::-1]) - 0.5 * x)
    return np.sum(x * x)


def ode_input(m, rng):
    return rng.uniform(-1.0, 1.0, m), rng.uniform(0.5, 1.5, m)


# --------------------------------------------------------------------------- 3. while loop

def until(x0, c, limit):
    """Explicit Euler steps of a growing state until its sum of squares passes `limit`:
    the trip count depends on the data (about log(limit) / (2 h c) steps)."""
    x = x0
    h = 1e-3
    while np.sum(x * x) < limit:
        x = x + h * (c * x + 0.1 * np.sin(x))
    return np.sum(x)


def until_input(m, rng):
    return rng.uniform(0.5, 1.0, m), rng.uniform(0.8, 1.2, m)


# --------------------------------------------------------------------------- 4. recursion

def rsum(a, lo, hi):
    """Divide-and-conquer reduction with a nonlinearity per node: depth log2(n), n / 8 leaves."""
    if hi - lo <= 8:
        s = 0.0
        for i in range(lo, hi):
            s += a[i] * a[i]
        return s
    mid = (lo + hi) // 2
    return rsum(a, lo, mid) + np.sin(rsum(a, mid, hi))


def chain(x, d):
    """A chain recursion of depth d (the stack is the run's state)."""
    if d == 0:
        return x
    return np.sin(chain(x, d - 1)) * 1.01


def tree(x, d):
    """A full binary call tree of depth d: 2^d leaves, the stack only d frames deep
    (a long run with a shallow state: what whole-program checkpointing is for)."""
    if d == 0:
        return np.sin(x)
    return 0.5 * tree(x * 0.9, d - 1) + 0.5 * np.sin(tree(x * 1.1, d - 1))
