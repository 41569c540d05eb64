"""2-D products with a narrow inner axis (note [small-matmul], "Narrow inner axes"):
pullback's loops (`numba_narrow._pb_mmk`) against numba's `@` (BLAS), side by side
in one process.

    PYTHONPATH=src python benchmarks/narrow_matmul.py [--shapes 95x4x66,95x3x3] [--rounds 5]

Single-threaded, pinned to one core, BLAS at one thread. For each shape m x k x n
(x: m x k, y: k x n), the helper is the call pullback's numba backend prints for
`x @ y` (taken from the emitted module of `pb.jit(lambda x, y: x @ y)`), and the
baseline is numba's `x @ y`. Both run inside one numba loop of repetitions (no
dispatch per product), with `y` C-contiguous and, as ht's `positions @ T.T`,
a transposed view (column `y^T`). Each figure is the best of `--rounds` batches,
in microseconds per product; the ratio is helper / BLAS (below 1: the helper
is faster). The two results are checked to agree to rounding.
"""
import os
import sys

import _one_core  # noqa: E402,F401 - single thread, one core: before NumPy and Numba

import argparse  # noqa: E402
import re  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from numba import njit  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
import pullback as pb  # noqa: E402
from pullback.backends import numba_backend as nb  # noqa: E402
from pullback.backends.numba_narrow import _pb_mmk  # noqa: E402

DEFAULT = "95x4x66,95x3x3,300x3x26,64x4x64,100x4x100,1000x4x200,2000x2x2"


def helper_loop(m, k, n):
    """A numba loop of `reps` products `x @ y` made exactly as pullback's numba
    backend prints them for (m x k) @ (k x n) (the `numba_narrow._pb_mmk` call
    taken from the emitted module of `pb.jit(lambda x, y: x @ y)`), and one
    product alone."""
    x, y = np.ones((m, k)), np.ones((k, n))
    src = nb.emit_prog(nb.lower(pb.jit(lambda x, y: x @ y).staged(x, y).prog), parallel=False)
    found = re.search(r"_pb_mmk\((\w+), (\w+), (\d+), (\d+)\)", src)
    if found is None:
        raise SystemExit(f"{m}x{k}x{n}: pullback prints no narrow product for it (k > SMALL_K, or too large)")
    call = f"_pb_mmk(x, y, {int(found.group(3))}, {int(found.group(4))})"
    scope = {"np": np, "njit": njit, "_pb_mmk": _pb_mmk}
    exec(f"""
@njit(error_model="numpy")
def run(x, y, reps):
    t = 0.0
    for _ in range(reps):
        t += {call}[0, 0]
    return t

@njit(error_model="numpy")
def one(x, y):
    return {call}
""", scope)   # our own text
    return scope["run"], scope["one"]


@njit(error_model="numpy")
def blas(x, y, reps):
    t = 0.0
    for _ in range(reps):
        t += (x @ y)[0, 0]
    return t


def best(f, x, y, reps, rounds):
    f(x, y, 1)
    out = []
    for _ in range(rounds):
        t = time.perf_counter()
        f(x, y, reps)
        out.append((time.perf_counter() - t) / reps)
    return min(out) * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default=DEFAULT)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    print("| m x k x n | y | helper us | BLAS us | helper / BLAS |")
    print("|---|---|---|---|---|")
    for shape in a.shapes.split(","):
        m, k, n = (int(d) for d in shape.split("x"))
        h, hf = helper_loop(m, k, n)
        x = rng.standard_normal((m, k))
        for lay, y in (("C", rng.standard_normal((k, n))), ("transposed", rng.standard_normal((n, k)).T)):
            np.testing.assert_allclose(hf(x, y), x @ y, rtol=1e-12, atol=1e-12)
            reps = max(1, 400_000 // (m * n))
            th, tb = best(h, x, y, reps, a.rounds), best(blas, x, y, reps, a.rounds)
            print(f"| {m} x {k} x {n} | {lay} | {th:.2f} | {tb:.2f} | {th / tb:.2f} |")


if __name__ == "__main__":
    main()
