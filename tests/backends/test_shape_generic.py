"""Issue 13 §2, shape-generic compiled code (note [shape-generic]): modules that
differ only in numeric literals share one compiled module whose differing
literals are run-time arguments; a new shape with the same ranks then runs
without a numba compile, with the right results."""
import textwrap

import numpy as np
import pytest

pytest.importorskip("numba")

from pullback.backends import numba_generic  # noqa: E402

_MOD = textwrap.dedent('''
    """Generated (entry: f)."""
    import numpy as np
    from numba import njit

    @njit(cache=True)
    def g(x, k):
        """g(x: f64[{n}])"""
        return x * {scale} + k

    @njit(cache=True)
    def f(x):
        """f(x: f64[{n}])"""
        acc = 0.0
        for i in range({n}):  # pb:loop
            acc += g(x, 3)[i]
        return acc / {n}.0 + {small}
''')


@pytest.fixture
def registry(tmp_path, monkeypatch):
    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("PULLBACK_SHAPE_GENERIC", raising=False)
    monkeypatch.setattr(numba_generic, "_REG", {})
    monkeypatch.setattr(numba_generic, "_GENERIC", {})
    return tmp_path


def _src(n, scale=2.0, small=1):
    return _MOD.format(n=n, scale=scale, small=small)


def test_first_module_of_a_skeleton_stays_specialised(registry):
    assert numba_generic.plan(_src(100)) is None
    assert numba_generic.plan(_src(100)) is None          # the same module again


def test_differing_literals_become_arguments(registry):
    numba_generic.plan(_src(100))
    gsrc, args = numba_generic.plan(_src(200))
    assert args == (200, 200.0)                           # the loop bound and the folded divisor
    assert "_pbs[0]" in gsrc and "_pbs[1]" in gsrc and "range(200)" not in gsrc
    assert "def g(x, k, _pbs)" in gsrc and "g(x, 3, _pbs)" in gsrc   # threaded through calls
    assert "x * 2.0" in gsrc                              # an unchanged literal stays
    gsrc3, args3 = numba_generic.plan(_src(300))
    assert gsrc3 == gsrc and args3 == (300, 300.0)        # the same generic module
    # run it: the generic module with the new shape's values computes the specialised result
    ns = {}
    exec(compile(gsrc3.replace("@njit(cache=True)", ""), "<g>", "exec"), ns)   # noqa: S102
    spec = {}
    exec(compile(_src(300).replace("@njit(cache=True)", ""), "<s>", "exec"), spec)   # noqa: S102
    x = np.linspace(0, 1, 300)
    assert ns["f"](x, args3) == spec["f"](x)


def test_small_or_structural_differences_stay_specialised(registry):
    numba_generic.plan(_src(100))
    assert numba_generic.plan(_src(100, small=2)) is None      # a small integer differs
    assert numba_generic.plan(_src(100).replace("acc += g", "acc -= g")) is None   # another skeleton
    assert numba_generic.plan(_src(8)) is None                  # a size below SMALL


def test_registry_persists_and_ignores_damage(registry):
    numba_generic.plan(_src(100))
    numba_generic._REG.clear()                                  # a new process
    assert numba_generic.plan(_src(200)) is not None
    for p in (registry / "cache" / "numba").glob("pb_s*.shape.json"):
        p.write_text("{damaged")
    numba_generic._REG.clear()
    assert numba_generic.plan(_src(200)) is None                # starts over: specialised


def test_off_switch(registry, monkeypatch):
    monkeypatch.setenv("PULLBACK_SHAPE_GENERIC", "0")
    numba_generic.plan(_src(100))
    assert numba_generic.plan(_src(200)) is None


def _compiles():
    """Counts numba pipeline compilations (loads from numba's cache are not compiles)."""
    from numba.core import compiler

    n = [0]
    real = compiler.compile_extra

    def counting(*a, **k):
        n[0] += 1
        return real(*a, **k)
    return n, real, counting


@pytest.mark.slow
def test_new_shape_runs_without_a_numba_compile(registry, monkeypatch):
    import pullback as pb
    from numba.core import compiler

    def f(x, W):
        h = np.tanh(W @ x)
        return np.sum(h * h) / x.shape[0]

    g = pb.grad(f, backend="numba")
    n, real, counting = _compiles()
    monkeypatch.setattr(compiler, "compile_extra", counting)
    seen = []
    for size in (100, 200, 300, 400):
        x = np.linspace(0.1, 0.9, size)
        W = np.cos(np.arange(50 * size).reshape(50, size))
        before = n[0]
        got = g(x, W)
        seen.append(n[0] - before)
        t = np.tanh(W @ x)
        np.testing.assert_allclose(got, W.T @ (2 * t * (1 - t * t)) / size, rtol=1e-12, atol=1e-14)
    assert seen[0] > 0 and seen[1] > 0          # specialised, then the generic module
    assert seen[2] == 0 and seen[3] == 0        # later shapes: no compile


_CHILD = '''
import json, sys
sys.path.insert(0, {src!r})
import numpy as np
import pullback as pb
from numba.core import compiler
import pullback.frontend as fe

n = [0, 0]
real, real_stage = compiler.compile_extra, fe.stage

def counting(*a, **k):
    n[0] += 1
    return real(*a, **k)

def stage(*a, **k):
    n[1] += 1
    return real_stage(*a, **k)

compiler.compile_extra, fe.stage = counting, stage
sys.path.insert(0, {here!r})
import prog_gen
g = pb.grad(prog_gen.f, backend="numba")
out = []
for size in json.loads(sys.argv[1]):
    x = np.linspace(0.1, 0.9, size)
    before = list(n)
    got = g(x)
    out.append([size, n[0] - before[0], n[1] - before[1], bool(np.allclose(got, 2 * x / size, rtol=1e-12))])
print(json.dumps(out))
'''


@pytest.mark.slow
def test_generic_module_across_processes(tmp_path):
    """A second process runs a third shape on the generic module from the disk
    cache (staging, no compile) and a shape seen before from the warm cache
    (neither)."""
    import json
    import os
    import pathlib
    import subprocess
    import sys

    (tmp_path / "prog_gen.py").write_text("import numpy as np\n\n\ndef f(x):\n    return np.sum(x * x) / x.shape[0]\n")
    child = tmp_path / "child.py"
    src = str(pathlib.Path(__file__).resolve().parents[2] / "src")
    child.write_text(_CHILD.format(src=src, here=str(tmp_path)))
    env = dict(os.environ, PULLBACK_CACHE_DIR=str(tmp_path / "cache"), PYTHONDONTWRITEBYTECODE="1")
    env.pop("PULLBACK_SHAPE_GENERIC", None)
    env.pop("PULLBACK_WARM_CACHE", None)

    def run(sizes):
        p = subprocess.run([sys.executable, str(child), json.dumps(sizes)], env=env, capture_output=True, text=True,
                           timeout=600)
        assert p.returncode == 0, p.stderr[-3000:]
        return json.loads(p.stdout.strip().splitlines()[-1])

    first = run([100, 200])
    assert all(ok for *_, ok in first) and first[0][1] > 0 and first[1][1] > 0
    second = run([300, 200])
    assert all(ok for *_, ok in second), second
    assert second[0][1] == 0 and second[0][2] == 1     # a new shape: staged, not compiled
    assert second[1][1] == 0 and second[1][2] == 0     # a shape seen before: neither


@pytest.mark.slow
def test_generic_module_numba_cannot_compile_falls_back(registry, monkeypatch):
    """A generic module numba cannot type (here: one whose functions do not take
    the tuple) is reported to `failed`, and the shape is compiled specialised."""
    import pullback as pb

    calls = []
    monkeypatch.setattr(numba_generic, "plan", lambda src: (src, (123,)))
    monkeypatch.setattr(numba_generic, "failed", lambda gsrc: calls.append(gsrc))

    def f(x):
        return np.sum(np.sin(x) * x)

    x = np.linspace(0.1, 0.9, 40)
    np.testing.assert_allclose(pb.grad(f, backend="numba")(x), np.sin(x) + x * np.cos(x), rtol=1e-13)
    assert len(calls) == 1


def test_literals_outside_function_bodies_stay(registry):
    """A literal in a default value or at module level cannot read `_pbs`."""
    src = _src(100).replace("def g(x, k):", "def g(x, k=100):")
    numba_generic.plan(src)
    assert numba_generic.plan(_src(200).replace("def g(x, k):", "def g(x, k=200):")) is None
