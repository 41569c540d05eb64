"""Time the GradBench modules hello, particle and saddle at GradBench's inputs, side by side.

    PYTHONPATH=src python benchmarks/gradbench_evals.py [--runs N] [--min-time S] [--modules a,b]

For each function: pullback on numba (the module's FUNCTIONS, as the GradBench server runs
them: a cold compile into a fresh cache directory, then the median of timed calls), JAX
(jax.jit of the whole descent, nested jax.grad / jax.jacfwd, lax.while_loop) and a
hand-written Numba baseline with hand-derived derivatives (scalar code, standing in for
GradBench's hand-written C++). JAX cannot reverse-differentiate lax.while_loop, whose trip
count is data-dependent, so its outer-reverse variants (rr, rf) are "n/a". Every result is
checked against GradBench's expected output. One thread, one core: the thread variables are
set and the process is pinned to core 0 before NumPy, Numba or JAX are imported.
"""
import argparse
import os
import sys
import tempfile
import time

os.environ.setdefault("PULLBACK_TIERED", "0")   # first calls here are numba's whole compile (note [tiered-compile])

for _v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS",
           "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
    os.environ[_v] = "1"
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ["PULLBACK_PARALLEL"] = "0"
os.environ.setdefault("PULLBACK_CACHE_DIR", tempfile.mkdtemp(prefix="pb-gb-evals-"))  # cold compiles
os.environ.pop("PULLBACK_BACKEND", None)
os.environ.pop("PULLBACK_GRADBENCH_BACKEND", None)
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})

import math  # noqa: E402
import statistics  # noqa: E402

import numba  # noqa: E402
import numpy as np  # noqa: E402

PARTICLE_EXPECTED = 0.2071918746486116
SADDLE_EXPECTED = 8.246324826140356e-06
VARIANTS = ("rr", "ff", "fr", "rf")


# --- hand-written Numba baselines (hand-derived derivatives) ------------------------------------

@numba.njit(cache=False)
def _particle_traj(w, tangent):
    """x_0(t_f)^2 and, if tangent, its derivative in w (forward mode by hand)."""
    x0, x1, v0, v1 = 0.0, 8.0, 0.75, 0.0
    dx0 = dx1 = dv0 = dv1 = 0.0
    dt = 0.1
    while True:
        a0 = a1 = da0 = da1 = 0.0
        for k in range(2):
            cy = 10.0 - w if k == 0 else 0.0
            dcy = (-1.0 if k == 0 else 0.0) if tangent else 0.0
            ex, ey = x0 - 10.0, x1 - cy
            dex, dey = dx0, dx1 - dcy
            r2 = ex * ex + ey * ey
            r = math.sqrt(r2)
            r3 = r2 * r
            a0 += ex / r3
            a1 += ey / r3
            if tangent:  # d[(e)/r^3] = de/r^3 - 3 e (e.de)/r^5
                edot = ex * dex + ey * dey
                r5 = r3 * r2
                da0 += dex / r3 - 3.0 * ex * edot / r5
                da1 += dey / r3 - 3.0 * ey * edot / r5
        n0, n1 = x0 + dt * v0, x1 + dt * v1
        if n1 <= 0.0:
            break
        dx0, dx1 = dx0 + dt * dv0, dx1 + dt * dv1
        dv0, dv1 = dv0 + dt * da0, dv1 + dt * da1
        x0, x1 = n0, n1
        v0, v1 = v0 + dt * a0, v1 + dt * a1
    tf = -x1 / v1
    dtf = -(dx1 * v1 - x1 * dv1) / (v1 * v1)
    xf = x0 + tf * v0
    dxf = dx0 + dtf * v0 + tf * dv0
    return xf * xf, 2.0 * xf * dxf


@numba.njit(cache=False)
def manual_particle(w):
    fx, gx = _particle_traj(w, True)
    eta, acc = 1e-5, 0
    while abs(gx) > 1e-5:
        if acc == 10:
            eta, acc = 2.0 * eta, 0
            continue
        wn = w - eta * gx
        if abs(w - wn) <= 1e-5:
            break
        fn, _ = _particle_traj(wn, False)
        if fn < fx:
            w, fx = wn, fn
            _, gx = _particle_traj(wn, True)
            acc += 1
        else:
            eta, acc = eta / 2.0, 0
    return w


@numba.njit(cache=False)
def _ascend(s0, s1):
    """argmax_y -(y_0^2 + y_1^2) + const from (s0, s1): descent on |y|^2, gradient 2y (by hand)."""
    y0, y1 = s0, s1
    fy = y0 * y0 + y1 * y1
    g0, g1 = 2.0 * y0, 2.0 * y1
    eta, acc = 1e-5, 0
    while math.sqrt(g0 * g0 + g1 * g1) > 1e-5:
        if acc == 10:
            eta, acc = 2.0 * eta, 0
            continue
        n0, n1 = y0 - eta * g0, y1 - eta * g1
        if math.sqrt((n0 - y0) ** 2 + (n1 - y1) ** 2) <= 1e-5:
            break
        fn = n0 * n0 + n1 * n1
        if fn < fy:
            y0, y1, fy, g0, g1 = n0, n1, fn, 2.0 * n0, 2.0 * n1
            acc += 1
        else:
            eta, acc = eta / 2.0, 0
    return y0, y1


@numba.njit(cache=False)
def manual_saddle(start):
    s0, s1 = start[0], start[1]
    # max_y f(x, y) = |x|^2 - |y*|^2 with y* the ascent's point (independent of x): gradient 2x
    x0, x1 = s0, s1
    y0, y1 = _ascend(s0, s1)
    fx = x0 * x0 + x1 * x1 - (y0 * y0 + y1 * y1)
    g0, g1 = 2.0 * x0, 2.0 * x1
    eta, acc = 1e-5, 0
    while math.sqrt(g0 * g0 + g1 * g1) > 1e-5:
        if acc == 10:
            eta, acc = 2.0 * eta, 0
            continue
        n0, n1 = x0 - eta * g0, x1 - eta * g1
        if math.sqrt((n0 - x0) ** 2 + (n1 - x1) ** 2) <= 1e-5:
            break
        y0, y1 = _ascend(s0, s1)   # the inner maximisation, recomputed as the nested algorithm does
        fn = n0 * n0 + n1 * n1 - (y0 * y0 + y1 * y1)
        if fn < fx:
            x0, x1, fx = n0, n1, fn
            y0, y1 = _ascend(s0, s1)
            g0, g1 = 2.0 * x0, 2.0 * x1
            acc += 1
        else:
            eta, acc = eta / 2.0, 0
    y0, y1 = _ascend(s0, s1)
    return np.array([x0, x1, y0, y1])


# --- JAX ----------------------------------------------------------------------------------------

def jax_functions():
    import jax
    import jax.numpy as jnp
    from jax import lax
    jax.config.update("jax_enable_x64", True)

    def argmin(f, grad, x):
        df = grad(f)

        def body(s):
            x, fx, gx, eta, i, _ = s

            def trial(_):
                x_new = x - eta * gx

                def attempt(_):
                    fx_new = f(x_new)
                    return lax.cond(fx_new < fx, lambda _: (x_new, fx_new, df(x_new), eta, i + 1, True),
                                    lambda _: (x, fx, gx, eta / 2, 0 * i, True), None)
                return lax.cond(jnp.sqrt(jnp.sum((x - x_new) ** 2)) <= 1e-5,
                                lambda _: (x, fx, gx, eta, i, False), attempt, None)

            def go_on(_):
                return lax.cond(i == 10, lambda _: (x, fx, gx, 2 * eta, 0 * i, True), trial, None)
            return lax.cond(jnp.sqrt(jnp.sum(gx * gx)) <= 1e-5, lambda _: (x, fx, gx, eta, i, False), go_on, None)

        init = (x, f(x), df(x), jnp.asarray(1e-5), jnp.asarray(0), jnp.asarray(True))
        return lax.while_loop(lambda s: s[5], body, init)[0]

    def potential(x, w):
        c1 = jnp.array([10.0, 10.0 - w])
        c2 = jnp.array([10.0, 0.0])
        return 1.0 / jnp.sqrt(jnp.sum((x - c1) ** 2)) + 1.0 / jnp.sqrt(jnp.sum((x - c2) ** 2))

    def euler(w, inner):
        def body(s):
            x, xdot, _ = s
            xddot = -inner(potential)(x, w)
            x_new = x + 0.1 * xdot
            go = x_new[1] > 0
            return jnp.where(go, x_new, x), jnp.where(go, xdot + 0.1 * xddot, xdot), go
        x, xdot, _ = lax.while_loop(lambda s: s[2], body, (jnp.array([0.0, 8.0]), jnp.array([0.75, 0.0]), True))
        x_f = x + (-x[1] / xdot[1]) * xdot
        return x_f[0] ** 2

    def f(x, y):
        return (x[0] ** 2 + x[1] ** 2) - (y[0] ** 2 + y[1] ** 2)

    def saddle(start, outer, inner):
        def max_over_y(x):
            y = argmin(lambda y: -f(x, y), inner, start)
            return f(x, y)
        x = argmin(max_over_y, outer, start)
        y = argmin(lambda y: -f(x, y), outer, start)
        return jnp.concatenate([x, y])

    ops = {"r": jax.grad, "f": jax.jacfwd}
    out = {}
    for v in ("ff", "fr"):  # outer reverse (rr, rf) would reverse a lax.while_loop: unsupported in JAX
        o, i = ops[v[0]], ops[v[1]]
        out[("particle", v)] = jax.jit(lambda w0, o=o, i=i: argmin(lambda w: euler(w[0], i), o, jnp.array([w0]))[0])
        out[("saddle", v)] = jax.jit(lambda s, o=o, i=i: saddle(s, o, i))
    return {k: (lambda fn: lambda *a: fn(*a).block_until_ready())(fn) for k, fn in out.items()}


# --- timing -------------------------------------------------------------------------------------

def measure(fn, args, runs, min_time):
    t0 = time.perf_counter()
    out = fn(*args)
    first = time.perf_counter() - t0
    times = []
    start = time.perf_counter()
    while len(times) < runs or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        out = fn(*args)
        times.append(time.perf_counter() - t0)
        if len(times) >= 10 * runs and time.perf_counter() - start > min_time:
            break
    return first, statistics.median(times), (max(times) - min(times)) / statistics.median(times), len(times), out


def check(module, out):
    want = {"hello": None, "particle": PARTICLE_EXPECTED, "saddle": [SADDLE_EXPECTED] * 4}[module]
    if want is not None and not np.allclose(np.asarray(out, dtype=np.float64), want, rtol=1e-8, atol=0):
        return f"WRONG ({out})"
    return "ok"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=7, help="timed calls per measurement (min)")
    p.add_argument("--min-time", type=float, default=1.0, help="seconds of timed calls per measurement (min)")
    p.add_argument("--modules", default="hello,particle,saddle")
    p.add_argument("--no-jax", action="store_true")
    a = p.parse_args(argv)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src"))
    from pullback.gradbench import modules

    jax_fns = {}
    if not a.no_jax:
        try:
            jax_fns = jax_functions()
        except ImportError:
            print("JAX is not installed: its column is empty")
    inputs = {"hello": 1.0, "particle": {"w": 0.0}, "saddle": {"start": [1.0, 1.0]}}
    manual = {"particle": (manual_particle, (0.0,)), "saddle": (manual_saddle, (np.array([1.0, 1.0]),))}
    rows = []
    print(f"{'function':<14} {'tool':<9} {'first call s':>12} {'median ms':>11} {'spread':>7} {'runs':>5}  "
          f"{'check':<6} {'pullback/this':>13}")
    for name in a.modules.split(","):
        mod = modules.load(name)
        args = mod.prepare(inputs[name])
        for fname, fn in mod.FUNCTIONS.items():
            res = {"pullback": measure(fn, args, a.runs, a.min_time)}
            if (name, fname) in jax_fns:
                res["jax"] = measure(jax_fns[(name, fname)], args, a.runs, a.min_time)
            if name in manual:
                res["manual"] = measure(manual[name][0], manual[name][1], a.runs, a.min_time)
            base = res["pullback"][1]
            for tool, (first, med, spread, n, out) in res.items():
                ratio = "" if tool == "pullback" else f"{base / med:.2f}x"
                line = (f"{name + '.' + fname:<14} {tool:<9} {first:>12.3f} {med * 1e3:>11.4f} {spread:>7.2f} "
                        f"{n:>5}  {check(name, out):<6} {ratio:>13}")
                print(line, flush=True)
                rows.append(line)
            if name in ("particle", "saddle") and (name, fname) not in jax_fns and jax_fns:
                print(f"{name + '.' + fname:<14} {'jax':<9} {'n/a (reverse mode of lax.while_loop)':>40}")
    print("\nspread = (max - min) / median of the timed calls; first call = staging + compile "
          "(pullback: cold, PULLBACK_CACHE_DIR a fresh directory; JAX: trace + XLA compile; manual: numba compile)")


if __name__ == "__main__":
    main()
