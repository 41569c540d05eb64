"""First calls from many threads at once: staging, the frontend's caches and
runner creation are serialised by `frontend.STAGING_LOCK`; warm calls take no
lock (note [staging-threads]). Every result is checked, not just "no exception"."""
import importlib.util
import itertools
import sys
import textwrap
import threading

import numpy as np
import pytest

import pullback as pb

_ids = itertools.count()

MODULE = """\
import numpy as np

def helper(x, k):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0:
            s += np.sin(x[i]) * k
        else:
            s -= x[i] * x[i]
    return s

def f0(x):
    return helper(x, 1.0) + np.sum(x * x)

def f1(x):
    return helper(x, 2.0) * 3.0

def f2(x):
    y = x
    for _ in range(3):
        y = np.tanh(y) + 0.5 * y
    return np.sum(y)

def f3(x):
    return np.sum(np.exp(-x * x)) + helper(x, 0.5)
"""


def fresh_module(tmp_path):
    """A newly imported copy of MODULE: new code objects, so every cache is cold."""
    name = f"pb_threads_mod_{next(_ids)}"
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(MODULE))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(autouse=True)
def _switch_often():
    """Make the interpreter switch threads very often, so races show up."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def run_threads(calls, nthreads):
    """Run calls[i % len(calls)] in `nthreads` threads released together; return results and errors."""
    barrier = threading.Barrier(nthreads)
    results, errors = [None] * nthreads, []

    def work(i):
        try:
            barrier.wait()
            results[i] = calls[i % len(calls)]()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    ts = [threading.Thread(target=work, args=(i,)) for i in range(nthreads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in ts), "a thread hung"
    return results, errors


@pytest.mark.parametrize("backend", ["pysource", "interp"])
def test_first_calls_from_many_threads(tmp_path, backend):
    mod = fresh_module(tmp_path)
    ref = fresh_module(tmp_path)
    xs = [np.linspace(-1.0, 1.0, n) for n in (3, 4)]
    fns = [mod.f0, mod.f1, mod.f2, mod.f3]
    want = {(k, j): pb.grad(getattr(ref, f"f{k}"), backend="interp")(x) for k in range(4) for j, x in enumerate(xs)}
    calls = []
    for k, fn in enumerate(fns):
        for j, x in enumerate(xs):
            # pb.grad(fn) is looked up in each thread: the per-function cache is raced too
            calls.append(lambda fn=fn, x=x, k=k, j=j: ((k, j), pb.grad(fn, backend=backend)(x)))
            calls.append(lambda fn=fn, x=x, k=k, j=j: ((k, j), pb.jit(fn, backend=backend)(x)))
    results, errors = run_threads(calls, 2 * len(calls))
    assert not errors, errors[:3]
    for (key, got) in results:
        k, j = key
        if np.ndim(got) == 0:
            np.testing.assert_allclose(got, getattr(ref, f"f{k}")(xs[j]), rtol=1e-12)
        else:
            np.testing.assert_allclose(got, want[key], rtol=1e-12)


def test_same_transformed_function_from_many_threads(tmp_path):
    mod = fresh_module(tmp_path)
    g = pb.grad(mod.f0)
    x = np.array([0.3, -0.7, 1.1])
    want = pb.grad(fresh_module(tmp_path).f0, backend="interp")(x)
    results, errors = run_threads([lambda: g(x)], 12)
    assert not errors, errors[:3]
    for r in results:
        np.testing.assert_allclose(r, want, rtol=1e-12)
    assert pb.grad(mod.f0) is g  # one transformed object per function, even when raced


def test_warm_calls_do_not_take_the_staging_lock(tmp_path):
    from pullback.frontend import STAGING_LOCK

    mod = fresh_module(tmp_path)
    g = pb.grad(mod.f2)
    x = np.array([0.1, 0.2])
    first = g(x)
    out = []
    with STAGING_LOCK:  # held by this thread: a warm call in another thread must not wait for it
        t = threading.Thread(target=lambda: out.append(g(x)))
        t.start()
        t.join(timeout=60)
        assert not t.is_alive()
    np.testing.assert_allclose(out[0], first)


@pytest.mark.slow  # two numba compiles (about 8 s); tests/robustness/test_numba_threads.py covers numba's loading
def test_numba_first_calls_from_many_threads(tmp_path, monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(tmp_path / "cache"))
    mod = fresh_module(tmp_path)
    x = np.array([0.3, -0.7, 1.1])
    want = [pb.grad(mod.f2, backend="interp")(x), pb.grad(mod.f1, backend="interp")(x)]
    calls = [lambda: (0, pb.grad(mod.f2, backend="numba")(x)), lambda: (1, pb.grad(mod.f1, backend="numba")(x))]
    results, errors = run_threads(calls, 8)
    assert not errors, errors[:3]
    for k, got in results:
        np.testing.assert_allclose(got, want[k], rtol=1e-12)


def test_each_signature_is_staged_once_and_transforms_are_shared(tmp_path, monkeypatch):
    import pullback.frontend as frontend

    mod = fresh_module(tmp_path)
    staged = []
    real = frontend.stage

    def counting(fn, args, static_argnums=()):
        staged.append(getattr(fn, "__name__", fn))
        return real(fn, args, static_argnums)

    monkeypatch.setattr(frontend, "stage", counting)
    x = np.array([0.3, -0.7, 1.1])
    results, errors = run_threads([lambda: (pb.grad(mod.f1), pb.grad(mod.f1)(x))], 16)
    assert not errors, errors[:3]
    assert len({id(g) for g, _ in results}) == 1  # one transformed object per function
    assert staged == ["grad(f1)"]                 # staged once, not once per racing thread
    for _, r in results:
        np.testing.assert_allclose(r, results[0][1])
