"""Issue 8: first calls on the numba backend from many threads at once. Before
the fix, four threads making the first call of one `pb.grad(f)` got 20 correct
results of 80; the others raised AttributeError from a half-executed module."""
import threading

import numpy as np
import pytest

pytest.importorskip("numba")

import pullback as pb  # noqa: E402
from pullback.backends import numba_backend  # noqa: E402

N_THREADS = 12
REPEAT = 5


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(tmp_path / "cache"))


def _family(c):
    """Four functions whose gradients are known in closed form; `c` makes each
    family a distinct program (a test's first calls are really first)."""
    def t_sin(x):
        return np.sum(np.sin(x) * x) * c

    def t_loop(x):
        s = 0.0
        for i in range(x.shape[0]):
            s = s + x[i] * x[i] * (i + c)
        return s

    def t_exp(x):
        return np.sum(np.exp(c * x)) + x[0] * x[1]

    def t_tanh(x):
        y = np.tanh(x * c)
        return np.sum(y * y)

    th = np.tanh(c * X)
    return {
        t_sin: c * (np.sin(X) + X * np.cos(X)),
        t_loop: 2.0 * X * (np.arange(4.0) + c),
        t_exp: c * np.exp(c * X) + np.array([X[1], X[0], 0.0, 0.0]),
        t_tanh: 2.0 * c * th * (1.0 - th ** 2),
    }


X = np.array([0.3, -0.4, 0.8, 1.1])


def _hammer(jobs):
    """Run `jobs` (callables returning (got, want)) from N_THREADS threads that start
    together; every result is compared."""
    barrier = threading.Barrier(len(jobs))
    results, errors = [None] * len(jobs), []

    def work(i):
        try:
            barrier.wait()
            results[i] = [jobs[i]() for _ in range(REPEAT)]
        except BaseException as e:  # noqa: BLE001 - collected and reported below
            errors.append(f"{type(e).__name__}: {e}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not errors, errors
    n = 0
    for rs in results:
        for got, want in rs:
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
            n += 1
    assert n == len(jobs) * REPEAT


def test_numba_backend_first_compiles_from_many_threads():
    """The backend alone (programs staged beforehand): `compiled` and first calls
    of the same and of different programs at once."""
    from pullback.passes.vjp import vjp_prog

    progs = []
    for f, g in _family(1.25).items():
        vp, name = vjp_prog(pb.jit(f).staged(X).prog)
        progs.append((vp, name, g))
    jobs = []
    for i in range(N_THREADS):
        vp, name, g = progs[i % len(progs)]
        jobs.append(lambda vp=vp, name=name, g=g: (numba_backend.compiled(vp, name)(X, 1.0)[-1], g))
    _hammer(jobs)


def test_first_calls_of_grad_from_many_threads():
    """End to end: fresh `pb.grad` objects of several functions, first called at once."""
    fns = [(pb.grad(f, backend="numba"), g) for f, g in _family(0.75).items()]
    jobs = [lambda fg=fns[i % len(fns)]: (fg[0](X), fg[1]) for i in range(N_THREADS)]
    _hammer(jobs)
