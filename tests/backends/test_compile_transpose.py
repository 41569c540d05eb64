"""The numba form of `transpose` (backends/libcalls/transpose.py, note
[compile-time]): axis reversals print as ``.T`` (no ``np.transpose``, whose
error path makes numba compile its string formatting), other permutations as
``np.transpose``; values agree with the interpreter either way."""
import pathlib
import sys

import numpy as np
import pytest

pytest.importorskip("numba")

_SRC = str(pathlib.Path(__file__).resolve().parent.parent.parent / "src")
if _SRC not in sys.path:
    sys.path.insert(0, _SRC)

import pullback as pb
from pullback.backends import interp, numba_backend


pytestmark = pytest.mark.usefixtures("private_cache")   # conftest.py


def f(a, b):
    c = np.transpose(a.reshape(2, 3, 4), (1, 0, 2))   # not a reversal
    d = np.transpose(a.reshape(2, 3, 4), (2, 1, 0))   # a reversal
    return np.sum((a @ b.T) ** 2) + np.sum(c * c[::-1]) + np.sum(d[0] * d[1])


def _lines(src):
    return [line.split("#")[0].strip() for line in src.splitlines() if "# pb:transpose" in line]


def test_reversals_print_as_T_and_values_agree():
    a = np.arange(24.0).reshape(6, 4) / 10
    b = np.linspace(-1.0, 1.0, 20).reshape(5, 4)
    prog = pb.grad(f, argnums=(0, 1))._jit.staged(a, b).prog
    low = numba_backend.lower(prog)
    lines = _lines(numba_backend.emit_prog(low, parallel=False))
    assert lines, "the program transposes"
    for line in lines:
        rhs = line.split(" = ", 1)[1]
        assert rhs.endswith(".T") or rhs.startswith("np.transpose(")
        if rhs.startswith("np.transpose("):
            perm = eval(rhs[rhs.index("(", 13):-1])
            assert perm != tuple(range(len(perm)))[::-1]
    assert any(line.endswith(".T") for line in lines)
    assert any("np.transpose(" in line for line in lines)
    out = numba_backend.compile_prog(prog)(a, b)
    ref = interp.run(prog, a, b)
    for x, y in zip(out, ref):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)
