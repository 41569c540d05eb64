"""Benchmark pullback against JAX, PyTorch, hand-written Numba and NumPy, side by side.

    PYTHONPATH=src python benchmarks/run.py [--sizes small|default|gradbench|SIZE,...] [--programs a,b]
                                            [--threads N] [--backend numba|pysource|interp]
                                            [--cache-dir DIR] [--out FILE] [--boundscheck-cost]

See benchmarks/README.md for what is measured and what the columns mean.
Thread pinning happens here, before NumPy, JAX or PyTorch are imported.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

TOOLS = ("pullback", "jax", "torch", "numba", "numpy")
def _cpu_with_worker():
    """This process's CPU seconds plus those of pullback's compile worker (note
    [tiered-compile]: counted as of its last finished job, so read after waiting for it)."""
    tiered = sys.modules.get("pullback.backends.numba_tiered")
    return time.process_time() + (tiered.worker_cpu_seconds() if tiered is not None else 0.0)


CLOCKS = {"wall": time.perf_counter, "cpu": _cpu_with_worker}
CLOCK = [time.perf_counter]   # set from --clock in main and in the probes


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="default",
                   help="comma-separated size sets and/or named sizes: small (quick check), default "
                        "(timings of tens of ms), gradbench (GradBench's sizes: several per program), or "
                        "a program's named size such as gb-k1000 (programs without it are skipped)")
    p.add_argument("--programs", default=None, help="comma-separated subset (default: all)")
    p.add_argument("--threads", type=int, default=1,
                   help="cores/threads allowed (default 1: process pinned to one core)")
    p.add_argument("--backend", default=None,
                   help="pullback backend: numba, pysource or interp (default: pullback's, i.e. "
                        "$PULLBACK_BACKEND or numba)")
    p.add_argument("--cache-dir", default=None,
                   help="PULLBACK_CACHE_DIR for the numba backend (default: a fresh temporary directory, "
                        "so that first calls are cold compiles)")
    p.add_argument("--tools", default=",".join(TOOLS), help="comma-separated subset of " + ",".join(TOOLS))
    p.add_argument("--out", default=os.path.join(HERE, "results", "latest.md"), help="markdown output file")
    p.add_argument("--clock", default="wall", choices=tuple(CLOCKS),
                   help="wall: elapsed time (default); cpu: the process's CPU time (all its threads), which a "
                        "machine loaded by other processes inflates much less (everything runs on one thread)")
    p.add_argument("--min-time", type=float, default=0.2, help="seconds of timed calls per measurement (min)")
    p.add_argument("--min-runs", type=int, default=5, help="timed calls per measurement (min)")
    p.add_argument("--max-time", type=float, default=3.0,
                   help="stop a measurement after this many seconds once 3 calls are done")
    p.add_argument("--rtol", type=float, default=1e-6, help="agreement tolerance, relative to the largest entry")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--boundscheck-cost", action="store_true",
                   help="numba backend: also time pullback with bounds checks on and off "
                        "(PULLBACK_BOUNDSCHECK=1/0), each in a new process, and report the ratios")
    p.add_argument("--boundscheck-probe", metavar="PROGRAM", default=None,
                   help="internal: time pullback's primal and derivative of PROGRAM in this process, print JSON")
    p.add_argument("--warm-start-probe", metavar="PROGRAM", default=None,
                   help="internal: time pullback's first calls of PROGRAM in this (fresh) process, print JSON")
    return p.parse_args(argv)


THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS", "NUMBA_NUM_THREADS")


def pin(threads):
    """Restrict the process to `threads` cores and every library's thread pool to `threads`:
    BLAS (OpenBLAS/MKL/OpenMP), numba (NUMBA_NUM_THREADS), XLA, and (threads == 1) pullback's
    parallel maps (PULLBACK_PARALLEL=0). Must run before numpy / numba / jax / torch are imported;
    child processes (the probes) inherit the environment."""
    n = str(threads)
    for var in THREAD_VARS:
        os.environ[var] = n
    if threads == 1:
        os.environ["PULLBACK_PARALLEL"] = "0"
        flags = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
        if flags not in os.environ.get("XLA_FLAGS", ""):
            os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flags).strip()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ["JAX_ENABLE_X64"] = "1"
    cpus = None
    if hasattr(os, "sched_setaffinity"):
        allowed = sorted(os.sched_getaffinity(0))
        cpus = allowed[:threads]
        try:
            os.sched_setaffinity(0, set(cpus))
        except OSError as e:  # pragma: no cover
            print(f"warning: could not pin to cores {cpus}: {e}", file=sys.stderr)
            cpus = None
    return cpus


def load_frameworks(wanted, threads):
    """{tool: None} for available tools, {tool: reason} for skipped ones; plus versions."""
    skipped, versions = {}, {}
    if "jax" in wanted:
        try:
            import jax
            jax.config.update("jax_enable_x64", True)
            jax.config.update("jax_platforms", "cpu")
            versions["jax"] = jax.__version__
        except Exception as e:  # ImportError, or a broken install
            skipped["jax"] = f"not installed ({type(e).__name__}: {e})"
    if "torch" in wanted:
        try:
            import torch
            torch.set_num_threads(threads)
            try:
                torch.set_num_interop_threads(threads)
            except RuntimeError:
                pass
            versions["torch"] = torch.__version__
        except Exception as e:
            skipped["torch"] = f"not installed ({type(e).__name__}: {e})"
    return skipped, versions


def blas_threads():
    """{library file: (threads, kernels)} for each OpenBLAS loaded in this process (asked
    through its get_num_threads and get_corename entry points), so the header shows what
    BLAS really uses, not only the environment: some machines set OPENBLAS_CORETYPE to an
    older kernel set than OpenBLAS would pick. Empty where none is found (e.g. NumPy built
    against another BLAS)."""
    import ctypes

    out = {}
    try:
        with open("/proc/self/maps") as f:
            paths = sorted({line.split()[-1] for line in f if "openblas" in line.lower() and "/" in line})
    except OSError:
        return out
    for p in paths:
        try:
            lib = ctypes.CDLL(p)
        except OSError:
            continue
        got = []
        for what in ("get_num_threads", "get_corename"):
            for sym in (f"scipy_openblas_{what}64_", f"scipy_openblas_{what}", f"openblas_{what}64_",
                        f"openblas_{what}"):
                fn = getattr(lib, sym, None)
                if fn is not None:
                    if what == "get_corename":
                        fn.restype = ctypes.c_char_p
                        got.append(fn().decode(errors="replace"))
                    else:
                        got.append(int(fn()))
                    break
        if got:
            out[os.path.basename(p)] = tuple(got)
    return out


def thread_report(tools):
    """One line: the thread settings every library ended up with (read back, where it can be)."""
    parts = [f"{v}={os.environ.get(v, 'unset')}" for v in THREAD_VARS]
    parts.append(f"PULLBACK_PARALLEL={os.environ.get('PULLBACK_PARALLEL', 'unset')}")
    parts.append(f"XLA_FLAGS={os.environ.get('XLA_FLAGS', 'unset')!r}")
    parts.append(f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')}")
    blas = blas_threads()
    parts.append("OpenBLAS threads, kernels: " + (", ".join(f"{k} {', '.join(map(str, v))}" for k, v in blas.items())
                                                 or "none loaded"))
    if "numba" in sys.modules:
        import numba
        parts.append(f"numba.get_num_threads() {numba.get_num_threads()}")
    if "torch" in tools:
        import torch
        parts.append(f"torch threads {torch.get_num_threads()} (interop {torch.get_num_interop_threads()})")
    return "; ".join(parts)


# --------------------------------------------------------------------------- measuring

def _sync(tool):
    if tool == "jax":
        import jax
        return jax.block_until_ready
    return lambda r: r


def timed(fn, args, sync=lambda r: r):
    """(seconds, result) of one call, on the --clock clock."""
    clock = CLOCK[0]
    t0 = clock()
    result = sync(fn(*args))
    return clock() - t0, result


def ready_after(first):
    """`first` plus the time until pullback's background compiles are done (note
    [tiered-compile]: a cold compile of a large module runs numba in a worker process while the
    first calls run pysource), so that timed calls after it run numba's code."""
    pb = sys.modules.get("pullback")
    if pb is None:
        return first
    t0 = CLOCK[0]()
    pb.wait_for_compiles()
    return first + CLOCK[0]() - t0


def measure(fn, args, sync, min_time, min_runs, max_time, info=None):
    """(first-call seconds, median seconds of later calls, number of calls, result); `info`, a
    dict, gets "ready": the first call plus any background compile it started (`ready_after`)."""
    first, result = timed(fn, args, sync)
    ready = ready_after(first)
    if info is not None:
        info["ready"] = ready
    times = []
    total = 0.0
    while True:
        dt = timed(fn, args, sync)[0]
        times.append(dt)
        total += dt
        if (total >= min_time and len(times) >= min_runs) or (total >= max_time and len(times) >= 3):
            break
    times.sort()
    m = len(times)
    med = times[m // 2] if m % 2 else 0.5 * (times[m // 2 - 1] + times[m // 2])
    return first, med, m, result


def to_vector(r):
    """Any result (scalar, array, JAX/PyTorch array, tuple/list/dict of them) -> flat float64 vector."""
    import numpy as np

    if isinstance(r, dict):
        r = [r[k] for k in r]
    if isinstance(r, (tuple, list)):
        parts = [to_vector(x) for x in r]
        return np.concatenate(parts) if parts else np.zeros(0)
    if hasattr(r, "detach"):  # torch.Tensor
        r = r.detach().cpu().numpy()
    return np.asarray(r, dtype=np.float64).reshape(-1)


def disagreement(ref, got):
    """Max |got - ref| / max(|ref|), or None on a shape mismatch."""
    import numpy as np

    a, b = to_vector(ref), to_vector(got)
    if a.shape != b.shape:
        return None
    if a.size == 0:
        return 0.0
    scale = max(float(np.max(np.abs(a))), 1e-300)
    err = float(np.max(np.abs(a - b)))
    if not np.all(np.isfinite(b)) or not np.all(np.isfinite(a)):
        return float("inf") if not np.array_equal(np.isfinite(a), np.isfinite(b)) else err / scale
    return err / scale


def _err(e):
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:160]


def new_shape(mod, size, primal, deriv, args):
    """Per-shape compile probe: first-call seconds of pullback's (already compiled) primal and
    derivative on a second input whose shapes differ but whose ranks do not (`BUMP`)."""
    import numpy as np

    from programs import label, params

    p = params(mod, size, bump=True)
    try:
        fargs = mod.tool_pullback(mod.make_input(p, np.random.default_rng(args.seed + 1)), args.backend)[2]
        out = {"label": label(p)}
        for what, fn in (("primal", primal), ("deriv", deriv)):
            out[what] = timed(fn, fargs)[0]
            out[what + "_ready"] = ready_after(out[what])
        return out
    except Exception as e:
        return {"label": label(p), "error": _err(e)}


def run_program(mod, size, tools, args):
    import numpy as np

    from programs import NotRun, params

    inp = mod.make_input(params(mod, size), np.random.default_rng(args.seed))
    rows = {}
    for tool in tools:
        make = getattr(mod, f"tool_{tool}", None)
        if make is None:
            continue
        row = rows[tool] = {}
        try:
            primal, deriv, fargs = make(inp, args.backend) if tool == "pullback" else make(inp)
            sync = _sync(tool)
            for what, fn in (("primal", primal), ("deriv", deriv)):
                info = {}
                first, med, n, res = measure(fn, fargs, sync, args.min_time, args.min_runs, args.max_time, info)
                row[what] = med
                row[what + "_first"] = first
                row[what + "_ready"] = info["ready"]
                row[what + "_runs"] = n
                row[what + "_result"] = res
            if tool == "pullback":
                row["_callables"] = (primal, deriv)   # for the per-shape probe, after the warm-start probe
        except NotRun as e:
            row.clear()
            row["not_run"] = str(e)
        except Exception as e:
            row["error"] = _err(e)
    ref = rows.get("pullback", {})
    for tool, row in rows.items():
        if tool == "pullback" or "error" in row or "not_run" in row or "error" in ref or not ref:
            continue
        errs = [disagreement(ref[w + "_result"], row[w + "_result"]) for w in ("primal", "deriv")]
        row["err"] = errs
        row["agree"] = all(e is not None and e <= args.rtol for e in errs)
    for row in rows.values():
        for w in ("primal", "deriv"):
            row.pop(w + "_result", None)
    return rows


def warm_start_probe(args):
    """--warm-start-probe mode, in a fresh process: first-call seconds of pullback's primal and
    derivative of one program and whether numba loaded them from its disk cache, as JSON on stdout."""
    import numpy as np

    import numba  # noqa: F401 -- imported untimed, as in the main process
    from programs import load, params
    from pullback.backends.numba_backend import last_cache_hit

    mod = load(args.warm_start_probe)
    primal, deriv, fargs = mod.tool_pullback(
        mod.make_input(params(mod, args.sizes), np.random.default_rng(args.seed)), args.backend)
    out = {}
    for what, fn in (("primal", primal), ("deriv", deriv)):
        out[what] = timed(fn, fargs)[0]
        out[what + "_hit"] = last_cache_hit()
    print(json.dumps(out))
    return 0


def warm_start(name, size, args):
    """Runs `warm_start_probe` for program `name` at `size` in a new process (same environment, so the
    same PULLBACK_CACHE_DIR and thread settings; same size and seed, so the same shapes)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--warm-start-probe", name, "--sizes", size,
           "--seed", str(args.seed), "--backend", args.backend, "--threads", str(args.threads), "--clock", args.clock]
    r = subprocess.run(cmd, capture_output=True, text=True)
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return {"error": f"probe exited with status {r.returncode}: "
                         + (r.stderr.strip().splitlines() or ["no output"])[-1][:160]}


def boundscheck_probe(args):
    """--boundscheck-probe mode, in a fresh process whose PULLBACK_BOUNDSCHECK says whether numba code
    checks its indices (read when the code is emitted): medians of pullback's primal and derivative."""
    import numpy as np

    from programs import load, params

    mod = load(args.boundscheck_probe)
    primal, deriv, fargs = mod.tool_pullback(
        mod.make_input(params(mod, args.sizes), np.random.default_rng(args.seed)), args.backend)
    out = {}
    for what, fn in (("primal", primal), ("deriv", deriv)):
        out[what] = measure(fn, fargs, lambda r: r, args.min_time, args.min_runs, args.max_time)[1]
    print(json.dumps(out))
    return 0


def boundscheck_cost(name, size, args, rounds=2):
    """{"on": {...}, "off": {...}}: `boundscheck_probe` of program `name` at `size` with checks on and off, one
    new process each, alternating on/off `rounds` times (same environment and cache directory
    otherwise); each entry keeps the smallest median, so a burst of load in one process counts less."""
    out = {"on": {}, "off": {}}
    for _ in range(rounds):
        for mode, flag in (("on", "1"), ("off", "0")):
            cmd = [sys.executable, os.path.abspath(__file__), "--boundscheck-probe", name, "--sizes", size,
                   "--seed", str(args.seed), "--backend", args.backend, "--threads", str(args.threads),
                   "--clock", args.clock,
                   "--min-time", str(args.min_time), "--min-runs", str(args.min_runs),
                   "--max-time", str(args.max_time)]
            r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, PULLBACK_BOUNDSCHECK=flag))
            try:
                got = json.loads(r.stdout.strip().splitlines()[-1])
            except (IndexError, ValueError):
                return {"error": f"probe exited with status {r.returncode}: "
                                 + (r.stderr.strip().splitlines() or ["no output"])[-1][:160]}
            for k, v in got.items():
                out[mode][k] = min(v, out[mode].get(k, v))
    return out


def source_state():
    """The checkout measured: commit and the files under src/ that differ from it (others' work
    in progress in a shared checkout changes the numbers)."""
    def git(*a):
        r = subprocess.run(["git", "-C", ROOT, *a], capture_output=True, text=True, check=False)
        return r.stdout.rstrip() if r.returncode == 0 else None

    head = (git("rev-parse", "--short", "HEAD") or "").strip() or None
    if head is None:
        return "not a git checkout"
    dirty = [line[3:] for line in (git("status", "--short", "--", "src") or "").splitlines()]
    return f"commit {head}" + (f" + uncommitted changes in {', '.join(dirty)}" if dirty else " (clean src/)")


def write(results, meta, desc, out, final):
    """The report of the rows so far, written to `out` (if any); (text, bad)."""
    from report import report

    text, bad = report(results, meta, desc)
    if not final:
        text = text.replace("\n", "\n\n**Partial: the run has not finished (or was stopped).**\n", 1)
    if out:
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        with open(out, "w") as f:
            f.write(text)
    return text, bad


def main(argv=None):
    args = parse_args(argv)
    CLOCK[0] = CLOCKS[args.clock]
    cpus = pin(args.threads)
    sys.path.insert(0, HERE)
    if os.path.join(ROOT, "src") not in sys.path:
        sys.path.append(os.path.join(ROOT, "src"))  # PYTHONPATH=src takes precedence if given

    if args.warm_start_probe:
        return warm_start_probe(args)
    if args.boundscheck_probe:
        return boundscheck_probe(args)

    import datetime
    import platform
    import tempfile

    import numpy as np

    import pullback
    from programs import NAMES, all_size_names, label, load, params, sizes_of
    from pullback.api import default_backend
    from report import LABEL

    wanted = [t.strip() for t in args.tools.split(",") if t.strip()]
    for t in wanted:
        if t not in TOOLS:
            sys.exit(f"unknown tool {t!r} (available: {', '.join(TOOLS)})")
    names = [p.strip() for p in args.programs.split(",")] if args.programs else list(NAMES)
    for n in names:
        if n not in NAMES:
            sys.exit(f"unknown program {n!r} (available: {', '.join(NAMES)})")
    for tok in args.sizes.split(","):
        if tok.strip().lstrip("-") not in all_size_names():
            sys.exit(f"unknown size {tok.strip()!r} (available: {', '.join(all_size_names())})")

    args.backend = args.backend or default_backend()
    warm = "pullback" in wanted and args.backend == "numba"
    if args.boundscheck_cost and not warm:
        sys.exit("--boundscheck-cost compares numba code with and without bounds checks: "
                 "it needs the numba backend and the pullback tool")
    if warm:  # before pullback compiles anything, so that first calls are cold compiles
        tmp = None if args.cache_dir else tempfile.TemporaryDirectory(prefix="pullback-bench-")  # removed with `tmp`
        os.environ["PULLBACK_CACHE_DIR"] = args.cache_dir or tmp.name
        try:
            import numba  # noqa: F401 -- imported untimed, as in the warm-start probe
        except ImportError:
            pass  # pullback's rows show the error

    skipped, versions = load_frameworks(wanted, args.threads)
    tools = [t for t in wanted if t not in skipped]

    info = [
        ("date", datetime.datetime.now().isoformat(timespec="seconds")),
        ("machine", f"{platform.machine()} {platform.processor() or ''}".strip() + f", {os.cpu_count()} cores"),
        ("clock", "wall (elapsed time)" if args.clock == "wall" else
         "cpu (process CPU time, all threads: descheduled time on a loaded machine is not counted)"),
        ("threads", f"{args.threads}" + (f" (pinned to core(s) {','.join(map(str, cpus))})" if cpus else "")),
        ("pullback backend", args.backend + (f", cache {os.environ['PULLBACK_CACHE_DIR']} " + (
            "(--cache-dir: cold only if it was empty)" if args.cache_dir else "(fresh temporary directory)")
            if warm else "")),
        ("versions", ", ".join([f"python {platform.python_version()}", f"numpy {np.__version__}",
                                f"pullback {getattr(pullback, '__version__', '?')}"]
                               + [f"{k} {v}" for k, v in versions.items()])),
        ("pullback source", source_state()),
        ("tools run", ", ".join(LABEL[t] for t in tools)),
        ("thread settings", thread_report(tools)),
    ]
    if skipped:
        info.append(("skipped", "; ".join(f"{LABEL[t]}: {why} — `pip install -e .[bench]`"
                                          for t, why in skipped.items())))
    info.append(("Numba (hand)", "hand-derived derivatives in plain Numba loops (benchmarks/programs/manual/), "
                 "standing in for GradBench's manual C++"))
    info.append(("NumPy (hand)", "hand-written NumPy gradients, only for lse, llsq, det, det_lu, kmeans"))
    meta = {"sizes": args.sizes, "info": info, "rtol": args.rtol, "backend": args.backend, "warm": warm}
    results, desc = {}, {}
    for name in names:
        mod = load(name)
        desc[name] = mod.DESCRIPTION
        for size in sizes_of(mod, args.sizes):
            key = f"{name} ({label(params(mod, size))})"
            print(f"[{key}] ...", file=sys.stderr, flush=True)
            results[key] = run_program(mod, size, tools, args)
            pbr = results[key].get("pullback")
            if pbr and "error" not in pbr:
                if warm:
                    pbr["warm"] = warm_start(name, size, args)
                # after the warm probe: compiling a second shape first made that probe miss numba's
                # cache for some programs (gmm, lstm) with the checkout of 2026-11-24
                pbr["shape"] = new_shape(mod, size, *pbr.pop("_callables"), args)
                if warm and args.boundscheck_cost:
                    pbr["bounds"] = boundscheck_cost(name, size, args)
            elif pbr:
                pbr.pop("_callables", None)
            write(results, meta, desc, args.out, final=False)   # a killed run keeps the rows done
    if not results:
        sys.exit(f"--sizes {args.sizes!r} selects no size of the programs {', '.join(names)}")

    text, bad = write(results, meta, desc, args.out, final=True)
    print(text)
    if args.out:
        print(f"(written to {args.out})", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
