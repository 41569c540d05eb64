"""Multi-core maps on the numba backend (issue 12 §3, note [numba-parallel]).

What is checked: which maps run on numba's threads (outermost only, not in
functions called from a map, by size under parallel=None, never under
parallel=False or PULLBACK_PARALLEL=0); that parallel code compiles without
numba's "not parallel" warnings and gives the interpreter's results, the same
bits on every run and on 1 and 2 threads; that an index error inside a
parallel map is the located error; and that calls from many threads at once
are correct (numba's workqueue layer would abort the process without the lock).

numba compiles cost seconds each: the compiled tests share two functions
(`_compiled`), and the subprocess tests are `slow`.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import warnings

import numpy as np
import pytest

numba = pytest.importorskip("numba")

import pullback as pb
from pullback.backends import numba_backend, numba_parallel
from pullback.errors import PullbackError

HERE = os.path.basename(__file__)

_rng = np.random.default_rng(12)
W = _rng.standard_normal((30, 5))
XS = _rng.standard_normal((40, 5))
IDX = _rng.integers(0, 30, 40)
C = 0.7


def inner(x, w):
    """Has a map of its own, and is called from inside a map: stays sequential."""
    return np.sum(pb.map(lambda r: np.sum(r * x), w))


def small(xs, w, c, idx):
    """One map reading a free array at a traced index and a free scalar: compiled in the fast tests."""
    ys = pb.map(lambda x, j: c * np.sum(np.tanh(x * w[j])), xs, idx)  # MAPLINE
    return np.sum(ys * ys)


def model(xs, w, c, idx):
    # sparse reads of a free array (w[j]), a free scalar (c), a map in a map
    ys = pb.map(lambda x, j: c * np.sum(np.tanh(x * w[j])) + np.sum(pb.map(lambda v: v * c, x)), xs, idx)
    zs = pb.map(lambda x: inner(x, w[:3]), xs)
    s = 0.0
    for k in range(2):  # a map in a loop
        s = s + np.sum(pb.map(lambda x: np.sin(x[k] * c), xs))  # noqa: B023 - staged in this iteration
    return np.sum(ys * ys) + np.sum(zs) + s


ARGS = (XS, W, C, IDX)
with open(__file__) as _f:
    MAPLINE = next(i for i, t in enumerate(_f.read().splitlines(), 1) if t.endswith("# MAPLINE"))


def _prog(f, *args):
    return pb.jit(f).staged(*args).prog


def _funcs(src):
    """{function name: (decorator line, text)} of a generated module."""
    out = {}
    lines = src.splitlines()
    for k, t in enumerate(lines):
        if t.startswith("def "):
            name = t[4:].split("(")[0]
            end = next((j for j in range(k + 1, len(lines)) if lines[j].startswith(("def ", "@"))), len(lines))
            out[name] = (lines[k - 1], "\n".join(lines[k:end]))
    return out


# -- which maps run in parallel (emission only: no numba compiles) --------------------------------

def test_only_outermost_maps_of_uncalled_functions_are_parallel():
    src = numba_backend.emit_prog(_prog(model, *ARGS), parallel=True)
    fs = _funcs(src)
    # three outermost maps (ys, zs, and the one in the loop), each a chunk function launched on
    # numba's threads by the caller itself: no function is compiled with numba's parallel option
    assert not any("parallel=" in deco for deco, _ in fs.values()) and "prange" not in src
    assert fs["model"][1].count("(parallel)") == 3 and fs["model"][1].count("_pb_parallel_for(_pb_map") == 3
    assert {n for n in fs if n.startswith("_pb_map")} == {f"_pb_map{k}" for k in range(3)}
    # the map inside ys stays a loop in its chunk function, and so does inner's (called from a map)
    assert "# map over x\n" in fs["_pb_map0"][1] + "\n" and "for " in fs["_pb_map0"][1]
    assert "_pb_parallel_for(" not in fs["inner"][1] and "# map over w" in fs["inner"][1]
    assert "from pullback.backends.numba_parfor import _pb_parallel_for" in src


def test_parallel_false_and_the_environment_turn_it_off(monkeypatch):
    prog = _prog(model, *ARGS)
    assert "_pb_parallel_for" not in numba_backend.emit_prog(prog, parallel=False)
    monkeypatch.setenv("PULLBACK_PARALLEL", "0")
    src = numba_backend.emit_prog(prog, parallel=True)
    assert "_pb_parallel_for" not in src and "parallel=" not in src
    monkeypatch.setenv("PULLBACK_PARALLEL", "1")
    assert "_pb_parallel_for(" in numba_backend.emit_prog(prog, parallel=True)


def test_bad_environment_value(monkeypatch):
    monkeypatch.setenv("PULLBACK_PARALLEL", "sometimes")
    with pytest.raises(PullbackError, match="PULLBACK_PARALLEL='sometimes' is not understood"):
        numba_backend.emit_prog(_prog(model, *ARGS))


def _big(xs):
    return pb.map(lambda x: np.sum(np.sin(x) * x), xs)


def _sparse(xs, w):
    return np.sum(pb.map(lambda x: w[3, 2] * np.sum(x), xs))


def test_automatic_setting_by_estimated_work(monkeypatch):
    from pullback.passes.vjp import vjp_prog

    monkeypatch.setattr(numba_parallel, "usable_cpus", lambda: 2)   # whatever this process may use

    big = numba_backend.emit_prog(_prog(_big, np.ones((1000, 400))), parallel=None)
    small = numba_backend.emit_prog(_prog(_big, np.ones((10, 40))), parallel=None)
    assert "_pb_parallel_for(" in big and "_pb_parallel_for" not in small
    assert "_pb_parallel_for(" in numba_backend.emit_prog(_prog(_big, np.ones((10, 40))), parallel=True)
    # the threshold depends on the threading layer (tbb starts parallel regions fastest)
    w = numba_parallel.work(_prog(_big, np.ones((1, 400))).funcs[0].body, None)
    assert 1000 * w >= numba_parallel.min_work() > 10 * w
    # reverse mode: the adjoint of a large free array read at one element per iteration
    # needs per-chunk partials as large as the array: not worth it for a cheap map
    def adjoint_map(w):
        vp, _ = vjp_prog(_prog(_sparse, np.ones((8000, 50)), w))
        (line,) = [t for t in numba_backend.emit_prog(vp, parallel=None).splitlines() if "accumulating" in t]
        return line

    assert "(parallel)" not in adjoint_map(np.ones((20000, 50)))
    assert "(parallel)" in adjoint_map(np.ones((20, 5)))


def test_one_cpu_runs_automatic_maps_sequentially(monkeypatch):
    """A process that may use one CPU (affinity, cgroup quota) gains nothing from threads."""
    monkeypatch.setattr(numba_parallel, "usable_cpus", lambda: 1)
    prog = _prog(_big, np.ones((1000, 400)))
    assert "_pb_parallel_for" not in numba_backend.emit_prog(prog, parallel=None)
    assert "_pb_parallel_for(" in numba_backend.emit_prog(prog, parallel=True)   # as asked


def _halving(x, k):
    if k <= 0:
        return x
    return _halving(x * 0.5, k - 1) + x


def _calls_recursive(xs, n):
    return pb.map(lambda x: _halving(x, n), xs)


def _calls_back(xs):
    return pb.map(lambda x: pb.pure_callback(np.cos, pb.ShapeDtypeStruct((), np.float64), x) * x, xs)


def test_maps_unsafe_on_worker_threads_stay_sequential():
    """A recursive callee's stack checks are the calling thread's; a callback runs Python."""
    for prog in (_prog(_calls_recursive, np.ones(8), 3), _prog(_calls_back, np.ones(8))):
        src = numba_backend.emit_prog(prog, parallel=True)
        assert "# map over" in src and "_pb_parallel_for" not in src


def test_bad_parallel_value_is_a_located_error():
    with pytest.raises(PullbackError) as err:
        pb.grad(model, parallel="yes")
    assert "parallel must be True, False or None, got 'yes'" in str(err.value)
    assert HERE in str(err.value)
    with pytest.raises(PullbackError, match="parallel must be True, False or None, got 1") as err:
        pb.jit(model, parallel=1)
    assert HERE in str(err.value)
    with pytest.raises(PullbackError, match="vmap: parallel must be True, False or None") as err:
        pb.vmap(model, parallel="no")
    assert HERE in str(err.value)


def test_the_keyword_reaches_every_transformation():
    def f(x):
        return np.sum(x)

    for t in (pb.jit(f, parallel=True), pb.grad(f, parallel=True), pb.value_and_grad(f, parallel=True),
              pb.jacobian(f, parallel=True), pb.jacrev(f, parallel=True), pb.jacfwd(f, parallel=True),
              pb.hessian(f, parallel=True), pb.vmap(f, parallel=True)):
        assert getattr(t, "_jit", t).parallel is True
    assert pb.grad(f, parallel=False) is not pb.grad(f, parallel=True)  # one cached object per setting
    assert pb.jvp(f, (np.ones(3),), (np.ones(3),), parallel=True)[1] == 3.0
    assert pb.vjp(f, np.ones(3), parallel=False)[1](1.0)[0].tolist() == [1.0, 1.0, 1.0]


def test_other_backends_accept_and_ignore_it():
    want = pb.grad(model, argnums=(0, 1, 2), backend="interp")(*ARGS)
    got = pb.grad(model, argnums=(0, 1, 2), backend="pysource", parallel=True)(*ARGS)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


# -- compiled -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def _compiled(tmp_path_factory):
    """pb.value_and_grad of `small` with parallel=True, compiled once in a fresh
    cache (so it really compiles: about 10 s), its first result, and the
    warnings numba gave."""
    cache = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PULLBACK_CACHE_DIR", str(cache))
        g = pb.value_and_grad(small, argnums=(0, 1, 2), backend="numba", parallel=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            first = g(*ARGS)
        g.cache_dir = str(cache)   # its machine code, for the subprocess tests
        yield g, first, [w for w in caught if issubclass(w.category, numba.NumbaWarning)]


def _same(a, b):
    """Bit for bit."""
    (va, ga), (vb, gb) = a, b
    return va == vb and all(np.array_equal(x, y) for x, y in zip(ga, gb))


def test_compiles_in_parallel_without_numba_warnings(_compiled):
    g, _, caught = _compiled
    assert not caught, [str(w.message)[:200] for w in caught]  # e.g. numba performance warnings
    runner = g._jit.staged(*ARGS).runner
    assert runner.parallel
    fs = _funcs(runner.source)
    # the primal map and its adjoint (accumulating w's and c's adjoints) both run in parallel,
    # chunk functions launched by their callers; numba compiles nothing with its parallel option
    assert sorted(n for n in fs if n.startswith("_pb_map")) == ["_pb_map0", "_pb_map1"]
    assert not any("parallel=" in deco for deco, _ in fs.values())
    assert runner.source.count("_pb_parallel_for(_pb_map") == 2
    assert runner.source.count("(parallel), accumulating") == 1
    assert numba_parallel.threading_layer() == numba.threading_layer()


def test_results_match_the_interpreter(_compiled):
    _, (value, grads), _ = _compiled
    want = pb.grad(small, argnums=(0, 1, 2), backend="interp")(*ARGS)
    for a, b in zip(grads, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(value, small(*ARGS), rtol=1e-12)   # the eager (plain NumPy) function


def test_deterministic_and_the_same_on_one_thread(_compiled):
    g, first, _ = _compiled
    for _ in range(3):
        assert _same(g(*ARGS), first)
    old = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        one = g(*ARGS)
    finally:
        numba.set_num_threads(old)
    assert _same(one, first)  # the chunks do not depend on the threads that run them


def test_index_error_in_a_parallel_map_is_located(_compiled):
    g, first, _ = _compiled
    bad = IDX.copy()
    bad[17] = 99
    with pytest.raises(IndexError) as err:
        g(XS, W, C, bad)
    assert isinstance(err.value, PullbackError)
    assert f"{HERE}:{MAPLINE}" in str(err.value) and "index 99 is out of bounds" in str(err.value)
    assert _same(g(*ARGS), first)  # and it still works


N_THREADS = 12


def test_many_threads_call_parallel_code_at_once(_compiled):
    """Issue 8's many-thread test on a program with parallel maps: every result checked."""
    g, first, _ = _compiled
    barrier = threading.Barrier(N_THREADS)
    results, errors = [None] * N_THREADS, []

    def work(i):
        try:
            barrier.wait()
            results[i] = [g(*ARGS) for _ in range(5)]
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    ts = [threading.Thread(target=work, args=(i,)) for i in range(N_THREADS)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in ts), "a thread hung"
    assert not errors, errors[:3]
    assert all(_same(r, first) for rs in results for r in rs)


_WORKQUEUE = """
import sys, threading, numpy as np
sys.path.insert(0, {here!r})
import pullback as pb
from pullback.backends import numba_parallel
from test_parallel import small, ARGS
g = pb.value_and_grad(small, argnums=(0, 1, 2), backend="numba", parallel=True)
g(*ARGS)   # numba's disk cache: no compile
assert numba_parallel.threading_layer() == "workqueue" and numba_parallel._LAYER["serialise"]
out = []
def work():
    for _ in range(5):
        v, gs = g(*ARGS)
        out.append(np.concatenate([[v]] + [np.ravel(a) for a in gs]))
ts = [threading.Thread(target=work) for _ in range(8)]
for t in ts:
    t.start()
for t in ts:
    t.join()
assert len(out) == 40 and all(np.array_equal(o, out[0]) for o in out)
np.save(sys.argv[1], out[0])
"""


def test_workqueue_layer_calls_from_many_threads_are_serialised(_compiled, tmp_path):
    """The layer chosen without tbb (NUMBA_THREADING_LAYER picks it here): numba's
    workqueue aborts the process when two threads run parallel code at once."""
    g, (value, grads), _ = _compiled
    script = tmp_path / "wq.py"
    script.write_text(textwrap.dedent(_WORKQUEUE.format(here=os.path.dirname(__file__))))
    env = dict(os.environ, NUMBA_THREADING_LAYER="workqueue", PULLBACK_CACHE_DIR=g.cache_dir)
    out = tmp_path / "r.npy"
    p = subprocess.run([sys.executable, str(script), str(out)], env=env, capture_output=True, text=True, timeout=300,
                       check=False)
    assert p.returncode == 0, (p.returncode, p.stderr[-2000:])
    assert np.array_equal(np.load(out), np.concatenate([[value]] + [np.ravel(a) for a in grads]))


_ONE_CPU = """
import os, sys, threading
os.sched_setaffinity(0, {{min(os.sched_getaffinity(0))}})   # as `taskset -c N`, before numba loads
sys.path.insert(0, {here!r})
import numpy as np
import pullback as pb
from pullback.backends import numba_parallel
from test_parallel import small, ARGS
g = pb.value_and_grad(small, argnums=(0, 1, 2), backend="numba", parallel=True)
out = []
t = threading.Thread(target=lambda: out.append(g(*ARGS)[0]))   # the first parallel call, off the main thread
t.start()
t.join()
print(numba_parallel.threading_layer(), out[0])
"""


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs os.sched_setaffinity")
def test_one_cpu_first_call_from_a_thread_exits(_compiled, tmp_path):
    """On one CPU the layer is workqueue: oneTBB 2022.3+ hangs at exit when the first
    parallel call of a one-CPU process ran on a thread (note [numba-parallel], "One CPU")."""
    g, (value, _), _ = _compiled
    script = tmp_path / "one_cpu.py"
    script.write_text(textwrap.dedent(_ONE_CPU.format(here=os.path.dirname(__file__))))
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_THREADING_LAYER"}
    env["PULLBACK_CACHE_DIR"] = g.cache_dir
    # the chunk count of the generated code follows numba's thread count, which follows the
    # affinity: keep this process's, so that the module is the one in the cache (no compile)
    env["NUMBA_NUM_THREADS"] = str(numba.config.NUMBA_NUM_THREADS)
    try:
        p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120,
                           check=False)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the one-CPU process did not exit: {(e.stdout or b'')[-500:]!r}")
    assert p.returncode == 0, (p.returncode, p.stderr[-2000:])
    layer, v = p.stdout.split()
    assert layer == "workqueue" and float(v) == value


def test_usable_cpus_is_the_affinity_capped_by_a_cgroup_quota(monkeypatch):
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("needs os.sched_getaffinity")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(numba_parallel, "_cgroup_quota", lambda: None)
    assert numba_parallel.usable_cpus() == 4
    for quota, want in ((2.5, 2), (1.5, 1), (0.5, 1), (16.0, 4)):
        monkeypatch.setattr(numba_parallel, "_cgroup_quota", lambda q=quota: q)
        assert numba_parallel.usable_cpus() == want


def test_cgroup_quota_files_are_read(monkeypatch):
    import builtins

    files = {}
    real_open = builtins.open

    def fake_open(path, *a, **k):
        if str(path).startswith("/sys/fs/cgroup/"):
            if path not in files:
                raise FileNotFoundError(path)
            import io
            return io.StringIO(files[path])
        return real_open(path, *a, **k)

    monkeypatch.setattr(builtins, "open", fake_open)
    assert numba_parallel._cgroup_quota() is None
    files["/sys/fs/cgroup/cpu.max"] = "max 100000\n"
    assert numba_parallel._cgroup_quota() is None
    files["/sys/fs/cgroup/cpu.max"] = "150000 100000\n"
    assert numba_parallel._cgroup_quota() == 1.5
    del files["/sys/fs/cgroup/cpu.max"]
    files["/sys/fs/cgroup/cpu/cpu.cfs_quota_us"] = "-1\n"
    files["/sys/fs/cgroup/cpu/cpu.cfs_period_us"] = "100000\n"
    assert numba_parallel._cgroup_quota() is None
    files["/sys/fs/cgroup/cpu/cpu.cfs_quota_us"] = "100000\n"
    assert numba_parallel._cgroup_quota() == 1.0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_runs_parallel_code(_compiled, tmp_path):
    """multiprocessing's default start method on Linux: GNU OpenMP would kill the child."""
    g, first, _ = _compiled
    if numba_parallel.threading_layer() == "omp":
        pytest.skip("numba's threads were started on the omp layer before pullback's first parallel compile")
    out = tmp_path / "child.npy"
    pid = os.fork()
    if pid == 0:  # the child: no pytest machinery, just the call
        code = 1
        try:
            value, grads = g(*ARGS)
            np.save(out, np.concatenate([[value]] + [np.ravel(a) for a in grads]))
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    value, grads = first
    assert np.array_equal(np.load(out), np.concatenate([[value]] + [np.ravel(a) for a in grads]))


def test_parallel_false_and_the_environment_compile_sequential_code(monkeypatch, tmp_path):
    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PULLBACK_VECTORIZE", "0")   # the map stays a loop (else it is whole-array code)

    def tiny(xs):
        return pb.map(lambda x: x * 2.0 + 1.0, xs)

    x = np.arange(6.0).reshape(3, 2)
    j = pb.jit(tiny, backend="numba", parallel=False)
    np.testing.assert_array_equal(j(x), x * 2.0 + 1.0)
    src = j.staged(x).runner.source
    assert "_pb_parallel_for" not in src and "# map over" in src
    monkeypatch.setenv("PULLBACK_PARALLEL", "0")
    j = pb.jit(tiny, backend="numba", parallel=True)
    np.testing.assert_array_equal(j(x), x * 2.0 + 1.0)
    assert j.staged(x).runner.source == src   # the same module: compiled once
    assert not j.staged(x).runner.parallel


_SUB = """
import sys, numpy as np, numba
sys.path.insert(0, {here!r})
import pullback as pb
from test_parallel import model, ARGS
g = pb.grad(model, argnums=(0, 1, 2), backend="numba", parallel=True)
r = g(*ARGS)
assert "_pb_parallel_for(" in g._jit.staged(*ARGS).runner.source
np.save(sys.argv[1], np.concatenate([np.ravel(a) for a in r]))
print(numba.config.NUMBA_NUM_THREADS, numba.threading_layer())
"""


@pytest.mark.slow  # a fresh process and numba compiles of `model` for each thread count (about 40 s each)
@pytest.mark.parametrize("threads", [1, 2])
def test_fresh_process_with_numba_num_threads(tmp_path, threads):
    script = tmp_path / "sub.py"
    script.write_text(textwrap.dedent(_SUB.format(here=os.path.dirname(__file__))))
    env = dict(os.environ, NUMBA_NUM_THREADS=str(threads), PULLBACK_CACHE_DIR=str(tmp_path / "cache"))
    out = tmp_path / "r.npy"
    p = subprocess.run([sys.executable, str(script), str(out)], env=env, capture_output=True, text=True, timeout=300,
                       check=False)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.split()[0] == str(threads)
    want = pb.grad(model, argnums=(0, 1, 2), backend="interp")(*ARGS)
    np.testing.assert_allclose(np.load(out), np.concatenate([np.ravel(a) for a in want]), rtol=1e-12, atol=1e-12)


def _nested_product(A, BT):
    C = pb.map(lambda a: pb.map(lambda b: pb.reduce(pb.add, 0.0, a * b), BT), A)
    return 0.5 * np.sum(C * C)


def test_automatic_setting_prefers_blas_to_cores_for_contractions():
    """parallel=None: a map that vectorises into a matmul is vectorised; parallel=True
    keeps it a parallel map (as asked); an elementwise map stays parallel either way."""
    from pullback.backends.numba_backend import _vectorize
    from pullback.ir.core import Map, Prim
    from pullback.ir.traverse import iter_lets
    from pullback.passes.inline import inline_small

    def kinds(prog):
        lets = [s for f in prog.funcs for s in iter_lets(f.body)]
        return ({s.exp.op for s in lets if isinstance(s.exp, Prim)}, any(isinstance(s.exp, Map) for s in lets))

    A = np.linspace(0.0, 1.0, 64 * 64).reshape(64, 64)
    prog = inline_small(pb.grad(_nested_product, argnums=(0, 1))._jit.staged(A, A.T.copy()).prog)
    ops, maps = kinds(_vectorize(prog, None, False))
    assert "matmul" in ops and not maps
    ops, maps = kinds(_vectorize(prog, True, False))
    assert maps
    x = np.linspace(0.0, 1.0, 100000 * 8).reshape(100000, 8)   # large for any threading layer
    prog = inline_small(pb.grad(lambda x: np.sum(pb.map(lambda r: np.sin(r) * r, x)))._jit.staged(x).prog)
    assert kinds(_vectorize(prog, None, False))[1]
