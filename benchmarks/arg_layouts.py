"""Arguments that are not C-ordered (note [contiguous-args]): per-call time of
pullback's primal and gradient on a strided vector, an F-ordered matrix and a
column-sliced matrix, each against the same values C-ordered, and the first call
on the new layout (a numba compile of the whole module for that layout, or none
when the argument is copied to C order).

    python benchmarks/arg_layouts.py [--src OTHER/src] [--rounds 15]

Single-threaded, pinned to one core, an empty pullback cache. Each program is
compiled for the C-ordered argument first (not timed); `first call` is then the
first call with the other layout. Times are medians of `--rounds` calls,
interleaved with the C-ordered calls; `x C` is the ratio to them. `--src`: run
another checkout's src/ instead (its callables, this script's timing).
"""
import os
import sys

import _one_core  # noqa: E402,F401 - single thread, one core: before NumPy and Numba

import argparse  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402


def lse(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def quad(X):
    return np.sum(X * X - 3.0 * X)


def corner(X):
    return X[3, 0] * 2.0 + X[0, 1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
    ap.add_argument("--rounds", type=int, default=15)
    a = ap.parse_args()
    os.environ["PULLBACK_CACHE_DIR"] = tempfile.mkdtemp(prefix="pullback-layouts-")
    sys.path.insert(0, os.path.abspath(a.src))
    import pullback as pb

    rng = np.random.default_rng(0)
    v = rng.standard_normal(2 * 1_000_000)
    M = rng.standard_normal((1000, 2000))
    cases = [("lse", lse, "strided vector", v[::2]), ("lse", lse, "reversed vector", v[::-2]),
             ("quad", quad, "F matrix", np.asfortranarray(M[:, :1000])), ("quad", quad, "column slice", M[:, :1000]),
             ("lse", lse, "F matrix", np.asfortranarray(M[:, :1000])),
             ("corner", corner, "F matrix (2 elements read)", np.asfortranarray(M))]
    print("| program | argument | what | C-ordered | this layout | x C | first call on this layout |")
    print("|---|---|---|---|---|---|---|")
    for name, f, label, arg in cases:
        c = np.ascontiguousarray(arg)
        for what, t in (("primal", pb.jit(f)), ("gradient", pb.grad(f))):
            if name == "corner" and what == "gradient":
                continue
            t(c)
            s = time.perf_counter()
            t(arg)
            first = time.perf_counter() - s
            tc, ta = [], []
            for _ in range(a.rounds):
                for x, acc in ((c, tc), (arg, ta)):
                    s = time.perf_counter()
                    t(x)
                    acc.append(time.perf_counter() - s)
            mc, ma = statistics.median(tc), statistics.median(ta)
            print(f"| {name} | {label} | {what} | {mc * 1e3:.3f} ms | {ma * 1e3:.3f} ms | {ma / mc:.2f} | {first:.3f} s |",
                  flush=True)


if __name__ == "__main__":
    main()
