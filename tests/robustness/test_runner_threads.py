"""Issue 8: the interp and pysource runners are safe from many threads. Before
the fix each run set the process-wide recursion limit and restored it after
(so one thread could lower it under another deep in recursion) and installed
its meter in a global (so concurrent `memory_report`s mixed their bytes).
Also: recursion deeper than the Python stack is a located
`RecursionDepthError`, not a RecursionError."""
import importlib.util
import sys
import threading

import numpy as np
import pytest

import pullback as pb
from pullback.backends import interp, pysource
from pullback.backends.checks import RecursionDepthError
from pullback.frontend import stage
from pullback.passes.vjp import vjp_prog

N_THREADS = 8

SRC = '''\
import numpy as np


def p(x, n):
    if n <= 0:
        return 1.0
    return x * p(x, n - 1)


def f(x, n):
    return np.sum(p(x, n))


def g(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.sin(x[i]) * s + x[i]
    return s
'''
CALL_LINE = 7


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    path = tmp_path_factory.mktemp("userprog") / "threads_prog.py"
    path.write_text(SRC)
    spec = importlib.util.spec_from_file_location("threads_prog", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _in_threads(work, n=N_THREADS):
    """Run work(k) in n threads started together; re-raise the first failure."""
    barrier = threading.Barrier(n)
    errors, results = [], [None] * n

    def run(k):
        try:
            barrier.wait()
            results[k] = work(k)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


@pytest.mark.parametrize("backend", ["interp", "pysource"])
def test_deep_and_shallow_calls_concurrently(m, backend):
    """Half the threads recurse deeper than the default limit allows, half make
    quick calls that (before the fix) restored the low limit under them."""
    limit = sys.getrecursionlimit()
    x = np.array([1.0, 1.0])
    deep = 2000 if backend == "interp" else 5000   # interp uses ~4 Python frames per call
    fn = pb.jit(m.f, backend=backend)
    fn(x, 3)  # staged and compiled once, before the threads

    def work(k):
        out = []
        for _ in range(4):
            n = deep if k % 2 == 0 else 2
            out.append((n, fn(x, n)))
        return out

    for res in _in_threads(work):
        assert all(v == pytest.approx(2.0) for _, v in res)
    assert sys.getrecursionlimit() == limit


@pytest.mark.parametrize("backend", ["interp", "pysource"])
def test_meters_are_per_thread(m, backend):
    """Each thread's meter sees exactly its own stores (the vjp of a loop saves one
    value per iteration), with other threads running at the same time."""
    runner = interp.run if backend == "interp" else pysource.run
    progs = {}
    for n in range(1, N_THREADS + 1):
        prog, name = vjp_prog(stage(m.g, (np.ones(n * 7),)).prog)
        progs[n] = prog.with_funcs(prog.funcs, entry=name)

    def peak(n):
        meter = interp.Meter()
        runner(progs[n], np.linspace(0.1, 1.0, n * 7), 1.0, meter=meter)
        return meter.peak

    alone = {n: peak(n) for n in progs}
    assert len(set(alone.values())) == len(alone)  # distinct sizes: a mix-up would show

    def work(k):
        return [peak(k + 1) for _ in range(20)]

    for k, peaks in enumerate(_in_threads(work)):
        assert peaks == [alone[k + 1]] * 20


def test_memory_report_from_threads(m):
    xs = [np.linspace(0.1, 1.0, 5 * (k + 1)) for k in range(N_THREADS)]
    alone = [pb.memory_report(m.g, x).peak_bytes for x in xs]
    got = _in_threads(lambda k: pb.memory_report(m.g, xs[k]).peak_bytes)
    assert got == alone


@pytest.mark.parametrize("backend", ["interp", "pysource"])
def test_recursion_too_deep_is_located(m, backend):
    limit = sys.getrecursionlimit()
    with pytest.raises(RecursionDepthError) as err:
        pb.jit(m.f, backend=backend)(np.array([1.0]), 100000)
    msg = str(err.value)
    assert f"threads_prog.py:{CALL_LINE}:" in msg and "recursion" in msg and "hint" in msg, msg
    assert sys.getrecursionlimit() == limit
    # and from threads, next to calls that succeed
    fn = pb.jit(m.f, backend=backend)

    def work(k):
        if k % 2:
            return fn(np.array([1.0]), 50)
        with pytest.raises(RecursionDepthError):
            fn(np.array([1.0]), 100000)
        return 1.0

    assert _in_threads(work, 4) == [1.0] * 4
