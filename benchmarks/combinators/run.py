"""Combinator benchmarks (issue 12 §4): derivative/primal ratios of programs written with
`pb.map` / `pb.reduce` / `pb.hist` / `pb.vmap`, side by side in one run with hand-written NumPy,
JAX and PyTorch where there is a counterpart, and the 1 -> 2 core speedup of the parallel maps.

    PYTHONPATH=src python benchmarks/combinators/run.py [--quick] [--parts mm,kmeans,sparse,vmap,scaling]
        [--mm-n 64,128,256] [--out-dir benchmarks/combinators]

Writes OUT_DIR/results.md. See benchmarks/README.md, section "Combinators".

Contract: one-core numbers come from this process, pinned to one core with every thread pool
at one thread before NumPy is imported (benchmarks/run.py's `pin`), pullback on each of
`--backends` (numba, pysource) with `parallel=False` where pullback has that keyword. The scaling numbers come from a
child process (`--scaling-probe`) allowed two cores, BLAS still at one thread, which times the
`parallel=True` builds with `numba.set_num_threads(1)` and `(2)` alternately. Every timing is
the smaller of `--rounds` medians of repeated calls after a first (compiling) call, primal
and derivative alternating. Every result is checked against a reference (NumPy, or pullback's
own one-core result for JAX / PyTorch / the parallel builds); a disagreement is reported, never
hidden.
"""
import argparse
import importlib.util
import inspect
import json
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("PULLBACK_TIERED", "0")   # first calls here are numba's whole compile (note [tiered-compile])

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


bench = _load("pb_bench_run", os.path.join(ROOT, "benchmarks", "run.py"))   # stdlib imports only
fmt_t = _load("pb_bench_report", os.path.join(ROOT, "benchmarks", "report.py")).fmt_t

PARTS = ("mm", "kmeans", "sparse", "vmap")
DEFAULTS = {   # (default, --quick): "a,b,c" tuples separated by ";"
    "mm_n": ("64;128;256", "32"),
    "kmeans": ("10000,16,4;100000,32,8", "1000,4,2"),
    "sparse": ("100000,100,16;100000,10000,16;100000,1000000,16", "10000,100,8;10000,100000,8"),
    "vmap": ("256,16,32;1024,16,32;1024,64,128", "128,8,16"),
}


def sizes(s):
    return [tuple(int(float(v)) for v in item.split(",")) for item in s.split(";") if item]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--parts", default="mm,kmeans,sparse,vmap,scaling",
                   help="comma-separated subset of mm,kmeans,sparse,vmap,scaling")
    p.add_argument("--quick", action="store_true",
                   help="small sizes, one round, pysource one-core tables, scaling (numba) of mm only: a smoke test")
    p.add_argument("--scaling-parts", default=None,
                   help="programs timed on 1 and 2 cores (default: all of --parts; --quick: mm)")
    p.add_argument("--mm-n", default=None, help="matrix orders n, ';'-separated")
    p.add_argument("--kmeans", default=None, help="k-means sizes n,k,d; ';'-separated")
    p.add_argument("--sparse", default=None, help="sparse histogram sizes samples,bins,probes; ';'-separated")
    p.add_argument("--vmap", default=None, help="per-example gradient sizes batch,d,hidden; ';'-separated")
    p.add_argument("--backends", default=None,
                   help="pullback's backends, one table each (default numba,pysource; --quick: pysource, whose "
                        "compiles take milliseconds; the scaling part is numba's either way)")
    p.add_argument("--rounds", type=int, default=None, help="alternating rounds per measurement (default 3, quick 1)")
    p.add_argument("--min-time", type=float, default=None)
    p.add_argument("--min-runs", type=int, default=None)
    p.add_argument("--max-time", type=float, default=2.0)
    p.add_argument("--rtol", type=float, default=1e-8, help="agreement tolerance (relative to the largest entry)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out-dir", default=HERE, help="where results.md goes")
    p.add_argument("--scaling-probe", action="store_true", help="internal: the two-core child process")
    p.add_argument("--scaling-cpus", default=None, help="internal: the cores the child runs on")
    a = p.parse_args(argv)
    pick = 1 if a.quick else 0
    for key, vals in DEFAULTS.items():
        if getattr(a, key) is None:
            setattr(a, key, vals[pick])
    a.mm_n = [s[0] for s in sizes(a.mm_n)]
    for key in ("kmeans", "sparse", "vmap"):
        setattr(a, key, sizes(getattr(a, key)))
    a.backends = [b for b in (a.backends or ("pysource" if a.quick else "numba,pysource")).split(",") if b]
    if a.scaling_parts is None:
        a.scaling_parts = "mm" if a.quick else a.parts
    a.rounds = a.rounds or (1 if a.quick else 3)
    a.min_time = a.min_time if a.min_time is not None else (0.02 if a.quick else 0.2)
    a.min_runs = a.min_runs or (3 if a.quick else 5)
    return a


def progs():
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    import programs
    return programs


def has_parallel(pb):
    return "parallel" in inspect.signature(pb.jit).parameters


# --------------------------------------------------------------------------- the workloads

def workloads(pb, args, parallel, backend="numba"):
    """{part: (sizes, make(size) -> args, pullback(primal, deriv) builder, numpy (primal, deriv) or None)}."""
    P = progs()
    kw = {"parallel": parallel} if has_parallel(pb) else {}
    kw["backend"] = backend
    out = {
        "mm": ([n for n in args.mm_n], lambda n, rng: P.mm_input(n, rng),
               lambda: (pb.jit(P.mm_loss, **kw), pb.grad(P.mm_loss, argnums=(0, 1), **kw)),
               (P.mm_numpy_primal, P.mm_numpy_grad)),
        "kmeans": (args.kmeans, lambda s, rng: P.kmeans_input(s, rng),
                   lambda: (pb.jit(P.kmeans_cost, **kw), pb.grad(P.kmeans_cost, **kw)),
                   (P.kmeans_numpy_primal, P.kmeans_numpy_grad)),
        "sparse": (args.sparse, lambda s, rng: P.sparse_input(s, rng),
                   lambda: (pb.jit(P.sparse_loss, **kw), pb.grad(P.sparse_loss, **kw)),
                   (P.sparse_numpy_primal, P.sparse_numpy_grad)),
        "vmap": (args.vmap, lambda s, rng: P.mlp_input(s, rng),
                 lambda: (pb.jit(P.per_example_losses, **kw), pb.jit(P.per_example_grads, **kw)), None),
    }
    return out


def not_available(part):
    P = progs()
    if part in ("kmeans", "sparse") and not P.HAVE_HIST:
        return "`pb.hist` is not in this checkout"
    return None


def measure(fn, a, sync, args):
    """(first-call s, median s, fastest s, result): benchmarks/run.py's rule (at least --min-time and
    --min-runs calls after the first, or --max-time once 3 are done), plus the fastest call."""
    first, res = bench.timed(fn, a, sync)
    times = []
    while not ((sum(times) >= args.min_time and len(times) >= args.min_runs)
               or (sum(times) >= args.max_time and len(times) >= 3)):
        times.append(bench.timed(fn, a, sync)[0])
    times.sort()
    m = len(times)
    return first, (times[m // 2] if m % 2 else 0.5 * (times[m // 2 - 1] + times[m // 2])), times[0], res


def pair(p, d, a, args, sync=lambda r: r, setup=None):
    """Primal and derivative medians, alternating, the smaller of `args.rounds` medians each:
    {"primal": s, "deriv": s, "primal_best": fastest call, "primal_first": s, "primal_res": ..., same for deriv}."""
    out = {}
    for r in range(args.rounds):
        for what, fn in (("primal", p), ("deriv", d)):
            if setup:
                setup()
            first, med, best, res = measure(fn, a, sync, args)
            if r == 0:
                out[what + "_first"], out[what + "_res"] = first, res
            out[what] = min(med, out.get(what, med))
            out[what + "_best"] = min(best, out.get(what + "_best", best))
    return out


def err(msg, e):
    return f"{msg}: {type(e).__name__}: {(str(e).splitlines() or [''])[0][:200]}"


# --------------------------------------------------------------------------- one core (this process)

def one_core(pb, np, args, part, frameworks, backend, others):
    """{size: {tool: pair(...) or error str, "agree": {tool: (primal err, deriv err)}}}. The other tools
    are measured once per size (`others` keeps them for the next backend)."""
    sz, make, build, ref = workloads(pb, args, False, backend)[part]
    fns = build()
    res = {}
    for size in sz:
        a = make(size, np.random.default_rng(args.seed))
        row = res[size] = {"agree": {}}
        try:
            row["pullback"] = pair(fns[0], fns[1], a, args)
            print(f"  {part} {size}: pullback ({backend}) primal {fmt_t(row['pullback']['primal'])}, deriv "
                  f"{fmt_t(row['pullback']['deriv'])}", flush=True)
        except Exception as e:  # noqa: BLE001 - reported in the table, the run goes on
            row["pullback"] = err("pullback failed", e)
            print(f"  {part} {size}: {row['pullback']}", flush=True)
            continue
        tools = {}
        if ref is not None:
            tools["numpy"] = (ref[0], ref[1], lambda r: r)
        if part == "vmap":
            P = progs()
            if "jax" in frameworks:
                import jax
                tools["jax"] = (*P.mlp_jax(), jax.block_until_ready)
            if "torch" in frameworks:
                import torch
                tools["torch"] = (*P.mlp_torch(), lambda r: r)
                a_torch = tuple(torch.from_numpy(np.ascontiguousarray(v)) for v in a)
        for tool, (tp, td, sync) in tools.items():
            targs = a_torch if tool == "torch" else a
            if (size, tool) not in others:
                try:
                    others[(size, tool)] = pair(tp, td, targs, args, sync)
                except Exception as e:  # noqa: BLE001 - reported in the table
                    others[(size, tool)] = err(f"{tool} failed", e)
            row[tool] = others[(size, tool)]
            if isinstance(row[tool], str):
                continue
            pbr = row["pullback"]
            row["agree"][tool] = tuple(bench.disagreement(pbr[w + "_res"], row[tool][w + "_res"])
                                       for w in ("primal", "deriv"))
            print(f"  {part} {size}: {tool} primal {fmt_t(row[tool]['primal'])}, deriv "
                  f"{fmt_t(row[tool]['deriv'])}, disagreement {row['agree'][tool]}", flush=True)
    return res


# --------------------------------------------------------------------------- two cores (a child process)

def scaling_probe(args):
    """--scaling-probe: in a process allowed two cores, time each part's largest size built with
    parallel=True at 1 and at 2 numba threads, and built with parallel=False (alternating, BLAS at one
    thread); check the 2-thread results against parallel=False; print JSON as the last stdout line:
    {"threading_layer": ..., "parts": {part: {"size", "seq" / "1" / "2": {primal, deriv, *_best}, "agree"}}}."""
    import numba
    import numpy as np

    import pullback as pb

    out = {"threading_layer": None, "parts": {}}
    for part in [p for p in args.scaling_parts.split(",") if p in PARTS]:
        if not_available(part):
            continue
        sz, make, build, _ = workloads(pb, args, True)[part]
        size = sz[-1]
        a = make(size, np.random.default_rng(args.seed))
        try:
            fns = {"seq": workloads(pb, args, False)[part][2](), "1": build(), "2": None}
            fns["2"] = fns["1"]
            for p, d in (fns["seq"], fns["1"]):
                p(*a), d(*a)   # compiled first: pullback picks numba's threading layer before numba starts threads
            cell = {"size": list(size) if isinstance(size, tuple) else size}
            res = {}
            for r in range(args.rounds):
                for key in ("seq", "1", "2"):
                    nt = 1 if key == "seq" else int(key)
                    got = pair(*fns[key], a, args, setup=lambda nt=nt: numba.set_num_threads(nt))
                    c = cell.setdefault(key, {})
                    for w in ("primal", "deriv", "primal_best", "deriv_best"):
                        c[w] = min(got[w], c.get(w, got[w]))
                    res[key] = got
            cell["agree"] = [bench.disagreement(res["seq"][w + "_res"], res["2"][w + "_res"]) for w in ("primal", "deriv")]
            out["parts"][part] = cell
        except Exception as e:  # noqa: BLE001 - reported in the table
            out["parts"][part] = err("failed", e)
        try:
            out["threading_layer"] = numba.threading_layer()
        except ValueError:
            pass
    print(json.dumps(out))
    return 0


def scaling(argv, cpus):
    """Runs `scaling_probe` in a child allowed `cpus` (two cores), returns its JSON or an error string."""
    cmd = [sys.executable, os.path.abspath(__file__), "--scaling-probe", "--scaling-cpus", ",".join(map(str, cpus))] \
        + [a for a in argv if a != "--scaling-probe"]
    env = dict(os.environ, NUMBA_NUM_THREADS=str(len(cpus)))
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return f"scaling probe exited with status {r.returncode}: " + \
            (r.stderr.strip().splitlines() or ["no output"])[-1][:300]


# --------------------------------------------------------------------------- report

TITLES = {
    "mm": ("1. Matrix product as nested maps and a reduce",
           ("`programs.mm_loss`: `C = pb.map(lambda a: pb.map(lambda b: dot(a, b), BT), A)` with `dot` = "
           "`pb.reduce(pb.add, 0.0, a * b)`, loss 0.5‖C‖²; gradient w.r.t. A and BT. NumPy (hand): the primal "
           "with `A @ BT.T`, the adjoint `C = A @ BT.T; (C @ BT, C.T @ A)` (three single-thread BLAS products).")),
    "kmeans": ("2. k-means with `pb.hist` for the centroid update",
               ("`programs.kmeans_cost`: assign n points in d dimensions to the nearest of k centroids (nested maps, "
               "argmin), move the centroids to their clusters' means (sums and counts by `pb.hist(pb.add, ...)`), "
               "return the cost against the moved centroids; gradient w.r.t. the points. NumPy (hand): the same "
               "with `np.bincount`, and the gradient in closed form.")),
    "sparse": ("3. A sparse read of a large histogram",
               ("`programs.sparse_loss`: `h = pb.hist(pb.add, 0.0, B, idx, sin(x) * x)` over n samples into B bins, "
               "then a `pb.map` over m probed bins reads `h[j]`; gradient w.r.t. x. The histogram's adjoint is "
               "nonzero at m bins only; the gradient gathers it at idx. NumPy (hand): `np.bincount` and the "
               "gradient in closed form.")),
    "vmap": ("4. Per-example gradients: `pb.vmap(pb.grad(loss))`",
             ("`programs.per_example_grads`: the logistic loss of a one-hidden-layer tanh network (d inputs, "
             "`hidden` units) per example, its gradient w.r.t. (W1, b1, w2) per example of a batch: "
             "`pb.vmap(pb.grad(mlp_loss, argnums=(0, 1, 2)), in_axes=(None, None, None, 0, 0))`. Primal: "
             "`pb.vmap(mlp_loss, ...)` (the per-example losses). JAX: `jax.jit(jax.vmap(jax.grad(loss)))`; "
             "PyTorch: `torch.func.vmap(torch.func.grad(loss))`, eager.")),
}
TOOL = {"numpy": "NumPy (hand)", "jax": "JAX", "torch": "PyTorch"}


def fsize(s):
    return ", ".join(f"{v:g}" if v < 1e4 else f"{v:.0e}".replace("e+0", "e") for v in s) \
        if isinstance(s, (tuple, list)) else f"{s:g}"


def fagree(e, rtol):
    if e is None:
        return "shape mismatch"
    return "✓" if e <= rtol else f"✗ {e:.1e}"


def part_table(part, res, rtol, lines):
    tools = [t for t in ("numpy", "jax", "torch") if any(t in row for row in res.values())]
    head = "| size | pullback primal | pullback deriv | deriv/primal |"
    for t in tools:
        head += f" {TOOL[t]} primal | {TOOL[t]} deriv | {TOOL[t]} deriv/primal | pullback/{TOOL[t]} deriv |"
    lines += [head + " agree | first calls (pullback primal, deriv) |", "|" + "---|" * (6 + 4 * len(tools))]
    errors = []
    for size, row in res.items():
        pbr = row["pullback"]
        if isinstance(pbr, str):
            lines.append(f"| {fsize(size)} | error | | |" + " | | | |" * len(tools) + " | |")
            errors.append(f"{fsize(size)}: {pbr}")
            continue
        cells = [fmt_t(pbr["primal"]), fmt_t(pbr["deriv"]), f"{pbr['deriv'] / pbr['primal']:.2f}"]
        agree = []
        for t in tools:
            v = row.get(t)
            if not isinstance(v, dict):
                cells += ["–"] * 4
                if v:
                    errors.append(f"{fsize(size)}: {v}")
                continue
            cells += [fmt_t(v["primal"]), fmt_t(v["deriv"]), f"{v['deriv'] / v['primal']:.2f}",
                      f"{pbr['deriv'] / v['deriv']:.2f}"]
            ep, ed = row["agree"][t]
            if not (ep is not None and ed is not None and ep <= rtol and ed <= rtol):
                agree.append(f"{TOOL[t]}: primal {fagree(ep, rtol)}, deriv {fagree(ed, rtol)}")
        lines.append(f"| {fsize(size)} | " + " | ".join(cells) + f" | {'; '.join(agree) or '✓'} | "
                     f"{fmt_t(pbr['primal_first'])}, {fmt_t(pbr['deriv_first'])} |")
    lines.append("")
    lines += [f"- {e}" for e in errors] + ([""] if errors else [])


def targets(one, scal, args):
    out = []
    for (part, backend), res in one.items():
        bk = f" [{backend}]"
        ok_rows = [(s, r["pullback"]) for s, r in res.items() if isinstance(r["pullback"], dict)]
        for s, r in ok_rows:
            q = r["deriv"] / r["primal"]
            out.append(f"{part}{bk} ({fsize(s)}): derivative/primal {q:.2f} <= 4: {'met' if q <= 4 else 'MISSED'}")
        if part == "mm":
            for s, r in ok_rows:
                v = res[s].get("numpy")
                if s == 256 and isinstance(v, dict):
                    q = r["deriv"] / v["deriv"]
                    out.append(f"mm{bk} (n = 256): pullback adjoint / NumPy adjoint {q:.2f} <= 3: "
                               f"{'met' if q <= 3 else 'MISSED'}")
            if 256 not in res:
                out.append(f"mm{bk}: the adjoint target is at n = 256, not measured in this run")
        if part == "vmap":
            for s, r in ok_rows:
                v = res[s].get("jax")
                if isinstance(v, dict):
                    q = r["deriv"] / v["deriv"]
                    out.append(f"vmap{bk} ({fsize(s)}): pullback / JAX per-example gradients {q:.2f} <= 1: "
                               f"{'met' if q <= 1 else 'MISSED'}")
        if part == "sparse" and len(ok_rows) >= 2:
            (s0, r0), (s1, r1) = ok_rows[0], ok_rows[-1]
            g, p = r1["deriv"] / r0["deriv"], r1["primal"] / r0["primal"]
            grow = s1[1] / s0[1]
            q0, q1 = r0["deriv"] / r0["primal"], r1["deriv"] / r1["primal"]
            out.append(f"sparse{bk}: from B = {fsize(s0[1])} to {fsize(s1[1])} bins ({grow:g}x) at n = {fsize(s1[0])} the gradient's time "
                       f"grows {g:.2f}x (the primal's, which zero-fills the B bins, {p:.2f}x); does not grow "
                       f"(<= 1.5x): {'met' if g <= 1.5 else 'MISSED'}; derivative/primal stays flat ({q0:.2f} -> "
                       f"{q1:.2f}, <= 1.25x): {'met' if q1 <= 1.25 * q0 else 'MISSED'}")
    if isinstance(scal, dict):
        for part, c in scal["parts"].items():
            if isinstance(c, str):
                continue
            for w, name in (("primal", "primal"), ("deriv", "derivative")):
                sp = c["1"][w] / c["2"][w]
                out.append(f"{part} [numba] ({fsize(c['size'])}): 1 -> 2 core speedup of the parallel {name} {sp:.3f} >= 1.7: "
                           f"{'met' if sp >= 1.7 else 'MISSED'}")
    return out


def report(one, scal, meta, args, notes):
    L = ["# Combinator benchmarks (issue 12 §4)", "",
         f"Written by `benchmarks/combinators/run.py{' --quick' if args.quick else ''}` on {meta['date']}; "
         f"whole run {meta['elapsed']:.0f} s. pullback {meta['commit']}, backends {', '.join(args.backends)}; "
         + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()) + f"; {meta['cpu']}, {os.cpu_count()} cores; load average (1, 5, 15 min) {meta['load0']} at the start, "
         f"{meta['load']} at the end.", "",
         (f"One-core numbers: this process pinned to core(s) {meta['cpus']}, every thread pool (BLAS, XLA, "
         f"PyTorch) at one thread, pullback {meta['parallel_kw']}. Each time is the smaller of {args.rounds} "
         f"median(s) of repeated calls (at least {args.min_time:g} s and {args.min_runs} calls) after a first "
         "call, primal and derivative measured alternately. *deriv/primal*: each tool's derivative over its "
         "own primal. *pullback/X deriv*: pullback's derivative time over X's (< 1: pullback is faster). "
         f"*agree*: X's primal and derivative match pullback's to {args.rtol:g} relative to the largest entry. "
         "The machine is shared: rerun rather than quote."), ""]
    for part in PARTS:
        if not any(p == part for p, _ in one):
            continue
        title, desc = TITLES[part]
        L += [f"## {title}", "", desc, ""]
        for backend in args.backends:
            if (part, backend) in one:
                L += [f"pullback on {backend}:", ""]
                part_table(part, one[(part, backend)], args.rtol, L)
    L += ["## 1 -> 2 cores (parallel=True)", ""]
    if isinstance(scal, str):
        L += [f"Not measured: {scal}", ""]
    else:
        L += [(f"A child process allowed cores {meta['scale_cpus']}, BLAS at one thread, numba threading layer "
              f"`{scal.get('threading_layer')}`: each program's largest size built with `parallel=True`, "
              "timed with `numba.set_num_threads(1)` and `(2)` alternately with the `parallel=False` build. Each cell: the median (the target "
              "is judged on it), then in brackets the fastest call (what the code does when the other core is "
              "free: the machine is shared, and a parallel region waits for its slowest thread). *agree*: the "
              "2-thread results against the `parallel=False` build."), "",
              ("| program | size | | parallel=False | parallel=True, 1 thread | 2 threads | speedup 1 -> 2 threads "
              "| speedup over parallel=False | agree |"), "|---|---|---|---|---|---|---|---|---|"]

        def cell(c, key, w):
            return f"{fmt_t(c[key][w])} ({fmt_t(c[key][w + '_best'])})"

        def speed(c, k1, k2, w):
            return f"{c[k1][w] / c[k2][w]:.3f} ({c[k1][w + '_best'] / c[k2][w + '_best']:.2f})"

        for part, c in scal["parts"].items():
            if isinstance(c, str):
                L.append(f"| {part} | {c} | | | | | | | |")
                continue
            a = "✓" if all(e is not None and e <= args.rtol for e in c["agree"]) else \
                f"primal {fagree(c['agree'][0], args.rtol)}, deriv {fagree(c['agree'][1], args.rtol)}"
            for w in ("primal", "deriv"):
                L.append(f"| {part} | {fsize(c['size'])} | {w} | {cell(c, 'seq', w)} | {cell(c, '1', w)} | "
                         f"{cell(c, '2', w)} | {speed(c, '1', '2', w)} | {speed(c, 'seq', '2', w)} | {a} |")
        L.append("")
    L += ["## Targets", ""] + [f"- {t}" for t in targets(one, scal, args)] + [""]
    if notes:
        L += ["## Not measured / fallbacks", ""] + [f"- {n}" for n in notes] + [""]
    return "\n".join(L)


# --------------------------------------------------------------------------- main

def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def meta_info(np, frameworks, versions, cpus, scale_cpus, parallel_kw, t0):
    import numba

    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=False).stdout.strip() or "?"
    except OSError:
        commit = "?"
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"date": time.strftime("%Y-%m-%d %H:%M"), "elapsed": time.time() - t0, "commit": commit, "cpu": cpu,
            "load": loadavg(),
            "versions": {"numpy": np.__version__, "numba": numba.__version__, **versions},
            "cpus": cpus, "scale_cpus": scale_cpus, "parallel_kw": parallel_kw}


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_setaffinity") else []
    if args.scaling_probe:
        bench.pin(1)                                   # thread pools at one thread (this also pins the process)
        if hasattr(os, "sched_setaffinity") and args.scaling_cpus:   # ... to the cores the parent chose
            os.sched_setaffinity(0, {int(c) for c in args.scaling_cpus.split(",")})
        return scaling_probe(args)
    t0, load0 = time.time(), loadavg()
    os.environ.setdefault("PULLBACK_CACHE_DIR", tempfile.mkdtemp(prefix="pb-bench-comb-"))
    cpus = bench.pin(1)                                # before numpy is imported
    os.environ["NUMBA_NUM_THREADS"] = "1"
    parts = [p for p in args.parts.split(",") if p]
    skipped, versions = bench.load_frameworks(["jax", "torch"] if "vmap" in parts else [], 1)
    frameworks = [t for t in ("jax", "torch") if "vmap" in parts and t not in skipped]
    import numpy as np

    import pullback as pb

    P = progs()
    notes = list(P.FALLBACKS) + [f"{TOOL[t]}: {why}" for t, why in skipped.items()]
    par = has_parallel(pb)
    parallel_kw = "with `parallel=False`" if par else "sequential (this checkout has no `parallel=` keyword)"
    one = {}
    for part in PARTS:
        if part not in parts:
            continue
        why = not_available(part)
        if why:
            notes.append(f"{TITLES[part][0]}: {why}")
            continue
        print(f"{part} ...", flush=True)
        others = {}
        for backend in args.backends:
            one[(part, backend)] = one_core(pb, np, args, part, frameworks, backend, others)
    scale_cpus = allowed[:2]
    if "scaling" not in parts:
        scal = "not requested (--parts)"
    elif not par:
        scal = "this checkout's `pb.jit` / `pb.grad` have no `parallel=` keyword yet"
    elif len(scale_cpus) < 2:
        scal = f"this process may use only core(s) {allowed}"
    else:
        print("scaling (child process, two cores) ...", flush=True)
        scal = scaling(argv, scale_cpus)
    meta = meta_info(np, frameworks, versions, cpus, scale_cpus, parallel_kw, t0)
    meta["load0"] = load0
    text = report(one, scal, meta, args, notes)
    os.makedirs(args.out_dir, exist_ok=True)
    with open(os.path.join(args.out_dir, "results.md"), "w") as f:
        f.write(text + "\n")
    print()
    print(text)
    bad = any(isinstance(r.get("pullback"), str) or any(
        any(e is None or e > args.rtol for e in errs) for errs in r["agree"].values())
        for res in one.values() for r in res.values())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
