"""Vectorised transcendental functions on the numba backend (note [vecmath]): before/after.

    PYTHONPATH=src python benchmarks/vecmath.py [--quick] [--rounds 5] [--parts kernels,lse,vmap]
        [--lse-n 2000000] [--vmap "256,16,32;1024,16,32;1024,64,128"] [--accuracy N] [--out FILE]

Contract: one process, pinned to one core with every thread pool at one thread before NumPy
is imported (benchmarks/run.py's `pin`), and a fresh cache directory (compiles are cold).
Each workload's staged program (`pb.jit(f).staged(*args).prog`) is compiled twice by
`numba_backend.compile_prog` (`parallel=False`), with PULLBACK_VECMATH=0 (libm: numba's own
exp/log/tanh/...) and =1 (the vectorisable helpers of `backends/libcalls/vecmath.py`); the
generated source is checked to differ accordingly, and the compiled entries (leaf values in,
list of results out: what `pb.jit` calls) are timed. Timings alternate between the variants: `--rounds` rounds, each timing every
variant for at least `--min-time` s and `--min-runs` calls; a cell is the median of all
calls' CPU time (`time.thread_time`: everything timed runs on the calling thread, and wall
time on a shared machine measures the other tenants), with the quartiles to show the noise,
and the ratio is of medians. Results of the two
variants are checked against each other (rtol 1e-12) and against NumPy.

Parts: `kernels` (each function's array helper, numba's libm loop and NumPy's ufunc over
10^6 doubles), `lse` (benchmarks/programs/lse.py's logsumexp: primal and gradient),
`vmap` (benchmarks/combinators' per-example gradients `vmap(grad(mlp_loss))` and losses).
`--accuracy N` also measures each function's largest error in ulp against mpmath on N
points spread over the whole double range (slow: about 25 s per 10^5 points per function).
Writes a Markdown table to --out (default: stdout only).
"""
import argparse
import importlib.util
import os
import sys
import tempfile
import time

os.environ.setdefault("PULLBACK_TIERED", "0")   # first calls here are numba's whole compile (note [tiered-compile])

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="small sizes, one round: a smoke test")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--min-time", type=float, default=0.3)
    p.add_argument("--min-runs", type=int, default=5)
    p.add_argument("--parts", default="kernels,lse,vmap")
    p.add_argument("--lse-n", type=int, default=2_000_000)
    p.add_argument("--vmap", default="256,16,32;1024,16,32;1024,64,128", help="batch,d,hidden; ';'-separated")
    p.add_argument("--accuracy", type=int, default=0, help="points per function for the mpmath sweep (0: none)")
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    if a.quick:
        a.rounds, a.min_time, a.min_runs, a.lse_n, a.vmap = 1, 0.05, 3, 20_000, "64,8,16"
    a.vmap = [tuple(int(v) for v in s.split(",")) for s in a.vmap.split(";") if s]
    a.parts = [s for s in a.parts.split(",") if s]
    return a


def build(switch, prog):
    """`prog` compiled by the numba backend with PULLBACK_VECMATH=switch, and the
    seconds it took. `compile_prog` directly: pb.jit's caches (per function, the
    numba backend's memo, the warm cache) do not key on the setting within one
    process, so they would hand back the first variant's code."""
    from pullback.backends import numba_backend

    old = os.environ.get("PULLBACK_VECMATH")
    os.environ["PULLBACK_VECMATH"] = switch
    try:
        t = time.perf_counter()
        fn = numba_backend.compile_prog(prog, parallel=False)
        return fn, time.perf_counter() - t
    finally:
        if old is None:
            os.environ.pop("PULLBACK_VECMATH", None)
        else:
            os.environ["PULLBACK_VECMATH"] = old


def time_alternating(variants, a):
    """{name: [CPU seconds of this thread per call]} over `a.rounds` rounds, the variants
    alternating. CPU time, not wall time: on the shared machine the process got a
    third of a core at times, which made wall-clock medians 3x off and bimodal;
    every timed function here runs on this one thread."""
    times = {k: [] for k in variants}
    for _ in range(a.rounds):
        for k, (fn, args) in variants.items():
            t_end = time.perf_counter() + a.min_time
            n = 0
            while n < a.min_runs or time.perf_counter() < t_end:
                t = time.thread_time()
                fn(*args)
                times[k].append(time.thread_time() - t)
                n += 1
    return times


def cell(ts):
    import numpy as np

    q1, med, q3 = np.percentile(ts, [25, 50, 75])
    return med, f"{med * 1e3:.3g} ms ({q1 * 1e3:.3g}-{q3 * 1e3:.3g})"


def close(x, y, rtol=1e-12):
    import numpy as np

    xs = x if isinstance(x, (tuple, list)) else [x]
    ys = y if isinstance(y, (tuple, list)) else [y]
    return all(np.allclose(np.asarray(u), np.asarray(v), rtol=rtol, atol=rtol * np.max(np.abs(v)))
               for u, v in zip(xs, ys))


def pair_rows(pb, label, f, args, ref, a, rows):
    """Time the staged program of `pb.jit(f)` on `args`, compiled with vecmath off and
    on (the compiled entry: leaf values in, a list of results out); append a table row."""
    from pullback.pytree import flatten

    prog = pb.jit(f).staged(*args).prog
    leaves = flatten(args)[0]
    built = {}
    for name, sw in (("libm", "0"), ("vecmath", "1")):
        fn, secs = build(sw, prog)
        assert ("_pb_vm_" in fn.source) == (sw == "1"), (label, sw)
        t = time.perf_counter()
        out = fn(*leaves)
        built[name] = (fn, leaves, secs + time.perf_counter() - t, out)
    ok = close(built["vecmath"][3], built["libm"][3]) and (ref is None or close(built["vecmath"][3][0], ref, 1e-9))
    times = time_alternating({k: v[:2] for k, v in built.items()}, a)
    (m0, c0), (m1, c1) = cell(times["libm"]), cell(times["vecmath"])
    rows.append(f"| {label} | {c0} | {c1} | {m0 / m1:.2f}x | {built['libm'][2]:.1f} s / {built['vecmath'][2]:.1f} s"
                f" | {'ok' if ok else 'DISAGREE'} |")


def part_kernels(a, rows):
    import numpy as np
    from numba import njit

    from pullback.backends.libcalls import vecmath as vm

    n = 20_000 if a.quick else 1_000_000
    rng = np.random.default_rng(0)
    inputs = {"exp": rng.uniform(-30, 30, n), "log": rng.uniform(1e-3, 1e3, n), "log1p": rng.uniform(-0.9, 10, n),
              "expm1": rng.uniform(-5, 5, n), "tanh": rng.uniform(-5, 5, n), "logistic": rng.uniform(-10, 10, n)}
    npf = {"exp": np.exp, "log": np.log, "log1p": np.log1p, "expm1": np.expm1, "tanh": np.tanh,
           "logistic": lambda x: 0.5 * (np.tanh(0.5 * x) + 1.0)}
    for op in vm.OPS:
        x = inputs[op]
        helper = vm.compiled(op, array=True)
        f = npf[op]
        if op == "logistic":
            @njit(error_model="numpy")
            def libm(x):
                out = np.empty_like(x)
                for i in range(x.size):
                    out[i] = 0.5 * (np.tanh(0.5 * x[i]) + 1.0)
                return out
        else:
            @njit(error_model="numpy")
            def libm(x):
                out = np.empty_like(x)
                for i in range(x.size):
                    out[i] = f(x[i])
                return out
        ok = close(helper(x), f(x), 1e-14) and close(libm(x), f(x), 1e-14)
        times = time_alternating({"libm": (libm, (x,)), "vecmath": (helper, (x,)), "numpy": (f, (x,))}, a)
        (m0, c0), (m1, c1), (m2, c2) = cell(times["libm"]), cell(times["vecmath"]), cell(times["numpy"])
        rows.append(f"| {op} | {c0} | {c1} | {c2} | {m0 / m1:.2f}x | {m1 / m2:.2f} | {'ok' if ok else 'DISAGREE'} |")
    return n


def part_lse(pb, a, rows):
    import numpy as np

    from pullback.gradbench.modules import lse as gb   # what benchmarks/programs/lse.py times

    x = np.random.default_rng(0).standard_normal(a.lse_n)
    m = np.max(x)
    e = np.exp(x - m)
    ref_p, ref_g = np.float64(m + np.log(np.sum(e))), e / np.sum(e)
    f = gb.logsumexp
    pair_rows(pb, f"lse primal, n = {a.lse_n}", f, (x,), ref_p, a, rows)
    pair_rows(pb, f"lse gradient, n = {a.lse_n}", pb.grad(f), (x,), ref_g, a, rows)


def part_vmap(pb, a, rows):
    import numpy as np

    P = _load("pb_bench_comb", os.path.join(HERE, "combinators", "programs.py"))
    for size in a.vmap:
        args = P.mlp_input(size, np.random.default_rng(1))
        tag = ",".join(map(str, size))
        pair_rows(pb, f"vmap(mlp_loss) primal, (b,d,h) = {tag}", P.per_example_losses, args, None, a, rows)
        pair_rows(pb, f"vmap(grad(mlp_loss)), (b,d,h) = {tag}", P.per_example_grads, args, None, a, rows)


def part_accuracy(a, rows):
    """Largest error in ulp against mpmath (and NumPy's, on the same points)."""
    import mpmath as mp
    import numpy as np

    from pullback.backends.libcalls import vecmath as vm

    ref = {"exp": (mp.exp, np.exp), "log": (mp.log, np.log), "log1p": (mp.log1p, np.log1p),
           "expm1": (mp.expm1, np.expm1), "tanh": (mp.tanh, np.tanh)}
    rng = np.random.default_rng(7)
    for op, (mf, nf) in ref.items():
        n = a.accuracy
        bits = rng.integers(0, 0x7FF0000000000000, n // 2, dtype=np.int64).view(np.float64)
        wide = {"exp": (-746, 710), "expm1": (-40, 40), "tanh": (-20, 20), "log": (0, 4), "log1p": (-1, 4)}[op]
        x = np.concatenate([bits * np.where(rng.random(n // 2) < 0.5, -1, 1), rng.uniform(*wide, n // 2)])
        with np.errstate(all="ignore"):
            x = x[~np.isnan(nf(x)) & np.isfinite(nf(x)) & (nf(x) != 0)]
            ys = {"vecmath": vm.compiled(op, array=True)(x), "numpy": nf(x)}
        worst = {}
        with mp.workdps(40):
            ts = [mf(mp.mpf(v)) for v in x.tolist()]
            ulps = [mp.mpf(2) ** (max(mp.floor(mp.log(abs(t), 2)), -1022) - 52) for t in ts]
            for k, y in ys.items():
                errs = [float(abs(mp.mpf(b) - t) / u) for b, t, u in zip(y.tolist(), ts, ulps)]
                i = int(np.argmax(errs))
                worst[k] = (errs[i], x[i], float(np.mean(errs)))
        rows.append(f"| {op} | {len(x)} | {worst['vecmath'][0]:.3f} (x = {worst['vecmath'][1]:.17g}) | "
                    f"{worst['vecmath'][2]:.3f} | {worst['numpy'][0]:.3f} | {worst['numpy'][2]:.3f} |")


def main(argv=None):
    a = parse_args(argv)
    bench = _load("pb_bench_run", os.path.join(HERE, "run.py"))   # stdlib imports only
    cpus = bench.pin(1)
    os.environ["PULLBACK_CACHE_DIR"] = tempfile.mkdtemp(prefix="pb_vecmath_")
    sys.path.insert(0, os.path.join(ROOT, "src"))
    import numba
    import numpy as np

    import pullback as pb

    out = [f"# vecmath: libm against the vectorisable helpers (numba backend)\n",
           f"numba {numba.__version__}, NumPy {np.__version__}, one thread, cores {cpus}; "
           f"load average at start {os.getloadavg()[0]:.2f}; {a.rounds} rounds alternating, "
           f">= {a.min_time} s and {a.min_runs} calls each. Cells: median CPU time of the calling thread (quartiles).\n"]
    if "kernels" in a.parts:
        rows = []
        n = part_kernels(a, rows)
        out += [f"\n## Kernels: one loop over {n} doubles\n",
                "| function | numba libm loop | vecmath helper | NumPy ufunc | libm / vecmath | vecmath / NumPy | check |",
                "|---|---|---|---|---|---|---|", *rows]
    head = ["| workload | libm (PULLBACK_VECMATH=0) | vecmath | speedup | cold compile (libm / vecmath) | check |",
            "|---|---|---|---|---|---|"]
    if "lse" in a.parts:
        rows = []
        part_lse(pb, a, rows)
        out += ["\n## lse (benchmarks/programs/lse.py)\n", *head, *rows]
    if "vmap" in a.parts:
        rows = []
        part_vmap(pb, a, rows)
        out += ["\n## Per-example gradients (benchmarks/combinators)\n", *head, *rows]
    if a.accuracy:
        rows = []
        part_accuracy(a, rows)
        out += [f"\n## Accuracy against mpmath (ulp of the exact result)\n",
                "| function | points | vecmath max | vecmath mean | NumPy max | NumPy mean |",
                "|---|---|---|---|---|---|", *rows]
    out.append(f"\nload average at end {os.getloadavg()[0]:.2f}\n")
    text = "\n".join(out)
    print(text)
    if a.out:
        with open(a.out, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
