"""Checkpointing benchmarks (issue 11 §4): peak stored bytes and gradient/primal time of
pullback's `checkpoint=` strategies, side by side in one run, on four workloads (the slides'
determinant, a long ODE loop, a data-dependent while loop, a recursion), with JAX's
`lax.scan` + `jax.checkpoint` and Equinox's checkpointed `while_loop` as anchors.

    PYTHONPATH=src python benchmarks/checkpoint/run.py [--parts det,ode,while,rec,jax]
        [--quick | --big] [--det-n 10,20,50,100,200,300] [--ode-t 1e2,1e3,1e4,1e5,1e6] ...
        [--out-dir benchmarks/checkpoint]

Writes OUT_DIR/results.md (markdown tables) and OUT_DIR/<workload>.png (matplotlib; skipped
with a message when it is not installed). See benchmarks/README.md, section "Checkpointing".

Timings: numba backend, one core, every thread pool at one thread (benchmarks/run.py's `pin`,
before NumPy is imported), medians of repeated calls after a first (compiling) call. Stored
bytes: `pb.memory_report(..., backend="numba")` (a metered build; bytes are counts, not
timings). The metered builds compile in one worker process pinned to the other core while
the timings run on the first (`--jobs 0`: no worker, everything in this process, after the
timings).
"""
import argparse
import importlib.util
import math
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


bench = _load("pb_bench_run", os.path.join(ROOT, "benchmarks", "run.py"))   # stdlib imports only


def nums(s):
    return [int(float(v)) for v in s.split(",") if v]


def floats(s):
    return [float(v) for v in s.split(",") if v]


def specs(s):
    return [v for v in s.split(",") if v]


DEFAULTS = {   # (default, --quick, --big)
    "det_n": ("10,20,30,50,70,100", "10,20,50", "10,20,30,50,70,100,150,200,300"),
    "det_time_n": ("10,20,30,50", "20,50", "10,20,30,50,70,100"),
    "ode_t": ("1e2,1e3,1e4,1e5,1e6", "1e2,1e3,1e4", "1e2,1e3,1e4,1e5,1e6,1e7"),
    "while_limit": ("1e1,1e3,1e10,1e40,1e90", "1e1,1e3,1e10", "1e1,1e3,1e10,1e40,1e90,1e250"),
    "rec_d": ("4,8,12,16", "4,8", "4,8,12,16,20"),
    "chain_d": ("10,100,1000,10000", "10,100", "10,100,1000,10000,100000"),
    "jax_t": ("1e2,1e3,1e4,1e5,1e6", "1e2,1e3,1e4", "1e2,1e3,1e4,1e5,1e6,1e7"),
    "eqx_t": ("1e2,1e3,1e4", "1e2,1e3", "1e2,1e3,1e4,1e5"),
}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--parts", default="det,ode,while,rec,chain,jax", help="comma-separated subset of det,ode,while,rec,chain,jax")
    p.add_argument("--quick", action="store_true", help="small sizes only (a smoke test, about a minute or two)")
    p.add_argument("--big", action="store_true", help="larger sizes (det n up to 300, t = 1e7; hours: the det gradient under a loop strategy costs ~n^5)")
    p.add_argument("--det-n", type=nums, default=None, help="determinant orders n for stored bytes")
    p.add_argument("--det-time-n", type=nums, default=None,
                   help="determinant orders n also timed (each n x strategy is a compile of several seconds)")
    p.add_argument("--det-strategies", type=specs, default=["store", "binomial:4", "binomial:16", "bisection",
                                                             "stripmine:2"])
    p.add_argument("--ode-t", type=nums, default=None, help="ODE step counts t")
    p.add_argument("--ode-m", type=int, default=16, help="ODE state: m doubles (w = 8 m bytes)")
    p.add_argument("--ode-strategies", type=specs, default=["store", "binomial:8", "binomial:32", "bisection",
                                                             "stripmine:2", "stripmine:3", "auto"])
    p.add_argument("--while-limit", type=floats, default=None, help="while loop: thresholds (trip count ~ log)")
    p.add_argument("--while-strategies", type=specs, default=["store", "online:8", "online:32", "bisection",
                                                               "stripmine:2"])
    p.add_argument("--rec-d", type=nums, default=None, help="depths d of the tree recursion (2^d leaves)")
    p.add_argument("--chain-d", type=nums, default=None, help="depths d of the chain recursion")
    p.add_argument("--rec-strategies", type=specs, default=["store", "bisection"],
                   help="strategies of both recursions")
    p.add_argument("--jax-t", type=nums, default=None, help="JAX lax.scan ODE step counts")
    p.add_argument("--eqx-t", type=nums, default=None, help="Equinox checkpointed while_loop step counts (slow)")
    p.add_argument("--rf-t", type=nums, default=[10, 100, 1000],
                   help="ODE step counts for recompute_factor on the interpreter (slow; empty: skip)")
    p.add_argument("--jobs", type=int, default=1,
                   help="worker processes for the metered builds (pinned to the cores after the first); 0: none")
    p.add_argument("--min-time", type=float, default=0.2)
    p.add_argument("--min-runs", type=int, default=3)
    p.add_argument("--max-time", type=float, default=2.0)
    p.add_argument("--rtol", type=float, default=1e-9, help="agreement tolerance (relative to the largest entry)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out-dir", default=HERE, help="where results.md and the PNGs go")
    p.add_argument("--no-plots", action="store_true")
    a = p.parse_args(argv)
    pick = 1 if a.quick else 2 if a.big else 0
    for key, vals in DEFAULTS.items():
        if getattr(a, key) is None:
            conv = floats if key == "while_limit" else nums
            setattr(a, key, conv(vals[pick]))
    return a


# --------------------------------------------------------------------------- strategies

LABELS = {"store": '"store"', "bisection": "Bisection", "auto": '"auto"'}


def label(spec):
    if spec in LABELS:
        return LABELS[spec]
    kind, _, arg = spec.partition(":")
    name = {"binomial": "Binomial", "stripmine": "StripMine", "online": "Online", "budget": "Budget"}[kind]
    return f"{name}({arg})"


def strategy(pb, spec):
    if spec in ("store", "auto"):
        return spec
    if spec == "bisection":
        return pb.Bisection()
    kind, _, arg = spec.partition(":")
    n = int(float(arg))
    return {"binomial": lambda: pb.Binomial(snapshots=n), "stripmine": lambda: pb.StripMine(levels=n),
            "online": lambda: pb.Online(snapshots=n), "budget": lambda: pb.Budget(bytes=n)}[kind]()


# --------------------------------------------------------------------------- workloads

def progs():
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    import programs
    return programs


class Workload:
    """name, f, argnums, sizes (memory), time_sizes, make(size) -> args."""

    def __init__(self, name, f, argnums, sizes, time_sizes, make, strategies, size_name):
        self.name, self.f, self.argnums, self.sizes = name, f, argnums, sizes
        self.time_sizes, self.make, self.strategies, self.size_name = time_sizes, make, strategies, size_name


def workloads(args):
    import numpy as np

    P = progs()
    seed = args.seed
    out = {}
    out["det"] = Workload("det", P.det_lu, 0, args.det_n, args.det_time_n,
                          lambda n: (P.det_input(n, np.random.default_rng(seed)),), args.det_strategies, "n")
    x0, k = P.ode_input(args.ode_m, np.random.default_rng(seed))
    out["ode"] = Workload("ode", P.ode, (0, 1), args.ode_t, args.ode_t,
                          lambda t: (x0, k, np.int64(t)), args.ode_strategies, "t")
    u0, c = P.until_input(args.ode_m, np.random.default_rng(seed))
    out["while"] = Workload("while", P.until, (0, 1), args.while_limit, args.while_limit,
                            lambda lim: (u0, c, float(lim)), args.while_strategies, "limit")
    out["rec"] = Workload("rec", P.tree, 0, args.rec_d, args.rec_d,
                          lambda d: (0.3, np.int64(d)), args.rec_strategies, "d")
    out["chain"] = Workload("chain", P.chain, 0, args.chain_d, args.chain_d,
                            lambda d: (0.3, np.int64(d)), args.rec_strategies, "d")
    return out


def until_trips(u0, c, limit):
    """The while loop's trip count (the same arithmetic in NumPy)."""
    import numpy as np

    x, n = u0.copy(), 0
    while np.sum(x * x) < limit:
        x = x + 1e-3 * (c * x + 0.1 * np.sin(x))
        n += 1
    return n


# --------------------------------------------------------------------------- stored bytes (worker)

def _worker_init(cpus):
    if cpus and hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, set(cpus))
        except OSError:
            pass


def memory_job(name, spec, sizes, argv):
    """{size: peak bytes or 'error: ...'} for one workload under one strategy (one process,
    so that the sizes sharing a program share its compile)."""
    import pullback as pb

    args = parse_args(argv)
    w = workloads(args)[name]
    out = {}
    for size in sizes:
        t0 = time.perf_counter()
        try:
            r = pb.memory_report(w.f, *w.make(size), checkpoint=strategy(pb, spec), backend="numba")
            out[size] = (int(r.peak_bytes), time.perf_counter() - t0)
        except Exception as e:  # reported in the table, the run goes on
            out[size] = (f"error: {type(e).__name__}: {str(e).splitlines()[0][:200]}", time.perf_counter() - t0)
    return out


def recompute_job(ts, argv):
    """ODE recompute_factor and peak bytes on the interpreter, Bisection and Binomial(8)."""
    import pullback as pb

    args = parse_args(argv)
    w = workloads(args)["ode"]
    out = {}
    for spec in ("store", "bisection", "binomial:8"):
        for t in ts:
            try:
                r = pb.memory_report(w.f, *w.make(t), checkpoint=strategy(pb, spec), backend="interp")
                out[(spec, t)] = (int(r.peak_bytes), float(r.recompute_factor))
            except Exception as e:
                out[(spec, t)] = (f"error: {type(e).__name__}: {e}", None)
    return out


# --------------------------------------------------------------------------- timing (main process)

def med(fn, a):
    first, m, runs, res = bench.measure(fn, a, lambda r: r, ARGS.min_time, ARGS.min_runs, ARGS.max_time)
    return first, m, res


def time_workload(pb, np, w, extra_ref=None):
    """{size: {"primal": s, spec: (seconds, disagreement or None, first-call s) or error str}}"""
    res = {}
    primal = pb.jit(w.f)
    grads = {}
    for size in w.time_sizes:
        a = w.make(size)
        row = {}
        try:
            row["primal"] = med(primal, a)[1]
        except Exception as e:
            row["primal"] = None
            print(f"  {w.name} {size}: primal failed: {e}", flush=True)
        ref = extra_ref(a) if extra_ref else None
        store = None
        for spec in w.strategies:
            g = grads.get(spec)
            if g is None:
                g = grads[spec] = pb.grad(w.f, argnums=w.argnums, checkpoint=strategy(pb, spec))
            try:
                first, m, gy = med(g, a)
            except Exception as e:
                row[spec] = f"error: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
                print(f"  {w.name} {size} {label(spec)}: {row[spec]}", flush=True)
                continue
            if spec == "store":
                store = gy
            base = ref if ref is not None else store
            err = bench.disagreement(base, gy) if base is not None else None
            row[spec] = (m, err, first)
            p = row["primal"]
            print(f"  {w.name} {w.size_name}={size:g} {label(spec)}: {m * 1e3:.3f} ms"
                  + (f" = {m / p:.2f} x primal" if p else "") + f", agreement {err}", flush=True)
        res[size] = row
    return res


# --------------------------------------------------------------------------- JAX / Equinox anchors

def jax_anchor(np, ts, eqx_ts, m, seed):
    """{(tool, t): (primal s, grad s, XLA temp bytes, disagreement vs pullback store)}; or a reason string."""
    try:
        import jax
        import jax.numpy as jnp
    except Exception as e:
        return f"JAX not importable ({type(e).__name__}: {e})", None
    P = progs()
    x0, k = P.ode_input(m, np.random.default_rng(seed))

    def step(x, kk):
        return x + 1e-3 * (kk * jnp.sin(x[::-1]) - 0.5 * x)

    def make(t, mode):
        def f(x0, kk):
            if mode == "scan+checkpoint(chunk)":
                chunk = max(1, int(round(math.sqrt(t))))
                n_out, rest = divmod(t, chunk)
                inner = jax.checkpoint(lambda x, _: (jax.lax.scan(lambda y, _: (step(y, kk), None), x, None,
                                                                  length=chunk)[0], None))
                x, _ = jax.lax.scan(inner, x0, None, length=n_out)
                x, _ = jax.lax.scan(lambda y, _: (step(y, kk), None), x, None, length=rest)
            else:
                body = lambda x, _: (step(x, kk), None)
                if mode == "scan+checkpoint(step)":
                    body = jax.checkpoint(body)
                x, _ = jax.lax.scan(body, x0, None, length=t)
            return jnp.sum(x * x)
        return f

    def make_eqx(t):
        import equinox as eqx

        def f(x0, kk):
            _, x = eqx.internal.while_loop(lambda c: c[0] < t, lambda c: (c[0] + 1, step(c[1], kk)), (0, x0),
                                           max_steps=t, kind="checkpointed")
            return jnp.sum(x * x)
        return f

    out = {}
    sync = jax.block_until_ready
    eqx_note = None
    try:
        import equinox  # noqa: F401
    except Exception as e:
        eqx_note = f"Equinox not importable ({type(e).__name__}: {e})"
    jobs = [(mode, t) for mode in ("scan", "scan+checkpoint(step)", "scan+checkpoint(chunk)") for t in ts]
    if eqx_note is None:
        jobs += [("equinox checkpointed while_loop", t) for t in eqx_ts]
    for mode, t in jobs:
        try:
            f = make_eqx(t) if mode.startswith("equinox") else make(t, mode)
            p, g = jax.jit(f), jax.jit(jax.grad(f, argnums=(0, 1)))
            ma = g.lower(x0, k).compile().memory_analysis()
            temp = getattr(ma, "temp_size_in_bytes", None) if ma is not None else None
            _, tp, _, _ = bench.measure(p, (x0, k), sync, ARGS.min_time, ARGS.min_runs, ARGS.max_time)
            _, tg, _, gy = bench.measure(g, (x0, k), sync, ARGS.min_time, ARGS.min_runs, ARGS.max_time)
            out[(mode, t)] = (tp, tg, temp, [np.asarray(v) for v in gy])
            print(f"  {mode} t={t}: primal {tp * 1e3:.3f} ms, grad/primal {tg / tp:.2f}, XLA temp {temp} B",
                  flush=True)
        except Exception as e:
            out[(mode, t)] = f"error: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
            print(f"  {mode} t={t}: {out[(mode, t)]}", flush=True)
    return out, eqx_note, jax.__version__


# --------------------------------------------------------------------------- report

def fmt_b(b):
    if b is None:
        return "–"
    if isinstance(b, str):
        return "error"
    for unit, k in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if b >= k:
            return f"{b / k:.3g} {unit}"
    return f"{b} B"


def fmt_s(t):
    if t is None:
        return "–"
    return f"{t * 1e6:.1f} µs" if t < 1e-3 else f"{t * 1e3:.2f} ms" if t < 1 else f"{t:.2f} s"


def fmt_size(size):
    if isinstance(size, float) and size >= 1e3:
        return f"1e{int(round(math.log10(size)))}" if size == 10 ** round(math.log10(size)) else f"{size:.3g}"
    if isinstance(size, int) and size >= 1e4 and size == 10 ** round(math.log10(size)):
        return f"10^{int(round(math.log10(size)))}"
    return f"{size:g}"


def slope(xs, ys):
    import numpy as np

    pts = [(x, y) for x, y in zip(xs, ys) if isinstance(y, (int, float)) and y and y > 0]
    if len(pts) < 2:
        return None
    lx, ly = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return float(np.polyfit(lx, ly, 1)[0])


def mem_table(w, mem, lines, extra_cols=None):
    strat = w.strategies
    head = f"| {w.size_name} |" + (" " + " | ".join(c for c, _ in extra_cols) + " |" if extra_cols else "")
    lines += [head + " " + " | ".join(label(s) for s in strat) + " |",
              "|" + "---|" * (1 + len(extra_cols or []) + len(strat))]
    errs = []
    for size in w.sizes:
        cells = []
        for s in strat:
            v = mem.get(s, {}).get(size)
            v = v[0] if v is not None else None
            if isinstance(v, str):
                errs.append(f"{label(s)} at {w.size_name} = {fmt_size(size)}: {v}")
            cells.append(fmt_b(v))
        extra = [fn(size) for _, fn in (extra_cols or [])]
        lines.append(f"| {fmt_size(size)} | " + " | ".join(extra + cells) + " |")
    lines.append("")
    for e in errs:
        lines.append(f"- {e}")
    if errs:
        lines.append("")


def time_table(w, tim, lines, extra_cols=None):
    strat = w.strategies
    lines += [f"| {w.size_name} | primal |" + "".join(f" {c} |" for c, _ in (extra_cols or []))
              + " " + " | ".join(f"{label(s)}" for s in strat) + " | agree |",
              "|" + "---|" * (3 + len(extra_cols or []) + len(strat))]
    bad = []
    for size in w.time_sizes:
        row = tim.get(size, {})
        p = row.get("primal")
        cells, worst = [], 0.0
        for s in strat:
            v = row.get(s)
            if v is None:
                cells.append("–")
            elif isinstance(v, str):
                cells.append("error")
                bad.append(f"{label(s)} at {w.size_name} = {fmt_size(size)}: {v}")
            else:
                cells.append(f"{v[0] / p:.2f}" if p else fmt_s(v[0]))
                if v[1] is None:
                    worst = float("inf")
                else:
                    worst = max(worst, v[1])
        extra = [fn(size) for _, fn in (extra_cols or [])]
        agree = "✓" if worst <= ARGS.rtol else f"✗ {worst:.1e}"
        lines.append(f"| {fmt_size(size)} | {fmt_s(p)} | " + " | ".join(extra + cells) + f" | {agree} |")
    lines.append("")
    for e in bad:
        lines.append(f"- {e}")
    if bad:
        lines.append("")


def plot(w, mem, tim, path, title, anchors=None, note=None):
    """memory (log-log) and gradient/primal (log x) against size, strategies as lines."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:
        return f"plots skipped: matplotlib not importable ({type(e).__name__}: {e})"
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.6))
    for s in w.strategies:
        xs = [z for z in w.sizes if isinstance(mem.get(s, {}).get(z, (None,))[0], int)]
        if xs:
            ax1.plot(xs, [mem[s][z][0] for z in xs], "o-", label=label(s))
        xs = [z for z in w.time_sizes if isinstance(tim.get(z, {}).get(s), tuple) and tim[z].get("primal")]
        if xs:
            ax2.plot(xs, [tim[z][s][0] / tim[z]["primal"] for z in xs], "o-", label=label(s))
    for name, (xs, mys, tys) in (anchors or {}).items():
        if any(v for v in mys):
            ax1.plot([x for x, v in zip(xs, mys) if v], [v for v in mys if v], "x--", label=name)
        if any(v for v in tys):
            ax2.plot([x for x, v in zip(xs, tys) if v], [v for v in tys if v], "x--", label=name)
    ax1.set_xscale("log")
    ax1.set_yscale("log")
    ax1.set_xlabel(w.size_name)
    ax1.set_ylabel("peak stored bytes" + (" (" + note + ")" if note else ""))
    ax1.grid(True, which="both", alpha=0.3)
    ax1.legend(fontsize=7)
    ax2.set_xscale("log")
    ax2.set_yscale("log")
    ax2.set_xlabel(w.size_name)
    ax2.set_ylabel("gradient time / primal time")
    ax2.grid(True, which="both", alpha=0.3)
    ax2.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


# --------------------------------------------------------------------------- main

def main(argv=None):
    global ARGS
    argv = list(sys.argv[1:] if argv is None else argv)
    ARGS = parse_args(argv)
    cpus = bench.pin(1)                        # before numpy is imported
    os.environ["NUMBA_NUM_THREADS"] = "1"
    t_start = time.time()
    import numpy as np

    import pullback as pb

    parts = ARGS.parts.split(",")
    W = workloads(ARGS)
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    try:
        all_cpus = sorted(os.sched_getaffinity(0) | set(range(os.cpu_count() or 1)))
    except Exception:
        all_cpus = allowed
    others = [c for c in all_cpus if c not in (cpus or [])]

    # stored bytes: metered builds in a worker on the other core(s), while this process times
    mem_jobs = [(n, s) for n in ("det", "ode", "while", "rec", "chain") if n in parts for s in W[n].strategies]
    pool, futs = None, {}
    if ARGS.jobs > 0 and others:
        import concurrent.futures as cf
        import multiprocessing as mp

        pool = cf.ProcessPoolExecutor(max_workers=ARGS.jobs, mp_context=mp.get_context("spawn"),
                                      initializer=_worker_init, initargs=(others,))
        # the slow ones (det: one compile per n) first
        for n, s in mem_jobs:
            futs[(n, s)] = pool.submit(memory_job, n, s, W[n].sizes, argv)
        if "ode" in parts and ARGS.rf_t:
            futs["rf"] = pool.submit(recompute_job, ARGS.rf_t, argv)
    mem_where = (f"a worker process pinned to core(s) {others}" if pool else "this process, after the timings")

    timings = {}
    for n in ("ode", "while", "rec", "chain", "det"):
        if n in parts:
            print(f"timing {n} ...", flush=True)
            ref = None
            if n == "det":
                ref = lambda a: np.linalg.det(a[0]) * np.linalg.inv(a[0]).T
            timings[n] = time_workload(pb, np, W[n], ref)
    anchors = None
    if "jax" in parts:
        print("JAX / Equinox anchors ...", flush=True)
        anchors = jax_anchor(np, ARGS.jax_t, ARGS.eqx_t, ARGS.ode_m, ARGS.seed)

    print("stored bytes ...", flush=True)
    mem, rf = {}, None
    for n, s in mem_jobs:
        if (n, s) in futs:
            try:
                mem.setdefault(n, {})[s] = futs[(n, s)].result()
            except Exception as e:
                mem.setdefault(n, {})[s] = {z: (f"error: worker: {type(e).__name__}: {e}", 0) for z in W[n].sizes}
        else:
            mem.setdefault(n, {})[s] = memory_job(n, s, W[n].sizes, argv)
        print(f"  {n} {label(s)}: " + ", ".join(f"{z:g}: {v[0]}" for z, v in mem[n][s].items()), flush=True)
    if "ode" in parts and ARGS.rf_t:
        try:
            rf = futs["rf"].result() if "rf" in futs else recompute_job(ARGS.rf_t, argv)
        except Exception as e:
            rf = f"error: {type(e).__name__}: {e}"
    if pool is not None:
        pool.shutdown()

    report(np, pb, W, parts, mem, timings, anchors, rf, cpus, mem_where, time.time() - t_start)
    return 0


def report(np, pb, W, parts, mem, timings, anchors, rf, cpus, mem_where, elapsed):
    import numba

    os.makedirs(ARGS.out_dir, exist_ok=True)
    L = ["# Checkpointing benchmarks (issue 11 §4)", "",
         f"`benchmarks/checkpoint/run.py {' '.join(sys.argv[1:])}`: numba {numba.__version__}, numpy "
         f"{np.__version__}; timings on core(s) {cpus}, one thread; stored bytes measured in {mem_where}; "
         f"{time.strftime('%Y-%m-%d %H:%M')}; whole run {elapsed:.0f} s.", "",
         "Stored bytes are `pb.memory_report(f, *args, checkpoint=S, backend=\"numba\").peak_bytes`: the peak "
         "of every store the gradient program holds at once (tapes, undo logs, loop saves, snapshots), "
         "counted by a metered build. Time ratios are the median gradient time over the median primal time "
         "(`pb.jit`), both compiled by numba, after a first call. *agree*: every strategy's gradient "
         f"matches the reference (`\"store\"`, or the closed form) to {ARGS.rtol:g} relative to the largest "
         "entry.", ""]
    checks = []
    notes = []
    plot_msgs = []

    # ---- determinant
    if "det" in parts:
        w = W["det"]
        L += ["## 1. Determinant by Gaussian elimination, in-place updates (the slides' experiment)", "",
              "`programs.det_lu`: three nested loops, `A[j, k] -= f * A[i, k]` in place, n x n float64; "
              "gradient w.r.t. A (reference: det(A) inv(A)^T). Binomial(s) and StripMine(k) apply to each loop "
              "level separately (each nesting level has its own schedule).", "",
              "### Peak stored bytes", ""]
        mem_table(w, mem["det"], L, [("state n²·8 B", lambda n: fmt_b(8 * n * n))])
        big = [n for n in w.sizes if n >= 50]
        if len(big) < 2:  # a slope needs two sizes (a --quick run)
            big = w.sizes[-3:]
        L += [f"Fitted growth exponents (log-log slope of stored bytes over n = {', '.join(map(str, big))}); "
              f"reference slopes over the same n: n³ → 3.00, n² log n → {slope(big, [n * n * math.log(n) for n in big]):.2f}, "
              "n² → 2.00:", "", "| strategy | exponent |", "|---|---|"]
        det_slopes = {}
        for s in w.strategies:
            ys = [mem["det"][s].get(n, (None,))[0] for n in big]
            e = slope(big, ys)
            det_slopes[s] = e
            L.append(f"| {label(s)} | {'–' if e is None else f'{e:.2f}'} |")
        L.append("")
        st = det_slopes.get("store")
        for s in w.strategies:
            e = det_slopes.get(s)
            if s == "store" or e is None:
                continue
            ok = e < 2.6 and (st is None or e < st - 0.4)
            checks.append(f"det: {label(s)} stored bytes grow like n^{e:.2f} over n = {big[0]}..{big[-1]} "
                          f"(target ~n² log n, {slope(big, [n * n * math.log(n) for n in big]):.2f}; \"store\": "
                          f"n^{'?' if st is None else f'{st:.2f}'}): {'met' if ok else 'MISSED'}")
        L += ["### Gradient time / primal time", ""]
        time_table(w, timings.get("det", {}), L)
        plot_msgs.append(plot(w, mem["det"], timings.get("det", {}), os.path.join(ARGS.out_dir, "det.png"),
                              "determinant by Gaussian elimination (n x n)"))

    # ---- ODE
    if "ode" in parts:
        w = W["ode"]
        wbytes = 8 * ARGS.ode_m
        L += ["## 2. Long ODE loop", "",
              f"`programs.ode`: t explicit-Euler steps of a ring of m = {ARGS.ode_m} coupled nonlinear oscillators "
              f"(loop-carried state w = {wbytes} B), t traced (one compiled gradient for every t); gradient w.r.t. "
              "x0 and k.", "", "### Peak stored bytes", ""]
        mem_table(w, mem["ode"], L, [("2·w·⌈log₂t⌉", lambda t: fmt_b(2 * wbytes * math.ceil(math.log2(t))))])
        L += ["### Gradient time / primal time", ""]
        time_table(w, timings.get("ode", {}), L, [("3 + ⌈log₂t⌉", lambda t: f"{3 + math.ceil(math.log2(t))}")])
        bis = mem["ode"].get("bisection", {})
        for t in w.sizes:
            b = bis.get(t, (None,))[0]
            if isinstance(b, int):
                bound = 2 * wbytes * math.ceil(math.log2(t))
                checks.append(f"ode: Bisection peak at t = {fmt_size(t)}: {b} B = {b / wbytes:.1f} w "
                              f"<= 2·w·⌈log₂t⌉ = {bound} B: {'met' if b <= bound else 'MISSED'}")
        lo, hi = 1000, max(w.sizes)
        if hi > lo and isinstance(bis.get(lo, (None,))[0], int) and isinstance(bis.get(hi, (None,))[0], int):
            r = bis[hi][0] / bis[lo][0]
            target = math.ceil(math.log2(hi)) / math.ceil(math.log2(lo))
            checks.append(f"ode: Bisection peak t = {fmt_size(hi)} / t = 1e3: {r:.2f} (⌈log₂⌉ ratio {target:.2f}; "
                          f"linear would be {hi / lo:.0f}): {'met' if r <= 1.25 * target else 'MISSED'}")
        tim = timings.get("ode", {})
        for t in w.time_sizes:
            v, p = tim.get(t, {}).get("bisection"), tim.get(t, {}).get("primal")
            if isinstance(v, tuple) and p:
                bound = 3 + math.ceil(math.log2(t))
                checks.append(f"ode: Bisection gradient/primal at t = {fmt_size(t)}: {v[0] / p:.2f} <= {bound}: "
                              f"{'met' if v[0] / p <= bound else 'MISSED'}")
        for t in w.time_sizes:
            v, st = tim.get(t, {}).get("auto"), tim.get(t, {}).get("store")
            if isinstance(v, tuple) and isinstance(st, tuple):
                checks.append(f"ode: \"auto\" gradient / \"store\" gradient at t = {fmt_size(t)}: {v[0] / st[0]:.2f} "
                              f"(target <= 1.5 where the budget holds the run): {'met' if v[0] / st[0] <= 1.5 else 'MISSED'}")
        if rf is not None:
            L += ["### recompute_factor on the interpreter (small t)", "",
                  "`memory_report(..., backend=\"interp\")`: the work of the user's statements that the gradient "
                  "executes (forward sweep and every re-execution) over the primal's; Griewank's optimal number "
                  "of advances for Binomial(s) is r·t − C(s+r, s−1) (its exactness is asserted in "
                  "tests/checkpoint/test_loop_schedules.py, not here).", "",
                  "| t | 1 + ⌈log₂t⌉ | \"store\" factor | Bisection factor | Binomial(8) factor | Binomial(8) optimum "
                  "advances / t |", "|---|---|---|---|---|---|"]
            if isinstance(rf, str):
                L += [f"- {rf}", ""]
            else:
                for t in ARGS.rf_t:
                    def f(spec):
                        v = rf.get((spec, t))
                        return "–" if v is None or v[1] is None else f"{v[1]:.2f}"
                    s_ = 8
                    r_ = 0
                    while math.comb(s_ + r_, s_) < t:
                        r_ += 1
                    opt = (r_ * t - math.comb(s_ + r_, s_ - 1)) if t > 1 else 0
                    L.append(f"| {t} | {1 + math.ceil(math.log2(t))} | {f('store')} | {f('bisection')} | "
                             f"{f('binomial:8')} | {max(opt, 0) / t:.2f} |")
                    v = rf.get(("bisection", t))
                    if v and v[1] is not None:
                        checks.append(f"ode: Bisection recompute_factor at t = {t}: {v[1]:.2f} <= "
                                      f"1 + ⌈log₂t⌉ = {1 + math.ceil(math.log2(t))}: "
                                      f"{'met' if v[1] <= 1 + math.ceil(math.log2(t)) else 'MISSED'}")
                L.append("")
        # anchors
        jax_lines, plot_anchor = [], {}
        if anchors is not None:
            res, eqx_note, jv = anchors if isinstance(anchors, tuple) else (anchors, None, None)
            if isinstance(res, str):
                notes.append(res)
            else:
                L += ["### Anchors: JAX `lax.scan` + `jax.checkpoint`, Equinox checkpointed `while_loop`", "",
                      f"JAX {jv}, CPU, x64, one thread (`--xla_cpu_multi_thread_eigen=false`), the same ODE "
                      f"step (`jnp.sin(x[::-1])`) and the same inputs. *scan*: no remat; *checkpoint(step)*: "
                      "`jax.checkpoint` on the scan body; *checkpoint(chunk)*: an outer scan over √t chunks, each a "
                      "`jax.checkpoint`-ed inner scan (two-level, as StripMine(2)); Equinox: "
                      "`eqx.internal.while_loop(..., kind=\"checkpointed\", max_steps=t)` (its default "
                      "checkpoint count). Memory: XLA's `memory_analysis().temp_size_in_bytes` of the compiled "
                      "gradient (all temporary buffers, not only the stored residuals; not the same measure "
                      "as pullback's stored bytes, but the same growth). grad/primal is each tool's own ratio; "
                      "*vs pullback* is the tool's gradient time over pullback's \"store\" gradient time at the "
                      "same t. *agree*: against pullback's gradient.", "",
                      "| tool | t | primal | grad/primal | vs pullback | XLA temp bytes | agree |",
                      "|---|---|---|---|---|---|---|"]
                tim = timings.get("ode", {})
                modes = []
                for (mode, t), v in res.items():
                    if mode not in modes:
                        modes.append(mode)
                    pst = tim.get(t, {}).get("store")
                    if isinstance(v, str):
                        L.append(f"| {mode} | {fmt_size(t)} | {v} | | | | |")
                        continue
                    tp, tg, temp, gy = v
                    vs = f"{tg / pst[0]:.2f}" if isinstance(pst, tuple) else "–"
                    err = None
                    try:
                        import pullback as pb_

                        W_ = W["ode"]
                        ref = pb_.grad(W_.f, argnums=W_.argnums)(*W_.make(t))
                        err = bench.disagreement(ref, gy)
                    except Exception:
                        err = None
                    agree = "–" if err is None else "✓" if err <= 1e-9 else f"✗ {err:.1e}"
                    L.append(f"| {mode} | {fmt_size(t)} | {fmt_s(tp)} | {tg / tp:.2f} | {vs} | {fmt_b(temp)} | {agree} |")
                L.append("")
                for mode in modes:
                    xs = [t for (m_, t) in res if m_ == mode]
                    mys = [res[(mode, t)][2] if not isinstance(res[(mode, t)], str) else None for t in xs]
                    tys = [res[(mode, t)][1] / res[(mode, t)][0] if not isinstance(res[(mode, t)], str) else None
                           for t in xs]
                    plot_anchor[f"JAX {mode} (XLA temp)" if not mode.startswith("equinox") else "Equinox (XLA temp)"] = \
                        (xs, mys, tys)
                if eqx_note:
                    notes.append(eqx_note)
        plot_msgs.append(plot(w, mem["ode"], timings.get("ode", {}), os.path.join(ARGS.out_dir, "ode.png"),
                              f"ODE, t explicit-Euler steps, state w = {wbytes} B", plot_anchor))

    # ---- while
    if "while" in parts:
        w = W["while"]
        P = progs()
        u0, c = P.until_input(ARGS.ode_m, np.random.default_rng(ARGS.seed))
        trips = {lim: until_trips(u0, c, lim) for lim in w.sizes}
        L += ["## 3. While loop with a data-dependent trip count", "",
              f"`programs.until`: explicit-Euler steps of a growing state (m = {ARGS.ode_m}) until its sum of "
              "squares passes `limit` (a traced float): the trip count is known only at run time. pullback's "
              "forward sweep counts the iterations; Online(s) is the binomial schedule on that count. "
              "Gradient w.r.t. x0 and c.", "", "### Peak stored bytes", ""]
        mem_table(w, mem["while"], L, [("trips t", lambda z: str(trips[z])),
                                       ("2·w·⌈log₂t⌉", lambda z: fmt_b(2 * 8 * ARGS.ode_m *
                                                                     math.ceil(math.log2(max(trips[z], 2)))))])
        L += ["### Gradient time / primal time", ""]
        time_table(w, timings.get("while", {}), L, [("trips t", lambda z: str(trips[z]))])
        plot_msgs.append(plot(w, mem["while"], timings.get("while", {}), os.path.join(ARGS.out_dir, "while.png"),
                              "while loop until sum(x²) > limit (x axis: limit)"))

    # ---- recursion
    for n, title, desc in (
            ("rec", "4a. Tree recursion: split mode (\"store\") vs the whole-program step machine (Bisection)",
             "`programs.tree`: a full binary call tree of depth d (2^d leaves, `0.5 * tree(0.9 x, d - 1) + "
             "0.5 * sin(tree(1.1 x, d - 1))`), d traced: a run of ~2^d calls whose stack is only d frames deep."),
            ("chain", "4b. Chain recursion: split mode vs the step machine",
             "`programs.chain`: `chain(x, d) = sin(chain(x, d - 1)) * 1.01`, d traced: the stack itself is d "
             "frames deep, so every snapshot of the machine state holds O(d) bytes.")):
        if n not in parts:
            continue
        w = W[n]
        L += ["## " + title, "", desc + " Under \"store\" the recursion is reversed in split mode (a tape per "
              "call); under a loop strategy the entry is lowered to one step machine (CPS, an explicit stack of "
              "frames) whose loop is checkpointed whole, each snapshot a copy of the machine state, call stack "
              "included. Gradient w.r.t. x.", "", "### Peak stored bytes", ""]
        mem_table(w, mem[n], L)
        L += ["### Gradient time / primal time", ""]
        time_table(w, timings.get(n, {}), L)
        ys = {s: [mem[n][s].get(z, (None,))[0] for z in w.sizes] for s in w.strategies}
        for s in w.strategies:
            e = slope(w.sizes[-2:], ys[s])
            if e is not None and n == "rec":
                checks.append(f"rec (tree): {label(s)} stored bytes between d = {w.sizes[-2]} and {w.sizes[-1]} "
                              f"grow by {ys[s][-1] / ys[s][-2]:.2f}x for {2 ** (w.sizes[-1] - w.sizes[-2])}x the "
                              f"calls" + ("" if s == "store" else
                                          f" (O(d log t) would be about {w.sizes[-1] ** 2 / w.sizes[-2] ** 2:.1f}x): "
                                          + ("met" if ys[s][-1] / ys[s][-2] <= 1.5 * w.sizes[-1] ** 2
                                             / w.sizes[-2] ** 2 else "MISSED")))
        plot_msgs.append(plot(w, mem[n], timings.get(n, {}), os.path.join(ARGS.out_dir, n + ".png"),
                              "tree recursion of depth d (2^d leaves)" if n == "rec" else "chain recursion of depth d"))

    L += ["## Targets", ""] + [f"- {c}" for c in checks] + [""]
    msgs = [m for m in plot_msgs if m]
    if msgs or notes:
        L += ["## Not measured", ""] + [f"- {m}" for m in dict.fromkeys(msgs + notes)] + [""]
    pngs = [f for f in ("det.png", "ode.png", "while.png", "rec.png", "chain.png") if os.path.exists(os.path.join(ARGS.out_dir, f))]
    if pngs and not msgs:
        L += ["Plots: " + ", ".join(f"[{f}]({f})" for f in pngs), ""]
    text = "\n".join(L)
    with open(os.path.join(ARGS.out_dir, "results.md"), "w") as f:
        f.write(text + "\n")
    print()
    print(text)


if __name__ == "__main__":
    sys.exit(main())
