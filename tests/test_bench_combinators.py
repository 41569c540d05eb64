"""The combinator benchmark (benchmarks/combinators/): its programs compute what their
hand-written NumPy references compute (the runner's agreement checks rely on them), its
target lines say "MISSED" when a number misses, and (slow) its --quick mode runs end to
end and writes results.md. No timings are asserted."""
import importlib.util
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import pullback as pb

ROOT = pathlib.Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks" / "combinators"


def _load(name, path):
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


P = _load("programs", BENCH / "programs.py")
R = _load("bench_combinators_run", BENCH / "run.py")
needs_hist = pytest.mark.skipif(not P.HAVE_HIST, reason="pb.hist is not in this checkout")


def close(a, b):
    for x, y in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-10, atol=1e-12)


def test_matmul_matches_numpy_adjoint():
    A, BT = P.mm_input(5, np.random.default_rng(1))
    close(pb.jit(P.mm_loss, backend="interp")(A, BT), P.mm_numpy_primal(A, BT))
    close(pb.grad(P.mm_loss, argnums=(0, 1), backend="interp")(A, BT), P.mm_numpy_grad(A, BT))


@needs_hist
def test_kmeans_matches_closed_form():
    a = P.kmeans_input((40, 3, 2), np.random.default_rng(2))
    close(pb.jit(P.kmeans_cost, backend="interp")(*a), P.kmeans_numpy_primal(*a))
    close(pb.grad(P.kmeans_cost, backend="interp")(*a), P.kmeans_numpy_grad(*a))


@needs_hist
def test_sparse_histogram_matches_closed_form():
    a = P.sparse_input((60, 50, 4), np.random.default_rng(3))
    close(pb.jit(P.sparse_loss, backend="interp")(*a), P.sparse_numpy_primal(*a))
    close(pb.grad(P.sparse_loss, backend="interp")(*a), P.sparse_numpy_grad(*a))


def test_per_example_gradients_are_each_examples_gradient():
    a = P.mlp_input((3, 4, 5), np.random.default_rng(4))
    g = pb.jit(P.per_example_grads, backend="interp")(*a)
    losses = pb.jit(P.per_example_losses, backend="interp")(*a)
    for i in range(3):
        one = pb.grad(P.mlp_loss, argnums=(0, 1, 2), backend="interp")(*a[:3], a[3][i], a[4][i])
        close(tuple(x[i] for x in g), one)
        z = a[2] @ np.tanh(a[0] @ a[3][i] + a[1])
        close(losses[i], np.log1p(np.exp(-a[4][i] * z)))


def test_targets_say_missed_when_missed():
    pbr = {"primal": 1.0, "deriv": 5.0}
    one = {("mm", "numba"): {256: {"pullback": pbr, "numpy": {"primal": 0.1, "deriv": 1.0}, "agree": {}}},
           ("vmap", "numba"): {(8, 2, 3): {"pullback": {"primal": 1.0, "deriv": 2.0}, "jax": {"primal": 1.0, "deriv": 1.0},
                                "agree": {}}}}
    one[("sparse", "numba")] = {(10, 100, 2): {"pullback": {"primal": 1.0, "deriv": 2.0}, "agree": {}},
                                (10, 10000, 2): {"pullback": {"primal": 1.1, "deriv": 4.0}, "agree": {}}}
    scal = {"parts": {"mm": {"size": 256, "1": {"primal": 2.0, "deriv": 2.0}, "2": {"primal": 1.0, "deriv": 1.5},
                             "agree": [0.0, 0.0]}}}
    lines = R.targets(one, scal, None)
    text = "\n".join(lines)
    assert "mm [numba] (256): derivative/primal 5.00 <= 4: MISSED" in text
    assert "pullback adjoint / NumPy adjoint 5.00 <= 3: MISSED" in text
    assert "vmap [numba] (8, 2, 3): derivative/primal 2.00 <= 4: met" in text
    assert "pullback / JAX per-example gradients 2.00 <= 1: MISSED" in text
    assert "the gradient's time grows 2.00x" in text and "does not grow (<= 1.5x): MISSED" in text
    assert "derivative/primal stays flat (2.00 -> 3.64, <= 1.25x): MISSED" in text
    assert "speedup of the parallel primal 2.000 >= 1.7: met" in text
    assert "speedup of the parallel derivative 1.333 >= 1.7: MISSED" in text


@pytest.mark.slow
def test_quick_mode_writes_results(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), PULLBACK_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, str(BENCH / "run.py"), "--quick", "--out-dir", str(tmp_path)],
                       capture_output=True, text=True, env=env, timeout=300, check=False)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    text = (tmp_path / "results.md").read_text()
    for head in ("## 1. Matrix product", "## 4. Per-example gradients", "## 1 -> 2 cores", "## Targets"):
        assert head in text
    assert "✗" not in text and "error" not in text.split("## Targets")[0]
