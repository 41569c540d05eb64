"""Compile cost of parallel maps (note [numba-parallel], "Compile cost"): the first
call of `pb.value_and_grad` with ``parallel=True`` against ``parallel=False``, each
in a new process with an empty cache, and the warm calls of both.

    python benchmarks/parallel_compile.py                      # this checkout
    python benchmarks/parallel_compile.py --before OLD/src     # also another checkout's src/
    python benchmarks/parallel_compile.py --runs 5 --out benchmarks/results/parallel-compile-now.md

Programs: ``one-map`` (a map over 20 000 rows of 64 reading a free vector: the
primal map and its adjoint, which accumulates the vector's adjoint, run in
parallel) and ``many-maps`` (tests/combinators/test_parallel.py's `model`:
three outermost maps, one of them in a Python loop, a map nested in a map and a
map in a function called from a map; six parallel maps in its vjp). Processes
are not pinned (parallel maps need more than one CPU); numba runs 2 threads,
BLAS one. First calls: wall seconds of the whole first call (numba's compile is
one thread); warm calls: median wall time of interleaved calls of the two
builds in one process after their first calls. Only ratios from one run mean
anything: variants and settings are interleaved run by run.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")
PROGRAMS = ("one-map", "many-maps")


def _program(name):
    import numpy as np

    import pullback as pb

    rng = np.random.default_rng(12)
    if name == "one-map":
        def f(xs, w):
            return np.sum(pb.map(lambda x: np.sum(np.tanh(x * w[0] + w[1]) * np.exp(-x * x)), xs) ** 2)
        return f, (rng.standard_normal((20000, 64)), rng.standard_normal(2)), (0, 1)
    w, xs, idx, c = rng.standard_normal((30, 5)), rng.standard_normal((4000, 5)), rng.integers(0, 30, 4000), 0.7

    def inner(x, w):
        return np.sum(pb.map(lambda r: np.sum(r * x), w))

    def model(xs, w, c, idx):
        ys = pb.map(lambda x, j: c * np.sum(np.tanh(x * w[j])) + np.sum(pb.map(lambda v: v * c, x)), xs, idx)
        zs = pb.map(lambda x: inner(x, w[:3]), xs)
        s = 0.0
        for k in range(2):
            s = s + np.sum(pb.map(lambda x: np.sin(x[k] * c), xs))  # noqa: B023 - staged in this iteration
        return np.sum(ys * ys) + np.sum(zs) + s
    return model, (xs, w, c, idx), (0, 1, 2)


def child(name: str, parallel: bool, rounds: int) -> dict:
    import numpy as np

    import pullback as pb

    f, args, argnums = _program(name)
    g = pb.value_and_grad(f, argnums=argnums, parallel=parallel)
    t0 = time.perf_counter()
    first = g(*args)
    out = {"first": time.perf_counter() - t0}
    other = pb.value_and_grad(f, argnums=argnums, parallel=not parallel)
    second = other(*args)
    ok = np.isclose(first[0], second[0], rtol=1e-9) and all(
        np.allclose(a, b, rtol=1e-9, atol=1e-12) for a, b in zip(first[1], second[1]))
    ts = {True: [], False: []}
    for _ in range(rounds):
        for p, h in ((parallel, g), (not parallel, other)):
            t0 = time.perf_counter()
            h(*args)
            ts[p].append(time.perf_counter() - t0)
    out["warm_par"], out["warm_seq"] = statistics.median(ts[True]), statistics.median(ts[False])
    out["agree"] = bool(ok)
    return out


def run(src: str, name: str, parallel: bool, rounds: int) -> dict:
    cache = tempfile.mkdtemp(prefix="pb-parcompile-")
    env = dict(os.environ, PYTHONPATH=src, PULLBACK_CACHE_DIR=cache, PULLBACK_TIERED="0", NUMBA_NUM_THREADS="2",
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.pop("PULLBACK_PARALLEL", None)
    env.pop("NUMBA_CACHE_DIR", None)
    try:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", name, str(int(parallel)),
                            "--rounds", str(rounds)], env=env, capture_output=True, text=True, timeout=900)
        if p.returncode != 0:
            raise SystemExit(f"{name} failed:\n{p.stderr[-3000:]}")
        return json.loads(p.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", help="another checkout's src/ (a second variant)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=30, help="interleaved warm calls of each build")
    ap.add_argument("--programs", default=",".join(PROGRAMS))
    ap.add_argument("--out")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(child(a.child[0], bool(int(a.child[1])), a.rounds)))
        return
    variants = [("now", SRC)] + ([("before", a.before)] if a.before else [])
    res: dict = {}
    for _ in range(a.runs):
        for name in a.programs.split(","):
            for vname, src in variants:
                for parallel in (True, False):
                    r = run(src, name, parallel, a.rounds)
                    res.setdefault((name, vname, parallel), []).append(r)
                    print(f"{name} {vname} parallel={parallel}: first call {r['first']:.2f} s", file=sys.stderr)
    lines = ["# Compile cost of parallel maps", "",
             f"`python benchmarks/parallel_compile.py {' '.join(argv if argv is not None else sys.argv[1:])}`; "
             f"{a.runs} run(s) (medians), numba 2 threads, not pinned; load average {os.getloadavg()[0]:.2f} at the end.",
             "", "| program | variant | first call, parallel=True | parallel=False | ratio | warm parallel / sequential | agree |",
             "|---|---|---|---|---|---|---|"]
    for name in a.programs.split(","):
        for vname, _ in variants:
            par, seq = res[(name, vname, True)], res[(name, vname, False)]
            fp, fs = statistics.median(r["first"] for r in par), statistics.median(r["first"] for r in seq)
            warm = statistics.median(r["warm_par"] / r["warm_seq"] for r in par + seq)
            agree = all(r["agree"] for r in par + seq)
            lines.append(f"| {name} | {vname} | {fp:.2f} s | {fs:.2f} s | {fp / fs:.2f} | {warm:.2f} | {agree} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
