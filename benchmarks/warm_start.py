"""Warm start: seconds from process start to the first result, cache populated
(issue 13 §2, note [warm-start]).

    python benchmarks/warm_start.py [--runs 7] [--cases small,gmm_grad,...] [--cache-dir DIR]

For each case, one process fills a private cache (its time is the cold start,
`cold`), then `--runs` new processes each call the function once:
- `warm`: the default (the warm cache skips staging, the passes and emission);
- `no-warm`: ``PULLBACK_WARM_CACHE=0`` (stage, then load numba's cached code).
Baselines, measured the same way: `python -c pass`, `import numpy`, and a
trivial ``@njit(cache=True)`` function loaded from numba's cache (with numba's
own SciPy BLAS check, and with pullback's deferral of it).

Each figure is the median over the runs (min and max beside it), measured by
the parent from just before it starts the child to the child's first result
(wall clock, `time.time()`), single-threaded (``*_NUM_THREADS=1``) and pinned
to one core with ``taskset -c 0`` when available. Runs of the variants are
interleaved, so load on a shared machine hits them alike; compare within one
run only.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")

_CASES = {
    "small": """
import numpy as np, pullback as pb
def f(x):
    return np.sum(np.sin(x) * x)
r = pb.grad(f)(np.linspace(0.1, 0.9, 1000))
""",
    "gmm_obj": """
import numpy as np
from pullback.gradbench.modules import gmm
rng = np.random.default_rng(0)
k, d, n = 5, 8, 1000
a = (rng.standard_normal(k), rng.standard_normal((k, d)), rng.standard_normal((k, d)),
     rng.standard_normal((k, d * (d - 1) // 2)), rng.standard_normal((n, d)), gmm.lower_index(d), 1.0, 0)
r = gmm._objective(*a)
""",
    "gmm_grad": """
import numpy as np
from pullback.gradbench.modules import gmm
rng = np.random.default_rng(0)
k, d, n = 5, 8, 1000
a = (rng.standard_normal(k), rng.standard_normal((k, d)), rng.standard_normal((k, d)),
     rng.standard_normal((k, d * (d - 1) // 2)), rng.standard_normal((n, d)), gmm.lower_index(d), 1.0, 0)
r = gmm._grad(*a)
""",
    "kmeans_dir": """
import numpy as np
from pullback.gradbench.modules import kmeans
rng = np.random.default_rng(0)
r = kmeans.FUNCTIONS["dir"](rng.standard_normal((10, 8)), rng.standard_normal((1000, 8)))
""",
    "det_primal": """
import numpy as np
from pullback.gradbench.modules import det
r = det.primal(np.random.default_rng(0).standard_normal((6, 6)))
""",
    "det_grad": """
import numpy as np
from pullback.gradbench.modules import det
r = det.gradient(np.random.default_rng(0).standard_normal((6, 6)))
""",
}

_BASE = {
    "python": "pass",
    "numpy": "import numpy",
    "numba_trivial": """
import numpy as np
from numba import njit
@njit(cache=True)
def f(x):
    return x.sum() * 2.0
r = f(np.ones(3))
""",
    "numba_trivial_deferred": """
import numpy as np
from numba import njit
from pullback.backends import numba_blas
numba_blas.defer_blas_check()
@njit(cache=True)
def f(x):
    return x.sum() * 2.0
r = f(np.ones(3))
""",
}


def _child_code(body: str) -> str:
    return f"import sys; sys.path.insert(0, {SRC!r})\n{body}\nimport time; print('T', repr(time.time()))\n"


def _env(cache: str, warm: bool) -> dict:
    env = dict(os.environ, PULLBACK_CACHE_DIR=cache, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1", NUMBA_NUM_THREADS="1", PULLBACK_BACKEND="numba")
    env.pop("PULLBACK_WARM_CACHE", None)
    if not warm:
        env["PULLBACK_WARM_CACHE"] = "0"
    return env


def _once(code: str, env: dict, cwd: str) -> float:
    """Run `code` as a script file in `cwd` (numba caches only functions in files)."""
    path = os.path.join(cwd, f"case_{abs(hash(code)):x}.py")
    if not os.path.exists(path):
        with open(path, "w") as fh:
            fh.write(code)
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    t0 = time.time()
    p = subprocess.run([*pin, sys.executable, path], env=env, cwd=cwd, capture_output=True, text=True,
                       timeout=1200)
    if p.returncode != 0:
        raise RuntimeError(p.stderr[-2000:])
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("T ")][-1]
    return float(line.split()[1]) - t0


def _fmt(ts):
    return f"{statistics.median(ts):6.3f}  ({min(ts):.3f}-{max(ts):.3f})"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--cases", default=",".join(_CASES))
    ap.add_argument("--cache-dir", default=None, help="a cache to use (default: a new temporary one)")
    args = ap.parse_args(argv)
    cache = args.cache_dir or tempfile.mkdtemp(prefix="pullback-warm-bench-")
    cwd = tempfile.mkdtemp(prefix="pullback-warm-cwd-")   # numba's cache for the trivial function lives here
    names = [c for c in args.cases.split(",") if c]
    print(f"cache {cache}; {args.runs} runs; median (min-max) seconds from process start to first result")
    rows = {}
    for name in names:
        code = _child_code(_CASES[name])
        cold = _once(code, _env(cache, True), cwd)
        _once(code, _env(cache, False), cwd)   # warms the OS file cache for both variants alike
        warm, nowarm = [], []
        for _ in range(args.runs):
            warm.append(_once(code, _env(cache, True), cwd))
            nowarm.append(_once(code, _env(cache, False), cwd))
        rows[name] = (cold, warm, nowarm)
        print(f"{name:14s} cold {cold:7.2f}   warm {_fmt(warm)}   no-warm {_fmt(nowarm)}", flush=True)
    base = {k: [] for k in _BASE}
    for k in _BASE:
        _once(_child_code(_BASE[k]), _env(cache, True), cwd)
    for _ in range(args.runs):
        for k, body in _BASE.items():
            base[k].append(_once(_child_code(body), _env(cache, True), cwd))
    for k, ts in base.items():
        print(f"{k:24s} {_fmt(ts)}")
    if not args.cache_dir:
        shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(cwd, ignore_errors=True)


if __name__ == "__main__":
    main()
