"""The index-array check compiled once per process (`numba_checks._pb_check_idx`; note
[compile-time], "One index check per process"): a module calling it at more than
`FEW_SITES` sites imports the overload instead of printing its own helper, so a second
module in the process does not compile it again; it raises the located error, and a new
process loads such a module from numba's cache without compiling."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("numba")

import pullback as pb  # noqa: E402
from pullback.backends import numba_checks  # noqa: E402
from pullback.errors import PullbackError  # noqa: E402

pytestmark = pytest.mark.usefixtures("private_cache")   # conftest.py


def three(x, i, j, k):
    return np.sum(x[i]) + np.sum(x[j] * 2.0) + np.sum(x[k] * 3.0)


def three_more(x, i, j, k):
    return np.max(x[i]) - np.min(x[j]) + np.sum(x[k] * x[k])


ARGS = (np.linspace(-1.0, 1.0, 6), np.array([0, 5, -1]), np.array([1, 2]), np.array([3, 3, -6]))


def test_python_form_checks_like_the_compiled_one():
    numba_checks._pb_check_idx(np.array([[0, -3], [2, 1]]), 3, 7)
    with pytest.raises(IndexError) as e:
        numba_checks._pb_check_idx(np.array([0, 3, 9]), 3, 7)
    assert e.value.args == (7, 3)


def test_second_module_does_not_compile_it_again(numba_compiles):
    for f in (three, three_more):
        assert pb.jit(f, backend="numba")(*ARGS) == pytest.approx(f(*ARGS), rel=1e-15)
    compiled = list(numba_compiles)
    # the check at most once (none when an earlier test of this process compiled it), the
    # overload's implementation (a closure of `numba_checks`): every generated module of this
    # process links the same compiled code, where each module compiled a `_pb_check_idx` of its own
    checks = [(m, q) for m, q in compiled if m == numba_checks.__name__ or "_pb_check_idx" in q]
    assert [m for m, _ in checks] in ([numba_checks.__name__], []), compiled
    assert len([m for m, _ in compiled if m.startswith("pullback_numba")]) >= 2


def test_shared_check_raises_the_located_error():
    f = pb.jit(three, backend="numba")
    ok = np.array([0, 1])
    assert f(ARGS[0], ok, ok, ok) == three(ARGS[0], ok, ok, ok)
    with pytest.raises(PullbackError, match="test_shared_checks.py"):
        f(ARGS[0], ok, np.array([0, 6]), ok)


def test_new_process_loads_it_from_the_cache(tmp_path):
    script = textwrap.dedent("""
        import numpy as np, pullback as pb
        from numba.core import event
        n = [0]
        class L(event.Listener):
            def on_start(self, e): n[0] += 1
            def on_end(self, e): return None
        event.register("numba:compile", L())
        def three(x, i, j, k):
            return np.sum(x[i]) + np.sum(x[j] * 2.0) + np.sum(x[k] * 3.0)
        x = np.linspace(-1.0, 1.0, 6)
        print(pb.jit(three, backend="numba")(x, np.array([0, 5, -1]), np.array([1, 2]), np.array([3, 3, -6])), n[0])
    """)
    (tmp_path / "run.py").write_text(script)
    env = dict(os.environ, PULLBACK_CACHE_DIR=str(tmp_path / "cache"), PULLBACK_TIERED="0")
    runs = [subprocess.run([sys.executable, str(tmp_path / "run.py")], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=300) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0 and "Warning" not in r.stderr, r.stderr
    (v1, n1), (v2, n2) = (r.stdout.split() for r in runs)
    assert float(v1) == float(v2) == three(*ARGS)
    assert int(n1) > 0 and int(n2) == 0   # the second process compiles nothing
