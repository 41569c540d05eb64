"""Issue 8: mutually recursive functions loaded from numba's disk cache crashed
every later process (exit 139). Such programs are compiled without numba's disk
cache; a single self-recursive function stays cached (note [numba-cache-safety])."""
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("numba")

import pullback as pb  # noqa: E402
from pullback.backends.numba_backend import _mutual_recursion  # noqa: E402
from pullback.passes.inline import inline_small  # noqa: E402

_SRC = str(pathlib.Path(__file__).resolve().parents[2] / "src")

_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    sys.path.insert(0, {src!r})
    import pullback as pb
    from pullback.backends import numba_backend

    def is_even(x, n):
        if n == 0:
            return x
        return is_odd(x * 1.5, n - 1)

    def is_odd(x, n):
        if n == 0:
            return -x
        return is_even(x + 0.5, n - 1)

    def f(x, n):
        return is_even(x, n)

    def power(x, n):
        if n == 0:
            return 1.0
        return x * power(x, n - 1)

    def g(x, n):
        return power(x, n)

    mutual = numba_backend.compile_prog(pb.jit(f).staged(0.7, 5).prog)
    single = numba_backend.compile_prog(pb.jit(g).staged(1.3, 4).prog)
    out = {{
        "primal": float(mutual(0.7, 5)[0]),
        "grad": float(pb.grad(f, backend="numba")(0.7, 5)),
        "primal_hit": mutual.cache_hit,
        "single": float(single(1.3, 4)[0]),
        "single_hit": single.cache_hit,
        "mutual_path": mutual.path,
    }}
    print(json.dumps(out))
""")


def _is_even(x, n):
    return x if n == 0 else _is_odd(x * 1.5, n - 1)


def _is_odd(x, n):
    return -x if n == 0 else _is_even(x + 0.5, n - 1)


def test_mutual_recursion_runs_in_two_processes_sharing_a_cache(tmp_path):
    child = tmp_path / "child.py"  # pullback stages functions from their source file
    child.write_text(_CHILD.format(src=_SRC))
    env = dict(os.environ, PULLBACK_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("NUMBA_CACHE_DIR", None)
    want = _is_even(0.7, 5)
    h = 1e-6
    dwant = (_is_even(0.7 + h, 5) - _is_even(0.7 - h, 5)) / (2 * h)
    runs = []
    for _ in range(2):
        p = subprocess.run([sys.executable, str(child)], env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, (p.returncode, p.stderr[-3000:])
        r = json.loads(p.stdout.strip().splitlines()[-1])
        assert r["primal"] == pytest.approx(want, rel=1e-12)
        assert r["grad"] == pytest.approx(dwant, rel=1e-6)
        assert r["single"] == pytest.approx(1.3 ** 4, rel=1e-12)
        assert not r["primal_hit"]  # never loaded from numba's disk cache
        runs.append(r)
    assert runs[1]["single_hit"]  # a self-recursive function stays cached
    entry = pathlib.Path(runs[0]["mutual_path"])
    assert not list((entry.parent / "__pycache__").glob(entry.stem + ".*")), "numba cached mutual recursion"


def _even(x, n):
    if n == 0:
        return x
    return _odd(x * 1.5, n - 1)


def _odd(x, n):
    if n == 0:
        return -x
    return _even(x + 0.5, n - 1)


def _three(x, n):
    return _even(x, n)


def _pw(x, n):
    if n == 0:
        return 1.0
    return x * _pw(x, n - 1)


def _one(x, n):
    return _pw(x, n)


def test_mutual_recursion_is_detected_after_inlining():
    prog = inline_small(pb.jit(_three).staged(0.7, 5).prog)
    names = _mutual_recursion(prog)
    assert len(names) == 2 and all(("even" in n) or ("odd" in n) for n in names), names
    assert _mutual_recursion(inline_small(pb.jit(_one).staged(1.3, 4).prog)) == []
    assert np.isclose(pb.jit(_three, backend="interp")(0.7, 5), _is_even(0.7, 5))
