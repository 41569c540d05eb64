"""SciPy's BLAS without the `scipy.linalg` package (note [warm-start], "SciPy's BLAS
alone"; `numba_blas.preload_cython_blas`).

A module that calls BLAS (or LAPACK) loads `scipy.linalg.cython_blas` (and
`cython_lapack`) by itself, so compiling, loading from the cache and calling it
never run `scipy.linalg`'s package; a later `import scipy.linalg` still leaves
the submodules as its attributes, and a user who imported `scipy.linalg` first
is unaffected. Each case is a new process (the state is per process)."""
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("numba")
pytest.importorskip("scipy")

_SRC = str(pathlib.Path(__file__).resolve().parents[2] / "src")

_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    if sys.argv[1] == "user-first":
        import scipy.linalg  # noqa: F401 - the user imported it before pullback compiled
    import pullback as pb

    A = np.arange(15.0).reshape(3, 5) / 20
    x = np.linspace(0.1, 0.9, 5)
    M = np.eye(3) * 2 + A[:, :3] / 4
    out = {}
    g = pb.grad(lambda A, x: np.sum(np.tanh(A @ x)), argnums=1)(A, x)
    out["matmul"] = np.asarray(g).tolist()
    if sys.argv[1] == "lapack":
        out["solve"] = np.asarray(pb.jit(lambda M, b: np.linalg.solve(M, b))(M, x[:3])).tolist()
    out["linalg_imported"] = "scipy.linalg" in sys.modules
    out["blas_loaded"] = "scipy.linalg.cython_blas" in sys.modules
    out["lapack_loaded"] = "scipy.linalg.cython_lapack" in sys.modules
    import scipy.linalg
    import scipy.linalg.cython_blas
    out["bound"] = scipy.linalg.cython_blas is sys.modules["scipy.linalg.cython_blas"]
    out["lapack_bound"] = ("scipy.linalg.cython_lapack" not in sys.modules
                           or scipy.linalg.cython_lapack is sys.modules["scipy.linalg.cython_lapack"])
    out["det"] = float(scipy.linalg.det(M))
    print(json.dumps(out))
""")


def _run(tmp_path, mode):
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    env = dict(os.environ, PULLBACK_CACHE_DIR=str(tmp_path / "cache"), PULLBACK_BACKEND="numba",
               PULLBACK_TIERED="0", PYTHONPATH=_SRC, PYTHONDONTWRITEBYTECODE="1")
    r = subprocess.run([sys.executable, str(script), mode], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _expected():
    A = np.arange(15.0).reshape(3, 5) / 20
    x = np.linspace(0.1, 0.9, 5)
    return A.T @ (1 - np.tanh(A @ x) ** 2)


def _check_common(out):
    np.testing.assert_allclose(out["matmul"], _expected(), rtol=1e-12)
    assert out["bound"] and out["lapack_bound"]
    M = np.eye(3) * 2 + (np.arange(15.0).reshape(3, 5) / 20)[:, :3] / 4
    assert out["det"] == pytest.approx(np.linalg.det(M))


def test_blas_without_scipy_linalg_cold_and_warm(tmp_path):
    for _ in range(2):   # the first process compiles; the second loads numba's cache
        out = _run(tmp_path, "blas")
        _check_common(out)
        assert out["blas_loaded"] and not out["linalg_imported"]
        assert not out["lapack_loaded"]


def test_lapack_without_scipy_linalg(tmp_path):
    out = _run(tmp_path, "lapack")
    _check_common(out)
    M = np.eye(3) * 2 + (np.arange(15.0).reshape(3, 5) / 20)[:, :3] / 4
    np.testing.assert_allclose(out["solve"], np.linalg.solve(M, np.linspace(0.1, 0.9, 5)[:3]), rtol=1e-12)
    assert out["blas_loaded"] and out["lapack_loaded"] and not out["linalg_imported"]


def test_a_user_who_imported_scipy_linalg_first(tmp_path):
    out = _run(tmp_path, "user-first")
    _check_common(out)
    assert out["linalg_imported"]
