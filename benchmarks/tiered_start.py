"""Tiered compilation (note [tiered-compile]): seconds to the first result and to
numba's code, with and without tiering, from an empty cache.

    python benchmarks/tiered_start.py [--runs 2] [--cases gmm:gb-d64-k5,det:default,...] [--out FILE]

Cases are program:size of benchmarks/programs, or GradBench's ``ba:P`` (P
observations, the ba1 camera and point counts) and ``ht:NPTS`` (simple, a
synthetic 22-bone model, benchmarks/gradbench_jac.py), whose primal and
derivative are the module's objective and Jacobian.

Each run of a case is a new process with an empty cache that stages and calls
the benchmark program's primal, then its derivative (benchmarks/programs), as
a user's script would: **first** is the wall-clock seconds from a call to its
result, **ready** the seconds from that call until numba's code runs
(`pb.wait_for_compiles()` returned; the same as first when nothing compiles
in the background). **cpu** is the CPU seconds of the process and of its
compile worker until ready: tiering moves the compile
to another core, it does not remove it. Variants: **tiered** (the default)
and **untiered** (``PULLBACK_TIERED=0``), interleaved run by run; medians
over the runs.

``--flow script`` calls the primal and then the derivative without waiting
in between, as a script that evaluates a loss and its gradient does, and then
waits for numba: both jobs are in the background at once, so the variants
are tiered with ``PULLBACK_COMPILE_WORKERS`` 2 and 1 (the two compiles side
by side or one after the other) and untiered; **all ready** is the seconds
from the primal's call until numba's code runs for both.

Threads are limited to one per process (``*_NUM_THREADS=1``) but processes
are not pinned: the worker is meant to run on another core, as it does on a
user's machine. Compare within one run only.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")
CASES = ("gmm:gb-d64-k5,det:default,lstm:default,ode:gb-n10000-s100,kmeans:default,det_lu:default,llsq:default,"
         "ba:31843")

_CHILD = r"""
import json, os, sys, time
sys.path[:0] = [{here!r}, {src!r}]
import numpy as np
from programs import load, params
import pullback as pb

if {name!r} in ("ba", "ht"):   # GradBench's modules, as the server runs them (synthetic inputs)
    aff = os.sched_getaffinity(0)
    import gradbench_jac as gj
    os.sched_setaffinity(0, aff)   # gradbench_jac pins itself to one core; the worker needs another
    from pullback.gradbench.modules import ba, ht
    if {name!r} == "ba":
        fargs = ba.prepare(gj.ba_input(49, 7776, int({size!r})))
        primal, deriv = ba.FUNCTIONS["objective"], ba.FUNCTIONS["jacobian"]
    else:
        fargs = ht.prepare(gj.ht_input(544, 1084, int({size!r}), False))
        primal, deriv = ht.FUNCTIONS["objective"], ht.FUNCTIONS["jacobian"]
else:
    mod = load({name!r})
    primal, deriv, fargs = mod.tool_pullback(mod.make_input(params(mod, {size!r}), np.random.default_rng(0)),
                                             None)
out = {{}}
start = time.perf_counter()
for what, fn in (("primal", primal), ("deriv", deriv)):
    t0 = time.perf_counter()
    fn(*fargs)
    t1 = time.perf_counter()
    if {flow!r} == "each":
        pb.wait_for_compiles()
    t2 = time.perf_counter()
    out[what] = [t1 - t0, t2 - t0]
pb.wait_for_compiles()
out["ready"] = time.perf_counter() - start
from pullback.backends.numba_tiered import worker_cpu_seconds
out["cpu"] = time.process_time() + worker_cpu_seconds()
print(json.dumps(out))
"""


VARIANTS = {"each": {"tiered": {"PULLBACK_TIERED": "1"}, "untiered": {"PULLBACK_TIERED": "0"}},
            "script": {"tiered, 2 workers": {"PULLBACK_TIERED": "1", "PULLBACK_COMPILE_WORKERS": "2"},
                       "tiered, 1 worker": {"PULLBACK_TIERED": "1", "PULLBACK_COMPILE_WORKERS": "1"},
                       "untiered": {"PULLBACK_TIERED": "0"}}}


def run_case(name, size, variant_env, flow):
    env = dict(os.environ)
    for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS"):
        env[v] = "1"
    env["PULLBACK_PARALLEL"] = "0"
    env.pop("PULLBACK_COMPILE_WORKERS", None)
    env.update(variant_env)
    with tempfile.TemporaryDirectory(prefix="pb-tiered-") as d:
        env["PULLBACK_CACHE_DIR"] = d
        r = subprocess.run([sys.executable, "-c", _CHILD.format(here=HERE, src=SRC, name=name, size=size, flow=flow)],
                           env=env, capture_output=True, text=True)
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return {"error": (r.stderr.strip().splitlines() or ["no output"])[-1][:200]}


def fmt(s):
    return "–" if s is None else (f"{s:.2f} s" if s >= 1 else f"{s * 1e3:.0f} ms")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--cases", default=CASES, help="comma-separated program:size")
    p.add_argument("--out", default=None, help="also write the markdown table here")
    p.add_argument("--flow", choices=sorted(VARIANTS), default="each",
                   help="each: wait for numba after each first call; script: primal, derivative, then wait")
    args = p.parse_args(argv)
    cases = [c.split(":") for c in args.cases.split(",")]
    variants = VARIANTS[args.flow]
    res = {(n, s, v): [] for n, s in cases for v in variants}
    for _ in range(args.runs):
        for n, s in cases:
            for v, venv in variants.items():
                res[(n, s, v)].append(run_case(n, s, venv, args.flow))
                print(n, s, v, res[(n, s, v)][-1], file=sys.stderr, flush=True)
    cols = (["primal first", "primal ready", "deriv first", "deriv ready"] if args.flow == "each"
            else ["primal first", "deriv first", "all ready"])
    L = ["| case | variant | " + " | ".join(cols) + " | cpu (process + workers) |",
         "|---|---|" + "---|" * (len(cols) + 1)]
    for n, s in cases:
        for v in variants:
            rs = [r for r in res[(n, s, v)] if "error" not in r]
            if not rs:
                L.append(f"| {n} ({s}) | {v} | error: {res[(n, s, v)][0]['error']} |" + "|" * len(cols))
                continue

            def med(f):
                return statistics.median(f(r) for r in rs)
            figs = [med(lambda r: r["primal"][0])]
            if args.flow == "each":
                figs += [med(lambda r: r["primal"][1]), med(lambda r: r["deriv"][0]), med(lambda r: r["deriv"][1])]
            else:
                figs += [med(lambda r: r["deriv"][0]), med(lambda r: r["ready"])]
            L.append(f"| {n} ({s}) | {v} | " + " | ".join(fmt(x) for x in figs) + f" | {fmt(med(lambda r: r['cpu']))} |")
    import datetime
    import platform

    import numba
    import numpy

    try:
        rev = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True).stdout.strip() or "unknown"
    except OSError:
        rev = "unknown"
    head = ["# Tiered compilation: first result and numba ready, from an empty cache", "",
            f"- date: {datetime.datetime.now().isoformat(timespec='seconds')}; pullback commit {rev}",
            f"- machine: {platform.machine()}, {os.cpu_count()} cores; python {platform.python_version()}, "
            f"numpy {numpy.__version__}, numba {numba.__version__}",
            f"- runs per case and variant: {args.runs} (medians), variants interleaved; one thread per process, "
            "processes not pinned", "",
            f"Reproduce: `python benchmarks/tiered_start.py --flow {args.flow}` (see its docstring). **first**: "
            "wall seconds from the call to its result; **ready**: from the call until numba's code runs; **all "
            "ready** (script flow): from the primal's call until numba's code runs for both; **cpu**: CPU seconds "
            "of the process and its compile workers until then.", ""]
    text = "\n".join(head + L)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
