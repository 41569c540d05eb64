"""Warm start: seconds from process start to the first result, cache populated
(issue 13 §2, note [warm-start]).

    python benchmarks/warm_start.py [--runs 7] [--cases small,gmm_grad,...] [--cache-dir DIR]
    python benchmarks/warm_start.py --before OLD/src   # a `before` column: another checkout's src/
    python benchmarks/warm_start.py --shapes small,kmeans_dir[,gmm_grad]
    python benchmarks/warm_start.py --speed small,kmeans_dir[,gmm_grad]

For each case, one process fills a private cache (its time is the cold start,
`cold`), then `--runs` new processes each call the function once:
- `warm`: the default (the warm cache skips staging, the passes and emission);
- `no-warm`: ``PULLBACK_WARM_CACHE=0`` (stage, then load numba's cached code).
Baselines, measured the same way: `python -c pass`, `import numpy`, and a
trivial ``@njit(cache=True)`` function loaded from numba's cache (with numba's
own SciPy BLAS check, and with pullback's deferral of it).

Each figure is the median over the runs (min and max beside it), measured by
the parent from just before it starts the child to the child's first result
(wall clock, `time.time()`), and the child's CPU seconds until then
(`time.process_time()`, less sensitive to a loaded machine), single-threaded (``*_NUM_THREADS=1``) and pinned
to one core with ``taskset -c 0`` when available. Runs of the variants are
interleaved, so load on a shared machine hits them alike; compare within one
run only.

``--shapes``: one process per variant calls the function at four sizes in turn
(an empty cache: the first size compiles), printing the first call's seconds
and the per-call median at each size, with shape-generic modules
(note [shape-generic]) on and off (``PULLBACK_SHAPE_GENERIC=0``).
``--speed``: the specialised and the shape-generic module of one program at the
last size, timed interleaved in one process (their results must be equal). A
case ``PROGRAM:SIZE[/KEY=VALUE,...]`` is a benchmark program's primal and
derivative at that size, the skeleton's first module compiled at the per-shape
probe's input (``BUMP``) or at SIZE with the given parameters changed
(``python benchmarks/warm_start.py --speed lse:gb-n1280000/n=1000000,ode:gb-n10000-s100``).
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

os.environ.setdefault("PULLBACK_TIERED", "0")   # first calls here are numba's whole compile (note [tiered-compile])

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


_SHAPES = {
    "kmeans_dir": ("""
import numpy as np
from pullback.gradbench.modules import kmeans
fn = kmeans.FUNCTIONS["dir"]
def args(n):
    rng = np.random.default_rng(0)
    return rng.standard_normal((10, 8)), rng.standard_normal((n, 8))
""", (1000, 2000, 3000, 4000)),
    "gmm_grad": ("""
import numpy as np
from pullback.gradbench.modules import gmm
fn = gmm._grad
def args(n, k=5, d=8):
    rng = np.random.default_rng(0)
    return (rng.standard_normal(k), rng.standard_normal((k, d)), rng.standard_normal((k, d)),
            rng.standard_normal((k, d * (d - 1) // 2)), rng.standard_normal((n, d)), gmm.lower_index(d), 1.0, 0)
""", (1000, 2000, 3000, 4000)),
    "small": ("""
import numpy as np, pullback as pb
def f(x, W):
    h = np.tanh(W @ x)
    return np.sum(h * h) / x.shape[0]
fn = pb.grad(f)
def args(n):
    return np.linspace(0.1, 0.9, n), np.cos(np.arange(50 * n).reshape(50, n))
""", (1000, 2000, 3000, 4000)),
}

_SHAPE_DRIVER = """
import time, statistics, json
out = []
for n in SIZES:
    a = args(n)
    t = time.perf_counter(); fn(*a); first = time.perf_counter() - t
    ts = []
    for _ in range(30):
        t = time.perf_counter(); fn(*a); ts.append(time.perf_counter() - t)
    out.append([n, first, statistics.median(ts)])
print("J", json.dumps(out))
"""


# the timing both speed drivers share: 21 rounds of `reps` calls of each, interleaved; medians
_INTERLEAVED = """
import time, statistics

def interleaved(spec, gen, args, reps):
    ts, tg = [], []
    for r in range(21):
        for f, acc in ((spec, ts), (gen, tg)):
            t0 = time.perf_counter()
            for _ in range(reps):
                f(*args)
            acc.append((time.perf_counter() - t0) / reps)
    return statistics.median(ts), statistics.median(tg)
"""

_SPEED_DRIVER = """
import os, time, statistics
import numpy as np
from pullback.backends import numba_backend as nb
from pullback.pytree import flatten

def speed(label, fn, first, last):
    fn(*first)                           # the first module of the skeleton (specialised)
    prog = (fn._jit if hasattr(fn, "_jit") else fn).staged(*last).prog
    os.environ["PULLBACK_SHAPE_GENERIC"] = "0"
    spec = nb.compile_prog(prog)
    os.environ["PULLBACK_SHAPE_GENERIC"] = "1"
    gen = nb.compile_prog(prog)
    if not gen.spec.shape_args:
        print("S", label, "-", "-", 0)
        return
    leaves, _ = flatten(last)
    assert all(np.array_equal(x, y) for x, y in zip(spec(*leaves), gen(*leaves))), label
    ts, tg = interleaved(spec, gen, leaves, 10)
    print("S", label, ts, tg, len(gen.spec.shape_args), flush=True)
"""

_SPEED_CASE = """
speed(NAME, fn, args(SIZES[0]), args(SIZES[-1]))
"""

# a benchmark program (benchmarks/programs/) at SIZE, called as run.py calls it: the first
# module of each skeleton compiled at the program's per-shape probe input (BUMP), then the
# program's callables made twice at SIZE, with shape-generic modules off and on
_SPEED_PROGRAM = """
import glob, importlib, os, sys, time, statistics
import numpy as np
sys.path.insert(0, BENCH)
import programs
def made(first):
    # new module objects each time: pullback keeps its transformations (and their compiled
    # code) on the functions, and numba_backend memoizes programs: both are dropped, so the
    # callables compile again under the current setting
    from pullback.backends import numba_backend
    numba_backend._MEMO.clear()
    for name in sorted(m for m in sys.modules if m.startswith("pullback.gradbench.modules.")):
        importlib.reload(sys.modules[name])
    mod = importlib.reload(importlib.import_module("programs." + PROGRAM))
    if first and FIRST:   # KEY=VALUE,...: SIZE's parameters with these changed
        p = dict(programs.params(mod, SIZE), **{k: int(v) for k, v in (kv.split("=") for kv in FIRST.split(","))})
    else:
        p = programs.params(mod, SIZE, bump=first)
    return mod.tool_pullback(mod.make_input(p, np.random.default_rng(0)), "numba")
def timeit(f):
    t0 = time.perf_counter(); f(*a1); return time.perf_counter() - t0
def generic_modules():
    return sum("_pbs)" in open(f).read() for f in glob.glob(os.path.join(os.environ["PULLBACK_CACHE_DIR"], "numba", "*.py")))
f0, d0, a0 = made(True)
f0(*a0); d0(*a0)
os.environ["PULLBACK_SHAPE_GENERIC"] = "0"
fs, ds, a1 = made(False)
rs = fs(*a1), ds(*a1)
n0 = generic_modules()
os.environ["PULLBACK_SHAPE_GENERIC"] = "1"
fg, dg, _ = made(False)
rg = fg(*a1), dg(*a1)
k = generic_modules() - n0
def same(x, y):
    if isinstance(x, (tuple, list)):
        return len(x) == len(y) and all(same(u, v) for u, v in zip(x, y))
    return np.array_equal(np.asarray(x), np.asarray(y))
for what, spec, gen, i in (("primal", fs, fg, 0), ("deriv", ds, dg, 1)):
    assert same(rs[i], rg[i]), what
    reps = max(1, min(100, int(0.02 / max(1e-7, min(timeit(spec), timeit(gen))))))
    ts, tg = interleaved(spec, gen, a1, reps)
    print("S", NAME, what, ts, tg, k, flush=True)
"""


def _speed(names, cache_root):
    """Per-call time of the specialised and the shape-generic module of one
    program at the last size, interleaved in one process (results equal). A name
    PROGRAM:SIZE is a benchmark program's primal and derivative at SIZE, after
    a first compile at its per-shape probe's input (`BUMP`)."""
    print("\nspeed: specialised vs shape-generic module at the last size, one process, interleaved "
          "(21 rounds of 10 calls; medians)")
    for name in names:
        if ":" in name:
            prog, size = name.split(":", 1)
            size, _, first = size.partition("/")
            if first and not all(kv.count("=") == 1 and kv.split("=")[1].lstrip("-").isdigit()
                                 for kv in first.split(",")):
                raise SystemExit(f"--speed {name}: after '/' give KEY=INT[,KEY=INT...] (a parameter of "
                                 f"benchmarks/programs/{prog}.py's SIZES), e.g. lse:gb-n1280000/n=1000000")
            body = (f"BENCH = {HERE!r}\nPROGRAM = {prog!r}\nSIZE = {size!r}\nFIRST = {first!r}\nNAME = {name!r}\n"
                    + _INTERLEAVED + _SPEED_PROGRAM)
        else:
            shape_body, sizes = _SHAPES[name]
            body = shape_body + f"SIZES = {list(sizes)!r}\nNAME = {name!r}\n" + _INTERLEAVED + _SPEED_DRIVER + _SPEED_CASE
        cache = tempfile.mkdtemp(prefix="pullback-speed-bench-", dir=cache_root)
        path = os.path.join(cache, "driver.py")
        with open(path, "w") as fh:
            fh.write(_child_code(body))
        pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
        p = subprocess.run([*pin, sys.executable, path], env=_env(cache, False), cwd=cache, capture_output=True,
                           text=True, timeout=3600)
        if p.returncode != 0:
            raise RuntimeError(p.stderr[-2000:])
        for ln in p.stdout.splitlines():
            if not ln.startswith("S "):
                continue
            *label, ts, tg, k = ln[2:].split()
            label = " ".join(label)
            if ts == "-":
                print(f"{label:28s} no generic module (compiled specialised)", flush=True)
                continue
            what = "generic modules made" if ":" in name else "literals are arguments"
            print(f"{label:28s} specialised {float(ts) * 1e3:9.4f} ms   generic {float(tg) * 1e3:9.4f} ms"
                  f"   ratio {float(tg) / float(ts):.3f}   ({k} {what})", flush=True)
        shutil.rmtree(cache, ignore_errors=True)


def _per_shape(names, cache_root):
    """First-call seconds per new size in one process (the first size compiles),
    and the per-call median at each size, with shape-generic modules on and off."""
    print("\nper shape: one process calls at each size in turn (empty cache); first call s, per call ms")
    for name in names:
        body, sizes = _SHAPES[name]
        code = _child_code(body + f"SIZES = {list(sizes)!r}\n" + _SHAPE_DRIVER)
        for label, gen in (("generic", "1"), ("specialised", "0")):
            cache = tempfile.mkdtemp(prefix="pullback-shape-bench-", dir=cache_root)
            env = dict(_env(cache, False), PULLBACK_SHAPE_GENERIC=gen)
            path = os.path.join(cache, "driver.py")
            with open(path, "w") as fh:
                fh.write(code)
            pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
            p = subprocess.run([*pin, sys.executable, path], env=env, cwd=cache, capture_output=True, text=True,
                               timeout=3600)
            if p.returncode != 0:
                raise RuntimeError(p.stderr[-2000:])
            import json

            rows = json.loads([ln for ln in p.stdout.splitlines() if ln.startswith("J ")][-1][2:])
            cells = "  ".join(f"n={n}: {first:6.2f}s {per * 1e3:7.3f}ms" for n, first, per in rows)
            print(f"{name:12s} {label:12s} {cells}", flush=True)
            shutil.rmtree(cache, ignore_errors=True)


def _child_code(body: str, src: str = SRC) -> str:
    return (f"import sys; sys.path.insert(0, {src!r})\n{body}\n"
            "import time; print('T', repr(time.time()), repr(time.process_time()))\n")


def _env(cache: str, warm: bool) -> dict:
    env = dict(os.environ, PULLBACK_CACHE_DIR=cache, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1", NUMBA_NUM_THREADS="1", PULLBACK_BACKEND="numba")
    env.pop("PULLBACK_WARM_CACHE", None)
    if not warm:
        env["PULLBACK_WARM_CACHE"] = "0"
    return env


def _once(code: str, env: dict, cwd: str):
    """Run `code` as a script file in `cwd` (numba caches only functions in files);
    (wall seconds from before the start to the first result, the child's CPU
    seconds until then)."""
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
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("T ")][-1].split()
    return float(line[1]) - t0, float(line[2])


def _fmt(ts):
    wall = [w for w, _ in ts]
    cpu = statistics.median(c for _, c in ts)
    return f"{statistics.median(wall):6.3f} ({min(wall):.3f}-{max(wall):.3f}) cpu {cpu:6.3f}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--cases", default=",".join(_CASES))
    ap.add_argument("--cache-dir", default=None, help="a cache to use (default: a new temporary one)")
    ap.add_argument("--shapes", default=None,
                    help=f"per-shape figures instead (shape-generic code on and off) for these cases: {','.join(_SHAPES)}")
    ap.add_argument("--before", default=None,
                    help="the src/ folder of another pullback (e.g. `git archive <commit> src | tar -x -C DIR`, "
                         "then DIR/src): a `before` column, with its own cache")
    ap.add_argument("--speed", default=None,
                    help="per-call time of specialised vs shape-generic code for these cases (same names)")
    args = ap.parse_args(argv)
    if args.speed:
        _speed([c for c in args.speed.split(",") if c], args.cache_dir)
        return
    if args.shapes:
        _per_shape([c for c in args.shapes.split(",") if c], args.cache_dir)
        return
    cache = args.cache_dir or tempfile.mkdtemp(prefix="pullback-warm-bench-")
    cwd = tempfile.mkdtemp(prefix="pullback-warm-cwd-")   # numba's cache for the trivial function lives here
    names = [c for c in args.cases.split(",") if c]
    print(f"cache {cache}; {args.runs} runs; median (min-max) wall seconds from process start to first result, "
          "median CPU seconds")
    rows = {}
    old_cache = tempfile.mkdtemp(prefix="pullback-warm-bench-old-")
    for name in names:
        code = _child_code(_CASES[name])
        cold = _once(code, _env(cache, True), cwd)[0]
        _once(code, _env(cache, False), cwd)   # warms the OS file cache for both variants alike
        old = _child_code(_CASES[name], args.before) if args.before else None
        if old:
            _once(old, _env(old_cache, True), cwd)
        warm, nowarm, before = [], [], []
        for _ in range(args.runs):
            warm.append(_once(code, _env(cache, True), cwd))
            nowarm.append(_once(code, _env(cache, False), cwd))
            if old:
                before.append(_once(old, _env(old_cache, True), cwd))
        rows[name] = (cold, warm, nowarm)
        print(f"{name:11s} cold {cold:6.2f}  warm {_fmt(warm)}  no-warm {_fmt(nowarm)}"
              + (f"  before {_fmt(before)}" if old else ""), flush=True)
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
    shutil.rmtree(old_cache, ignore_errors=True)
    shutil.rmtree(cwd, ignore_errors=True)


if __name__ == "__main__":
    main()
