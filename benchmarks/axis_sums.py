"""Sums over some axes of an array (note [numba-fusion], "Lone partial sums"):
the loop pullback's numba backend prints for `np.sum(x, axis=k)`, against
numba's own `np.sum(x, axis=k)` (what it printed before), in compile time and in
speed.

    python benchmarks/axis_sums.py [--shapes 1000x64,64x1000] [--rounds 5]
    python benchmarks/axis_sums.py --before OLD/src [--runs 3]    # first calls, two checkouts
    python benchmarks/axis_sums.py --whole [--rounds 5]           # sums of every axis (note [pairwise-sums])

Single-threaded, pinned to one core. Speed: for each shape and axis, the
function of the module pullback emits for `lambda x: np.sum(x, axis=k)`
(its text, compiled here without numba's disk cache) and `njit(np.sum(x,
axis=k))`, both called from Python, best of `--rounds` batches, in
microseconds per call; the ratio is pullback / numba (below 1: the loop is
faster). The two results are checked to agree to rounding.

`--whole`: the sum of every axis, `pb.jit(lambda x: np.sum(x))` on the numba
backend (NumPy's pairwise order, note [pairwise-sums]) against NumPy's
`np.sum` and numba's `np.sum` (one element at a time: what pullback printed
before session 29), all called from Python, best of `--rounds` batches, for a
vector, a strided vector, and C, F and non-contiguous matrices; `same bits`
says whether pullback's value is np.sum's bit for bit.

Compile time (`--before`): a new process per run, with an empty pullback cache,
times the CPU seconds of the first call of `pb.jit(f, backend="numba")` and of
`pb.grad(g, backend="numba")` (an affine layer's bias gradient, whose adjoint
is a sum over the batch axis), with this checkout's `src/` and with `OLD/src`
(PYTHONPATH), the two interleaved; medians over `--runs`.
"""
import os
import sys

import _one_core  # noqa: E402,F401 - single thread, one core: before NumPy and Numba

import argparse  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
DEFAULT = "1000x64,64x1000,10000x8,100x100,5x3"

_FIRST_CALL = """
import time, numpy as np, pullback as pb
def f(x):
    return np.sum(x, axis=0)
def g(w, b, x):
    return np.sum(np.tanh(x @ w + b) ** 2)
rng = np.random.default_rng(0)
t = time.process_time()
pb.jit(f, backend="numba")(rng.standard_normal((50, 8)))
t1 = time.process_time()
pb.grad(g, argnums=(0, 1), backend="numba")(rng.standard_normal((8, 4)), rng.standard_normal(4),
                                              rng.standard_normal((50, 8)))
print(t1 - t, time.process_time() - t1)
"""


def first_calls(src: str) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as d:
        script = os.path.join(d, "first_call.py")   # a file: pullback stages from the source
        with open(script, "w") as fh:
            fh.write(_FIRST_CALL)
        env = dict(os.environ, PYTHONPATH=src, PULLBACK_CACHE_DIR=os.path.join(d, "cache"),
                   PULLBACK_WARM_CACHE="0")
        out = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True, check=True)
    a, b = out.stdout.split()
    return float(a), float(b)


def compile_times(before: str, runs: int) -> None:
    res = {"now": [], "before": []}
    for _ in range(runs):
        for name, src in (("now", SRC), ("before", before)):
            res[name].append(first_calls(src))
    print("| variant | first call: np.sum(x, axis=0) s | first call: bias gradient s |")
    print("|---|---|---|")
    for name, rows in res.items():
        print(f"| {name} | {statistics.median(r[0] for r in rows):.2f} | {statistics.median(r[1] for r in rows):.2f} |")


def speeds(shapes: str, rounds: int) -> None:
    sys.path.insert(0, SRC)
    from numba import njit

    import pullback as pb
    from pullback.backends import numba_backend as nb

    rng = np.random.default_rng(0)
    print("| shape | axis | pullback us | numba np.sum us | pullback / numba |")
    print("|---|---|---|---|---|")
    for shape in shapes.split(","):
        dims = tuple(int(d) for d in shape.split("x"))
        x = rng.standard_normal(dims)
        for axis in range(len(dims)):
            def f(x, axis=axis):
                return np.sum(x, axis=axis)
            src = nb.emit_prog(nb.lower(pb.jit(f, backend="numba").staged(x).prog), parallel=False)
            scope: dict = {}
            exec(src.replace("cache=True", "cache=False"), scope)   # our own text
            ours = scope["f"]
            theirs = njit(error_model="numpy")(lambda x, axis=axis: np.sum(x, axis=axis))
            np.testing.assert_allclose(ours(x), theirs(x), rtol=1e-12, atol=1e-12)
            reps = max(10, 2_000_000 // x.size)
            t = []
            for fn in (ours, theirs):
                out = []
                for _ in range(rounds):
                    s = time.perf_counter()
                    for _ in range(reps):
                        fn(x)
                    out.append((time.perf_counter() - s) / reps * 1e6)
                t.append(min(out))
            print(f"| {shape} | {axis} | {t[0]:.2f} | {t[1]:.2f} | {t[0] / t[1]:.2f} |")


def whole(rounds: int) -> None:
    sys.path.insert(0, SRC)
    from numba import njit

    import pullback as pb

    rng = np.random.default_rng(0)
    big = rng.standard_normal((1280, 1000))
    cases = {"vector 1280000": big.reshape(-1), "strided vector 640000": big.reshape(-1)[::2],
             "C 1280x1000": big, "F 1000x1280": big.T, "non-contiguous 1280x500": big[:, ::2]}
    ours = pb.jit(lambda x: np.sum(x), backend="numba")
    numbas = njit(error_model="numpy")(lambda x: np.sum(x))
    print("| array | pullback us | NumPy np.sum us | numba np.sum us | pullback / NumPy | same bits as NumPy |")
    print("|---|---|---|---|---|---|")
    for name, x in cases.items():
        t = []
        for fn in (ours, np.sum, numbas):
            fn(x)
            out = []
            for _ in range(rounds):
                s = time.perf_counter()
                for _ in range(20):
                    fn(x)
                out.append((time.perf_counter() - s) / 20 * 1e6)
            t.append(min(out))
        same = np.float64(ours(x)).tobytes() == np.float64(np.sum(x)).tobytes()
        print(f"| {name} | {t[0]:.1f} | {t[1]:.1f} | {t[2]:.1f} | {t[0] / t[1]:.2f} | {'yes' if same else 'no'} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default=DEFAULT)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--before", help="another checkout's src/: compare first-call compile times")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--whole", action="store_true", help="sums of every axis instead")
    a = ap.parse_args()
    if a.whole:
        whole(a.rounds)
    elif a.before:
        compile_times(os.path.abspath(a.before), a.runs)
    else:
        speeds(a.shapes, a.rounds)


if __name__ == "__main__":
    main()
