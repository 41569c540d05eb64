"""Cold compile time, phase by phase (issue 13 §2): where the seconds of a
first call go, on the numba backend.

    python benchmarks/compile_time.py                         # gmm, lstm, det, ode at GradBench sizes
    python benchmarks/compile_time.py --cases gmm:gb-d64-k5,det:small --runs 3
    python benchmarks/compile_time.py --before OLD/src        # a second column: another checkout's src/
    python benchmarks/compile_time.py --functions 8           # also the 8 costliest numba functions
    python benchmarks/compile_time.py --out benchmarks/results/compile-now.md
    python benchmarks/compile_time.py --variant opt3=,PULLBACK_NUMBA_OPT=3    # a variant: environment variables
    python benchmarks/compile_time.py --speed-opt 3,2 --cases lse:default,...  # warm speed per LLVM level
    python benchmarks/compile_time.py --speed-opt 3,1 --speed-var PULLBACK_NUMBA_FOPT  # ... per function-pass level
    python benchmarks/compile_time.py --speed-forward --rounds 40               # forwarded entry vs wrapper
    python benchmarks/compile_time.py --core none --clock wall \
        --variant par=,PULLBACK_PARALLEL=1,NUMBA_NUM_THREADS=2                   # parallel maps on 2 threads

Each case (PROGRAM:SIZE of `benchmarks/programs/`) runs in a new process with an
empty cache directory (so numba compiles), single-threaded, with parallel maps
off and pinned to one core (a variant's environment may change the first two,
``--core none`` the third). That process calls pullback's primal, then its derivative, once each
(the cold first calls, as `run.py`'s "pullback start-up" table; CPU seconds
of the process by default, which load from other processes on a shared
machine hardly changes; ``--clock wall`` for elapsed time), with
*exclusive* timers on every phase (a phase's time excludes the phases nested
in it), then times warm calls of both (median over at least `--min-time`
seconds). Phases:

- pullback: ``stage`` (frontend + AD transformation, `frontend.stage`),
  ``passes`` (const_args, dead_results and the numba-only passes of
  `numba_backend.lower`), ``emit`` (the numba dialect of the pysource
  emitter), ``generic`` (the shape-generic comparison), ``load`` (hashing,
  writing and executing the generated module);
- numba, from its event API (`numba.core.event`: one event per compiler
  pass) and timers on its code library: ``numba IR`` (bytecode to numba IR,
  rewrites, inlining of ``inline="always"`` helpers), ``typing`` (type
  inference and the typed rewrites), ``lowering`` (numba IR to LLVM IR),
  ``llvm opt`` (LLVM's function passes when a function's IR is added, and
  the module passes at finalisation: cheap + full optimisation), ``llvm
  link`` (parsing and linking LLVM modules: every callee's optimised module is
  linked into its caller's and optimised again), ``machine code`` (LLVM's
  code generation), ``cache`` (numba's disk cache: index lookups and saving);
- ``other``: the rest of the first call (numba's dispatcher, argument typing,
  the call itself).

Columns ``funcs`` and ``lines``: the numba functions compiled (numba
``compile`` events, helpers inlined into their callers included) and the
generated module's lines. ``--functions N`` lists the N numba functions with
the most exclusive time. With ``--before DIR`` every case also runs with
``PYTHONPATH=DIR`` (another checkout's ``src/``), the two variants interleaved
run by run, so load on a shared machine hits both alike; each figure is the
median over ``--runs``. ``--variant NAME=[SRC][,VAR=VALUE...]`` adds
variants with another ``src/`` and/or environment variables. Only ratios from
one run mean anything.

``--speed-opt 3,2``: instead, for each case one process compiles pullback's
primal and derivative at each LLVM level (``PULLBACK_NUMBA_OPT``, note
[compile-time]), checks that the results are equal, and times warm calls of
all of them interleaved (``--rounds`` rounds of 3 calls each): the speed cost
of a lower level, measured side by side. ``--speed-var NAME`` sets another
variable than ``PULLBACK_NUMBA_OPT`` to the levels (``PULLBACK_NUMBA_FOPT``: the
level of numba's function-level passes, note [compile-time]).
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
from collections import defaultdict

os.environ.setdefault("PULLBACK_TIERED", "0")   # first calls here are numba's whole compile (note [tiered-compile])

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")
DEFAULT_CASES = "gmm:gb-d64-k5,lstm:default,det:default,ode:gb-n10000-s100"
PHASES = ("stage", "passes", "emit", "generic", "load", "numba IR", "typing", "lowering", "llvm opt",
          "llvm link", "machine code", "cache", "other")
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS", "NUMBA_NUM_THREADS")


# ---------------------------------------------------------------------------
# the child: one case, phase timers
# ---------------------------------------------------------------------------

NOW = [time.process_time]   # the clock: CPU seconds of this process (--clock wall: elapsed)


class Clock:
    """Exclusive timers on a stack: a phase's time excludes the phases nested in it.
    Time is also attributed to the numba function being compiled (`func`)."""

    def __init__(self):
        self.stack = []                       # [phase, t0, nested seconds]
        self.totals = defaultdict(float)
        self.funcs = defaultdict(lambda: defaultdict(float))   # numba function -> phase -> exclusive seconds
        self.fstack = []                      # numba functions being compiled
        self.compiles = 0

    def push(self, phase):
        self.stack.append([phase, NOW[0](), 0.0])

    def pop(self):
        phase, t0, nested = self.stack.pop()
        dt = NOW[0]() - t0
        self.totals[phase] += dt - nested
        if self.fstack:
            self.funcs[self.fstack[-1]][phase] += dt - nested
        if self.stack:
            self.stack[-1][2] += dt

    def wrap(self, owner, attr, phase):
        fn = getattr(owner, attr)

        def timed(*a, **k):
            self.push(phase)
            try:
                return fn(*a, **k)
            finally:
                self.pop()

        timed.__wrapped__ = fn
        setattr(owner, attr, timed)


_TYPING_PASSES = ("nopython_type_inference", "partial_type_inference", "nopython_rewrites", "annotate_types",
                  "ir_legalization", "nopython_supported_feature_validation", "inline_overloads",
                  "nopython_backend", "dump_parfor_diagnostics", "parfor", "pre_parfor")


def _pass_phase(name: str) -> str:
    """The phase of numba's compiler pass `name` ("native_lowering [f]", ...)."""
    n = name.split(" [")[0].lower()
    if n == "native_lowering":
        return "lowering"
    if n.startswith(_TYPING_PASSES):
        return "typing"
    return "numba IR"


def instrument(clock: Clock):
    """Install the timers on pullback's phases and numba's compiler (before the first call)."""
    import numba.core.codegen as cg
    import numba.core.event as ev
    from numba.core import caching

    import pullback.passes as passes_pkg  # noqa: F401
    from pullback import frontend
    from pullback.backends import numba_backend as nb
    from pullback.backends import numba_generic

    clock.wrap(frontend, "stage", "stage")
    for mod, name in (("const_args", "const_args"), ("dead_results", "dead_results"),
                      ("accumulate", "accumulate"), ("dead_clears", "dead_clears"),
                      ("forward_index", "forward_index"), ("inline", "inline_scalar_calls"),
                      ("inline", "inline_small"), ("layout", "transpose_layout"), ("scalarize", "scalarize"),
                      ("strong_mul", "strong_mul")):
        import importlib

        m = importlib.import_module(f"pullback.passes.{mod}")
        if hasattr(m, name):
            clock.wrap(m, name, "passes")
    clock.wrap(nb, "_vectorize", "passes")
    clock.wrap(nb, "_emit_par", "emit")
    clock.wrap(numba_generic, "plan", "generic")
    clock.wrap(nb, "_module_hash", "load")
    clock.wrap(nb, "_load_unit", "load")

    clock.wrap(cg.CPUCodeLibrary, "_optimize_functions", "llvm opt")
    clock.wrap(cg.CPUCodeLibrary, "_optimize_final_module", "llvm opt")
    clock.wrap(cg.CPUCodeLibrary, "add_ir_module", "llvm link")
    clock.wrap(cg.CPUCodeLibrary, "finalize", "llvm link")
    clock.wrap(cg.JITCodeLibrary, "_finalize_specific", "machine code")
    clock.wrap(caching.Cache, "save_overload", "cache")
    clock.wrap(caching.Cache, "load_overload", "cache")

    class Listener(ev.Listener):
        def on_start(self, event):
            if event.kind == "numba:compile":
                d = event.data["dispatcher"]
                name = getattr(d, "__qualname__", None) or getattr(d.py_func, "__name__", "?")
                if clock.fstack:   # who made numba compile it
                    name = f"{name} <- {clock.fstack[-1].split(' <- ')[0]}"
                clock.fstack.append(name)
                clock.compiles += 1
                clock.push("other")
            elif event.kind == "numba:run_pass":
                clock.push(_pass_phase(event.data["name"]))

        def on_end(self, event):
            if event.kind == "numba:compile":
                clock.pop()
                clock.fstack.pop()
            elif event.kind == "numba:run_pass":
                clock.pop()

    lis = Listener()
    ev.register("numba:compile", lis)
    ev.register("numba:run_pass", lis)


def _module_lines() -> int:
    from pullback.backends.numba_units import UNITS

    return sum(u.entry.src.count(b"\n") + 1 for u in UNITS.values())


def _median_call(fn, args, min_time: float) -> tuple[float, int]:
    ts = []
    t_end = NOW[0]() + min_time
    while len(ts) < 5 or (NOW[0]() < t_end and len(ts) < 200):
        t0 = NOW[0]()
        fn(*args)
        ts.append(NOW[0]() - t0)
    return statistics.median(ts), len(ts)


def child(case: str, min_time: float, nfuncs: int, clock: str) -> dict:
    if clock == "wall":
        NOW[0] = time.perf_counter
    prog_name, size = case.split(":")
    sys.path.insert(0, HERE)
    import importlib

    import numpy as np

    mod = importlib.import_module(f"programs.{prog_name}")
    inp = mod.make_input(mod.SIZES[size], np.random.default_rng(0))
    import numba  # noqa: F401 - imported before the timers: not a compile cost

    import pullback  # noqa: F401
    clock = Clock()
    instrument(clock)
    primal, deriv, args = mod.tool_pullback(inp, "numba")
    out = {"case": case}
    for which, fn in (("primal", primal), ("deriv", deriv)):
        clock.totals.clear()
        clock.funcs.clear()
        clock.compiles = 0
        n0 = _module_lines()
        clock.push("other")
        t0 = NOW[0]()
        fn(*args)
        total = NOW[0]() - t0
        clock.pop()
        top = sorted(([f, sum(ph.values()), {k: round(v, 3) for k, v in ph.items() if v >= 0.005}]
                      for f, ph in clock.funcs.items()), key=lambda t: -t[1])[:nfuncs]
        out[which] = {"total": total, "phases": dict(clock.totals), "funcs": clock.compiles,
                      "lines": _module_lines() - n0, "top": top}
    for which, fn in (("primal", primal), ("deriv", deriv)):
        med, n = _median_call(fn, args, min_time)
        out[which]["call"] = med
        out[which]["calls"] = n
    return out


def child_speed(case: str, levels: list[int], rounds: int, var: str = "PULLBACK_NUMBA_OPT") -> dict:
    """Warm-call speed of the case compiled at each LLVM level (`var`, by default
    `PULLBACK_NUMBA_OPT`) in this one process, timed interleaved: `rounds` rounds,
    each calling every level's primal and derivative a few times; per level the
    median call."""
    prog_name, size = case.split(":")
    sys.path.insert(0, HERE)
    import importlib

    import numpy as np

    from pullback import api
    from pullback.backends import numba_backend as nb

    # fresh transformation objects per build (pb.grad caches them per function)
    api._cached = lambda fun, key, make: api._described(make(), key)
    mod = importlib.import_module(f"programs.{prog_name}")
    inp = mod.make_input(mod.SIZES[size], np.random.default_rng(0))
    builds = {}
    for lv in levels:
        os.environ[var] = str(lv)
        nb._MEMO.clear()
        primal, deriv, args = mod.tool_pullback(inp, "numba")
        ref = (primal(*args), deriv(*args))
        builds[lv] = (primal, deriv, args, ref)
    r0 = builds[levels[0]][3]
    agree = all(_same(builds[lv][3], r0) for lv in levels)
    times = {(lv, w): [] for lv in levels for w in ("primal", "deriv")}
    for _ in range(rounds):
        for lv in levels:
            primal, deriv, args, _ref = builds[lv]
            for w, fn in (("primal", primal), ("deriv", deriv)):
                for _k in range(3):
                    t0 = NOW[0]()
                    fn(*args)
                    times[(lv, w)].append(NOW[0]() - t0)
    return {"case": case, "agree": agree,
            "median": {f"{lv}/{w}": statistics.median(v) for (lv, w), v in times.items()}}


def child_speed_forward(case: str, rounds: int) -> dict:
    """Warm-call speed of the derivative compiled with its forwarded entry (the
    default, `numba_opt.forwarded`) and with the wrapper entry itself, in this
    one process, timed interleaved."""
    prog_name, size = case.split(":")
    sys.path.insert(0, HERE)
    import importlib

    import numpy as np

    from pullback.backends import numba_backend as nb
    from pullback.pytree import flatten

    mod = importlib.import_module(f"programs.{prog_name}")
    inp = mod.make_input(mod.SIZES[size], np.random.default_rng(0))
    _p, deriv, args = mod.tool_pullback(inp, "numba")
    obj = deriv if hasattr(deriv, "_jit") or hasattr(deriv, "staged") else next(
        c.cell_contents for c in deriv.__closure__ if hasattr(c.cell_contents, "_jit"))
    j = getattr(obj, "_jit", obj)
    fun = getattr(obj, "fun", None)
    n = min(fun.__code__.co_argcount, len(args)) if hasattr(fun, "__code__") else len(args)
    prog = j.staged(*args[:n]).prog
    leaves = flatten(tuple(args[:n]))[0]
    fa = nb.compile_prog(prog)
    keep = nb.forwarded
    nb.forwarded = lambda p, f: f
    try:
        fb = nb.compile_prog(prog)
    finally:
        nb.forwarded = keep
    same = all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(fa(*leaves), fb(*leaves)))
    ta, tb = [], []
    for _ in range(rounds):
        for fn, ts in ((fa, ta), (fb, tb)):
            for _k in range(3):
                t0 = NOW[0]()
                fn(*leaves)
                ts.append(NOW[0]() - t0)
    return {"case": case, "entries": [fa.spec.dname, fb.spec.dname], "bitwise": same,
            "forwarded": statistics.median(ta), "wrapper": statistics.median(tb)}


def _leaves(a) -> list:
    import numpy as np

    if isinstance(a, (tuple, list)):
        return [x for v in a for x in _leaves(v)]
    return [np.asarray(a, dtype=float).ravel()]


def _same(a, b) -> bool:
    import numpy as np

    fa, fb = _leaves(a), _leaves(b)
    return len(fa) == len(fb) and all(x.shape == y.shape and np.allclose(x, y, rtol=1e-9, atol=1e-12, equal_nan=True)
                                      for x, y in zip(fa, fb))


def run_speed(cases: list[str], args) -> str:
    """The `--speed-opt` table: warm calls per LLVM level, side by side in one process per case."""
    levels = [int(x) for x in args.speed_opt.split(",")]
    out = ["| case | " + " | ".join(f"O{lv} primal | O{lv} deriv" for lv in levels) + " | "
           + " | ".join(f"O{lv}/O{levels[0]} primal | O{lv}/O{levels[0]} deriv" for lv in levels[1:])
           + " | results equal |",
           "|" + "---|" * (2 + 4 * len(levels) - 2)]
    for case in cases:
        cache = tempfile.mkdtemp(prefix="pb-speed-")
        try:
            cmd = [sys.executable, os.path.abspath(__file__), "--child-speed", case, "--speed-opt", args.speed_opt,
                   "--speed-var", args.speed_var, "--rounds", str(args.rounds), "--clock", args.clock]
            if shutil.which("taskset") and args.core != "none":
                cmd = ["taskset", "-c", str(args.core)] + cmd
            env = _env(SRC, cache, {"PULLBACK_WARM_CACHE": "0"})
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout, check=False)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        if p.returncode != 0:
            out.append(f"| {case} | error: {(p.stderr or p.stdout).strip().splitlines()[-1][:150]} |")
            continue
        r = json.loads(p.stdout.strip().splitlines()[-1])
        m = r["median"]
        cells = [case] + [_fmt_call(m[f"{lv}/{w}"]) for lv in levels for w in ("primal", "deriv")]
        cells += [f"{m[f'{lv}/{w}'] / m[f'{levels[0]}/{w}']:.3f}" for lv in levels[1:] for w in ("primal", "deriv")]
        cells.append("yes" if r["agree"] else "**no**")
        out.append("| " + " | ".join(cells) + " |")
        print(out[-1], file=sys.stderr, flush=True)
    return "\n".join(out)


# ---------------------------------------------------------------------------
# the parent: processes, medians, the table
# ---------------------------------------------------------------------------

def _env(src: str, cache: str, extra: dict | None = None) -> dict:
    env = dict(os.environ)
    for v in THREAD_VARS:
        env[v] = "1"
    env["PULLBACK_PARALLEL"] = "0"
    env.update(extra or {})   # a variant may turn parallel maps on (PULLBACK_PARALLEL=1, with --core none)
    env["PULLBACK_CACHE_DIR"] = cache
    env["PYTHONPATH"] = src
    env.pop("NUMBA_CACHE_DIR", None)
    return env


def run_case(case: str, variant: tuple, args) -> dict:
    src, extra = variant
    cache = tempfile.mkdtemp(prefix="pb-compile-")
    try:
        cmd = [sys.executable, os.path.abspath(__file__), "--child", case, "--min-time", str(args.min_time),
               "--functions", str(args.functions), "--clock", args.clock]
        if shutil.which("taskset") and args.core != "none":
            cmd = ["taskset", "-c", str(args.core)] + cmd
        p = subprocess.run(cmd, env=_env(src, cache, extra), capture_output=True, text=True, timeout=args.timeout,
                           check=False)
        if p.returncode != 0:
            return {"error": (p.stderr or p.stdout).strip().splitlines()[-1:] or ["failed"]}
        return json.loads(p.stdout.strip().splitlines()[-1])
    except subprocess.TimeoutExpired:
        return {"error": [f"timed out after {args.timeout} s"]}
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def _med(runs, which, key, sub=None):
    vals = []
    for r in runs:
        if "error" in r:
            continue
        v = r[which][key]
        vals.append(v.get(sub, 0.0) if sub is not None else v)
    return statistics.median(vals) if vals else None


def _fmt(s):
    if s is None:
        return "–"
    if s >= 10:
        return f"{s:.1f}"
    if s >= 0.995:
        return f"{s:.2f}"
    return f"{s:.3f}"


def _fmt_call(s):
    if s is None:
        return "–"
    return f"{s * 1e3:.3g} ms"


def table(results: dict, variants: list[str], cases: list[str], nfuncs: int) -> str:
    out = []
    head = ["case", "variant", "first call s", *PHASES, "funcs", "lines", "warm call"]
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "---|" * len(head))
    for case in cases:
        for which in ("primal", "deriv"):
            for v in variants:
                runs = results[(case, v)]
                errs = [r["error"] for r in runs if "error" in r]
                if len(errs) == len(runs):
                    out.append(f"| {case} {which} | {v} | error: {errs[0][0][:120]} |" + " |" * (len(head) - 3))
                    continue
                cells = [f"{case} {which}", v, _fmt(_med(runs, which, "total"))]
                cells += [_fmt(_med(runs, which, "phases", p)) for p in PHASES]
                cells += [str(int(_med(runs, which, "funcs"))), str(int(_med(runs, which, "lines"))),
                          _fmt_call(_med(runs, which, "call"))]
                out.append("| " + " | ".join(cells) + " |")
    if nfuncs:
        out.append("")
        out.append("Costliest numba functions (exclusive seconds, first run of each variant):")
        out.append("")
        for case in cases:
            for v in variants:
                r = next((r for r in results[(case, v)] if "error" not in r), None)
                if r is None:
                    continue
                for which in ("primal", "deriv"):
                    top = "; ".join(f"{n} {s:.2f} (" + ", ".join(f"{k} {v:.2f}" for k, v in
                                                                    sorted(ph.items(), key=lambda kv: -kv[1])) + ")"
                                    for n, s, ph in r[which]["top"])
                    out.append(f"- {case} {which} ({v}): {top}")
    return "\n".join(out)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", default=DEFAULT_CASES, help=f"PROGRAM:SIZE,... (default {DEFAULT_CASES})")
    p.add_argument("--runs", type=int, default=1, help="processes per case and variant (median)")
    p.add_argument("--before", default=None, metavar="SRC", help="also run with PYTHONPATH=SRC (another src/)")
    p.add_argument("--variant", action="append", default=[], metavar="NAME=[SRC][,VAR=VALUE...]",
                   help="another variant: another src/ and/or environment variables (e.g. opt2=,NUMBA_OPT=2)")
    p.add_argument("--functions", type=int, default=0, help="list the N costliest numba functions")
    p.add_argument("--min-time", type=float, default=1.0, help="seconds of warm calls per callable")
    p.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                   help="cpu (default): the child's CPU seconds (time.process_time), robust to other processes "
                        "on a shared machine; wall: elapsed seconds")
    p.add_argument("--core", default="0", help="the core to pin to (taskset); 'none': not pinned (parallel maps "
                                               "need more than one CPU)")
    p.add_argument("--timeout", type=int, default=900)
    p.add_argument("--out", default=None, help="also write the report (Markdown) here")
    p.add_argument("--speed-opt", default=None, metavar="L1,L2,...",
                   help="instead: warm-call speed at these LLVM levels (PULLBACK_NUMBA_OPT), compiled and timed "
                        "interleaved in one process per case")
    p.add_argument("--speed-var", default="PULLBACK_NUMBA_OPT", metavar="NAME",
                   help="--speed-opt: the variable the levels set (PULLBACK_NUMBA_FOPT: numba's function passes)")
    p.add_argument("--rounds", type=int, default=30, help="--speed-opt: rounds of interleaved calls")
    p.add_argument("--speed-forward", action="store_true",
                   help="instead: the derivative's warm calls with its forwarded entry and with the wrapper entry, "
                        "compiled and timed interleaved in one process per case")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--child-forward", default=None, help=argparse.SUPPRESS)
    p.add_argument("--child-speed", default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.min_time, args.functions, args.clock)))
        return 0
    if args.child_speed:
        if args.clock == "wall":
            NOW[0] = time.perf_counter
        print(json.dumps(child_speed(args.child_speed, [int(x) for x in args.speed_opt.split(",")], args.rounds,
                                     args.speed_var)))
        return 0
    if args.child_forward:
        if args.clock == "wall":
            NOW[0] = time.perf_counter
        print(json.dumps(child_speed_forward(args.child_forward, args.rounds)))
        return 0
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    if args.speed_forward:
        out = ["| case | entries (forwarded / wrapper) | forwarded | wrapper | ratio | results bitwise equal |",
               "|---|---|---|---|---|---|"]
        for case in cases:
            cache = tempfile.mkdtemp(prefix="pb-fwd-")
            try:
                cmd = [sys.executable, os.path.abspath(__file__), "--child-forward", case, "--rounds",
                       str(args.rounds), "--clock", args.clock]
                if shutil.which("taskset") and args.core != "none":
                    cmd = ["taskset", "-c", str(args.core)] + cmd
                p = subprocess.run(cmd, env=_env(SRC, cache, {"PULLBACK_WARM_CACHE": "0"}), capture_output=True,
                                   text=True, timeout=args.timeout, check=False)
            finally:
                shutil.rmtree(cache, ignore_errors=True)
            if p.returncode != 0:
                out.append(f"| {case} | error: {(p.stderr or p.stdout).strip().splitlines()[-1][:150]} |")
            else:
                r = json.loads(p.stdout.strip().splitlines()[-1])
                out.append(f"| {case} | {' / '.join(r['entries'])} | {_fmt_call(r['forwarded'])} | "
                           f"{_fmt_call(r['wrapper'])} | {r['forwarded'] / r['wrapper']:.3f} | "
                           f"{'yes' if r['bitwise'] else '**no**'} |")
            print(out[-1], file=sys.stderr, flush=True)
        print("\n".join(out))
        if args.out:
            with open(args.out, "w") as f:
                f.write("\n".join(out) + "\n")
        return 0
    if args.speed_opt:
        t0 = time.time()
        text = (f"# Warm calls by LLVM level ({time.strftime('%Y-%m-%d %H:%M')})\n\n`python benchmarks/compile_time.py "
                f"{' '.join(argv if argv is not None else sys.argv[1:])}`; {args.clock} clock, medians of "
                f"{3 * args.rounds} calls per cell, levels interleaved in one process per case\n\n"
                + run_speed(cases, args) + f"\n\n{time.time() - t0:.0f} s in all.\n")
        print(text)
        if args.out:
            with open(args.out, "w") as f:
                f.write(text)
        return 0
    variants = {"now": (SRC, {})}
    if args.before:
        variants["before"] = (os.path.abspath(args.before), {})
    for spec in args.variant:
        name, _, rest = spec.partition("=")
        parts = [x for x in rest.split(",") if x]
        src = SRC if not parts or "=" in parts[0] else os.path.abspath(parts.pop(0))
        variants[name] = (src, dict(x.split("=", 1) for x in parts))
    results = {(c, v): [] for c in cases for v in variants}
    t0 = time.time()
    load0 = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    for case in cases:
        for _ in range(args.runs):
            for v, src in (reversed(variants.items()) if _ % 2 else variants.items()):
                r = run_case(case, src, args)
                results[(case, v)].append(r)
                print(f"{case} {v}: " + ("error " + r["error"][0] if "error" in r else
                                         f"primal {r['primal']['total']:.2f} s, deriv {r['deriv']['total']:.2f} s"),
                      file=sys.stderr, flush=True)
    load1 = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    import numba
    import numpy

    cmdline = " ".join(argv if argv is not None else sys.argv[1:])
    hdr = [f"# Cold compile time by phase ({time.strftime('%Y-%m-%d %H:%M')})", "",
           (f"`python benchmarks/compile_time.py {cmdline}`; numba {numba.__version__}, NumPy {numpy.__version__}, "
            f"Python {sys.version.split()[0]}; {'not pinned' if args.core == 'none' else 'one core'}, one thread unless a variant says otherwise; {args.runs} run(s) per case and variant "
            f"(medians); load average {load0:.2f} at the start, {load1:.2f} at the end; "
            f"{time.time() - t0:.0f} s in all."), "",
           (f"Seconds ({args.clock} clock), exclusive per phase (see the script's docstring); "
            "`warm call`: median of warm calls."), ""]
    text = "\n".join(hdr) + table(results, list(variants), cases, args.functions) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
