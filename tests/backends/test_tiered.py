"""Tiered compilation (note [tiered-compile], `backends/numba_tiered.py`): a
cold compile of a large module runs numba in a worker process while calls run
pysource; the worker fills numba's verified disk cache and later calls run
numba's code loaded from it."""
import os
import pathlib
import sys
import threading
import time

import numpy as np
import pytest

pytest.importorskip("numba")

_SRC = str(pathlib.Path(__file__).resolve().parent.parent.parent / "src")
if _SRC not in sys.path:
    sys.path.insert(0, _SRC)

import pullback as pb
from pullback.backends import numba_tiered


@pytest.fixture
def tiered_env(monkeypatch, tmp_path):
    """Tiering on for every module size, a cold cache of the test's own."""
    monkeypatch.setenv("PULLBACK_TIERED", "1")
    monkeypatch.setenv("PULLBACK_TIER_LINES", "0")
    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(tmp_path))
    numba_tiered._shutdown()   # a worker of its own: started with this test's environment
    yield
    assert pb.wait_for_compiles(120)
    numba_tiered._shutdown()


def _runner(jitted):
    """The compiled entry behind a pb.jit function's only signature (staged here,
    or loaded from the warm cache)."""
    if jitted._cache:
        (st,) = jitted._cache.values()
        return st.runner
    (hit,) = set(jitted._warm.values())
    return hit[0]


def f_poly(x, y):
    z = np.sin(x) * y + np.cos(y) * x
    return np.sum(z * z) + np.sum(np.exp(-x * x))


def _args(n=50, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=n), rng.normal(size=n)


def _expect(fun, args):
    return pb.grad(fun, argnums=(0, 1), backend="interp")(*args)


def test_first_result_then_numba_from_the_workers_cache(tiered_env):
    from pullback.backends import warm_cache

    stored = warm_cache.STATS["stored"]
    g = pb.grad(f_poly, argnums=(0, 1), backend="numba")
    args = _args()
    want = _expect(f_poly, args)
    first = g(*args)
    entry = _runner(g._jit)
    assert isinstance(entry, numba_tiered.Tiered)
    for a, b in zip(first, want):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    assert pb.wait_for_compiles(120)
    assert entry.tier == "numba"
    assert entry.cache_hit is True      # loaded from the cache the worker filled, not compiled here
    assert not numba_tiered.pending()
    assert warm_cache.STATS["stored"] == stored + 1   # the warm-start entry, written once numba's code runs
    for a, b in zip(g(*args), want):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_a_new_process_loads_without_tiering(tiered_env):
    """Once the worker recorded the module, a compile of it is a cache load, not
    tiered, and the warm-start entry written at the switch skips staging."""
    jf = pb.jit(f_poly, backend="numba")
    args = _args(seed=1)
    jf(*args)
    assert pb.wait_for_compiles(120)
    from pullback.backends import numba_backend

    numba_backend._MEMO.clear()
    again = pb.jit(f_poly, backend="numba")
    np.testing.assert_allclose(again(*args), f_poly(*args), rtol=1e-12)
    assert again._warm and not again._cache
    assert not isinstance(_runner(again), numba_tiered.Tiered)


def test_a_failed_worker_compiles_here(tiered_env, monkeypatch):
    """A worker that dies without a reply: the next call compiles in this process."""
    monkeypatch.setattr(numba_tiered.sys, "executable", "/bin/false")

    def h(x):
        return np.sum(np.tanh(x) * x)

    jh = pb.jit(h, backend="numba")
    x = _args(seed=2)[0]
    np.testing.assert_allclose(jh(x), h(x), rtol=1e-12)
    entry = _runner(jh)
    assert isinstance(entry, numba_tiered.Tiered)
    assert pb.wait_for_compiles(120)
    assert entry.tier == "numba" and entry.cache_hit is False
    assert entry._job.ok is None and entry._job.error


def test_no_worker_no_tiering(tiered_env, monkeypatch):
    monkeypatch.setattr(numba_tiered.sys, "executable", "/nonexistent/python")

    def h(x):
        return np.sum(np.cosh(x) * x)

    jh = pb.jit(h, backend="numba")
    x = _args(seed=3)[0]
    np.testing.assert_allclose(jh(x), h(x), rtol=1e-12)
    assert not isinstance(_runner(jh), numba_tiered.Tiered)


def test_a_slow_pysource_run_is_abandoned_for_numba(tiered_env, monkeypatch):
    """When the worker finishes before pysource, the call returns numba's result
    and the pysource thread stops at its next bytecode."""
    stopped = threading.Event()

    def forever(*args):
        try:
            while True:
                time.sleep(0.01)
        finally:
            stopped.set()

    monkeypatch.setattr(numba_tiered.Tiered, "_tier0", lambda self: forever)

    def h(x):
        return np.sum(np.sin(x) ** 3)

    jh = pb.jit(h, backend="numba")
    x = _args(seed=4)[0]
    np.testing.assert_allclose(jh(x), h(x), rtol=1e-12)
    assert _runner(jh).tier == "numba"
    assert stopped.wait(10)


def test_many_threads_during_tiering(tiered_env):
    def h(x, y):
        return np.sum(np.sin(x) * np.exp(y)) + np.sum(x * y)

    g = pb.grad(h, argnums=(0, 1), backend="numba")
    inputs = [_args(seed=10 + i) for i in range(6)]
    g(*inputs[0])  # one signature for all, compiled once
    out, errs = {}, []

    def work(i):
        try:
            for _ in range(5):
                out[i] = g(*inputs[i])
        except Exception as e:  # noqa: BLE001 - reported below
            errs.append(e)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errs
    for i, args in enumerate(inputs):
        for a, b in zip(out[i], _expect(h, args)):
            np.testing.assert_allclose(a, b, rtol=1e-12)


def test_when_tiering_does_not_apply(monkeypatch, tmp_path):
    """Small modules, recursion, PULLBACK_TIERED=0: compiled in this process."""
    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PULLBACK_TIERED", "1")
    monkeypatch.delenv("PULLBACK_TIER_LINES", raising=False)

    def small(x):
        return np.sum(x * 2.0)

    js = pb.jit(small, backend="numba")   # below TIER_LINES
    js(np.ones(3))
    assert not isinstance(_runner(js), numba_tiered.Tiered)
    monkeypatch.setenv("PULLBACK_TIER_LINES", "0")

    def fact(n, x):   # n is traced: a recursive function in the IR
        if n <= 1:
            return x
        return x * fact(n - 1, x)

    jr = pb.jit(fact, backend="numba")   # recursion stays on numba from the start
    assert jr(3, 2.0) == 8.0
    assert not isinstance(_runner(jr), numba_tiered.Tiered)
    monkeypatch.setenv("PULLBACK_TIERED", "0")

    def other(x):
        return np.sum(x * 3.0)

    jo = pb.jit(other, backend="numba")
    jo(np.ones(3))
    assert not isinstance(_runner(jo), numba_tiered.Tiered)


def test_tier_lines_must_be_a_number(monkeypatch, tmp_path):
    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PULLBACK_TIERED", "1")
    monkeypatch.setenv("PULLBACK_TIER_LINES", "many")

    def h(x):
        return np.sum(x * 5.0)

    with pytest.raises(pb.PullbackError, match="PULLBACK_TIER_LINES"):
        pb.jit(h, backend="numba")(np.ones(3))


def test_gradbench_reports_the_background_compile(tiered_env):
    from pullback.gradbench.protocol import Session

    def h(x, y):
        return np.sum(np.arctan(x) * y)

    jf = pb.jit(h, backend="numba")
    out, timings = Session()._run(jf, _args(seed=5), 2, 0.0)
    names = [t["name"] for t in timings]
    assert names[:2] == ["warmup", "compile"] and names[2:] == ["evaluate", "evaluate"]
    assert _runner(jf).tier == "numba"


@pytest.mark.parametrize("bad", [-1.0, "soon", True, float("nan")])
def test_wait_for_compiles_rejects_a_bad_timeout(bad):
    with pytest.raises(pb.PullbackError, match="timeout must be None or a number"):
        pb.wait_for_compiles(bad)


def test_one_worker_for_many_jobs_under_each_jobs_settings(tiered_env, monkeypatch, tmp_path):
    """With one worker allowed, jobs reuse its process (numba's library code
    compiled once); a job submitted under other settings (here the cache
    directory) gets a worker started with them, so its files land where this
    process looks."""
    monkeypatch.setenv("PULLBACK_COMPILE_WORKERS", "1")

    def h1(x):
        return np.sum(np.sin(x) * np.sin(x))

    def h2(x):
        return np.sum(np.cos(x) * x * x)

    x = _args(seed=6)[0]
    j1, j2 = pb.jit(h1, backend="numba"), pb.jit(h2, backend="numba")
    j1(x)
    j2(x)
    assert pb.wait_for_compiles(120)
    assert _runner(j1)._job.worker == _runner(j2)._job.worker is not None
    assert _runner(j1).cache_hit and _runner(j2).cache_hit
    assert numba_tiered.worker_cpu_seconds() > 0
    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(other))

    def h3(x):
        return np.sum(np.tan(x) * x)

    j3 = pb.jit(h3, backend="numba")
    np.testing.assert_allclose(j3(x), h3(x), rtol=1e-12)
    assert pb.wait_for_compiles(120)
    assert _runner(j3).cache_hit is True
    assert any(n.endswith(".manifest.json") for n in os.listdir(other / "numba"))


def test_jobs_compile_side_by_side_in_two_workers(tiered_env, monkeypatch):
    """A job that arrives while the worker is busy gets a second worker: a
    primal and its gradient compile at the same time."""
    monkeypatch.setenv("PULLBACK_COMPILE_WORKERS", "2")

    def f(x, y):   # a program of its own: no module of it is in this process yet
        return np.sum(np.sin(x) * np.tanh(y)) + np.sum(np.exp(-y * y) * x)

    jf, g = pb.jit(f, backend="numba"), pb.grad(f, argnums=(0, 1), backend="numba")
    args = _args(seed=8)
    # the gradient first: its job (a worker's start, then the larger module) is still running
    # when the primal's, staged in a few milliseconds, arrives (the other order raced a
    # primal compile that could finish while the gradient was being staged)
    for a, b in zip(g(*args), _expect(f, args)):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    np.testing.assert_allclose(jf(*args), f(*args), rtol=1e-12)
    assert pb.wait_for_compiles(120)
    jobs = [_runner(jf)._job, _runner(g._jit)._job]
    assert all(j.ok == 0 for j in jobs)
    assert jobs[0].worker != jobs[1].worker
    assert _runner(jf).cache_hit and _runner(g._jit).cache_hit


@pytest.mark.parametrize("bad", ["0", "-2", "two", ""])
def test_compile_workers_must_be_a_positive_number(monkeypatch, tmp_path, bad):
    monkeypatch.setenv("PULLBACK_TIERED", "1")
    monkeypatch.setenv("PULLBACK_TIER_LINES", "0")
    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PULLBACK_COMPILE_WORKERS", bad)

    def h(x):
        return np.sum(np.sinh(x) * x)

    with pytest.raises(pb.PullbackError, match="PULLBACK_COMPILE_WORKERS must be a whole number"):
        pb.jit(h, backend="numba")(_args(seed=9)[0])
    assert not numba_tiered._JOBS


def test_a_program_slow_to_interpret_is_compiled_here(tiered_env):
    """Scalar loops make pysource slower than numba's compile: not tiered."""
    def h(x):
        s = 0.0
        for i in range(200):
            for j in range(200):
                s = s + x[i] * x[j]
        return s

    jh = pb.jit(h, backend="numba")
    x = np.linspace(0.0, 1.0, 200)
    np.testing.assert_allclose(jh(x), np.sum(x) ** 2, rtol=1e-12)
    assert not isinstance(_runner(jh), numba_tiered.Tiered)


def test_interpreted_steps_follow_trip_counts():
    from pullback.frontend import stage

    def h(x):
        s = 0.0
        for i in range(x.shape[0]):
            s = s + np.sin(x[i])
        return s

    small = numba_tiered.interpreted_steps(stage(h, (np.ones(10),)).prog)
    large = numba_tiered.interpreted_steps(stage(h, (np.ones(1000),)).prog)
    assert 50 < large / small < 150


def test_pysource_failures_other_than_the_programs_wait_for_numba(tiered_env, monkeypatch):
    def broken(*args):
        raise ValueError("a limit of pysource, not of the program")

    monkeypatch.setattr(numba_tiered.Tiered, "_tier0", lambda self: broken)

    def h(x):
        return np.sum(np.sin(x) * np.cos(x))

    x = _args(seed=7)[0]
    np.testing.assert_allclose(pb.jit(h, backend="numba")(x), h(x), rtol=1e-12)


def test_the_programs_own_errors_are_raised_from_pysource(tiered_env):
    def h(x, i):
        return np.sum(np.sin(x)) * x[i]

    jh = pb.jit(h, backend="numba")
    x = _args(seed=8)[0]
    with pytest.raises(pb.IndexOutOfBoundsError):
        jh(x, 100)
    np.testing.assert_allclose(jh(x, 3), h(x, 3), rtol=1e-12)


def test_user_callbacks_stay_on_the_calling_thread(tiered_env):
    """pysource runs on a helper thread that may be abandoned: a program that
    calls user Python code (pb.pure_callback) is compiled in this process."""
    threads = []

    def user_fn(x):
        threads.append(threading.current_thread())
        return np.cos(x) * x

    def h(x):
        y = pb.pure_callback(user_fn, pb.ShapeDtypeStruct(x.shape, x.dtype), x)
        return np.sum(np.sin(y) * np.exp(y) * np.tanh(x))

    jh = pb.jit(h, backend="numba")
    x = _args(seed=9)[0]
    np.testing.assert_allclose(jh(x), h(x), rtol=1e-12)
    assert not isinstance(_runner(jh), numba_tiered.Tiered)
    assert threads and all(t is threading.main_thread() for t in threads)


def test_no_tiering_for_frozen_apps_or_a_refused_cache(tiered_env, monkeypatch, tmp_path):
    """A frozen application's executable would start the application again, and a
    refused cache directory means a private one the worker could not share."""
    monkeypatch.setattr(numba_tiered.sys, "frozen", True, raising=False)

    def h1(x):
        return np.sum(np.sin(x) * np.sinh(x))

    j1 = pb.jit(h1, backend="numba")
    x = _args(seed=11)[0]
    np.testing.assert_allclose(j1(x), h1(x), rtol=1e-12)
    assert not isinstance(_runner(j1), numba_tiered.Tiered)
    monkeypatch.delattr(numba_tiered.sys, "frozen")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)   # writable by others: refused (note [numba-cache-safety])
    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(shared))

    def h2(x):
        return np.sum(np.cos(x) * np.cosh(x))

    j2 = pb.jit(h2, backend="numba")
    with pytest.warns(Warning):
        np.testing.assert_allclose(j2(x), h2(x), rtol=1e-12)
    assert not isinstance(_runner(j2), numba_tiered.Tiered)


def test_wait_for_compiles_times_out():
    job = numba_tiered._Job(b"")   # registered, never sent to a worker
    try:
        t0 = time.monotonic()
        assert pb.wait_for_compiles(0.2) is False
        assert time.monotonic() - t0 < 10
    finally:
        job.finish(None, "test")
    assert pb.wait_for_compiles(5) is True
