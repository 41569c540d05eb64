"""Issue 8: an index out of bounds raises `IndexOutOfBoundsError` naming the
user's file and line, the index, the axis and the size, on every backend.
Before the fix numba read garbage (a small index gave a zero gradient) or
crashed (i = 10**7, read or write), and pysource raised a bare IndexError from
generated code. Valid indices are -n <= i < n (negative ones wrap, as in
NumPy), and gradients through checked code are unchanged."""
import importlib.util
import os
import textwrap

import numpy as np
import pytest

import pullback as pb
from pullback.backends import numba_backend
from pullback.backends.checks import IndexOutOfBoundsError
from pullback.errors import PullbackError

SRC = '''\
import numpy as np


def read(x, i):
    y = x[i] * 2.0
    return y + x[0]


def write(x, i):
    y = x * 1.0
    y[i] = 3.0
    return np.sum(y * x)


def gather(x, idx):
    return np.sum(x[idx] * x[idx])


def matrix(a, i, j):
    return a[i, j] * a[0, 0]


def loop(x, idx):
    s = 0.0
    for k in range(3):
        s += x[idx[k]] * x[k]
    return s
'''
LINE = {"read": 5, "write": 11, "gather": 16, "matrix": 20, "loop": 26}


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    path = tmp_path_factory.mktemp("userprog") / "bounds_prog.py"
    path.write_text(SRC)
    spec = importlib.util.spec_from_file_location("bounds_prog", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


X = np.arange(1.0, 6.0)
A = np.arange(12.0).reshape(3, 4)


def _check(err, name, index, axis, size):
    msg = str(err.value)
    assert isinstance(err.value, PullbackError) and isinstance(err.value, IndexError)
    assert f"bounds_prog.py:{LINE[name]}:" in msg, msg
    assert f"index {index} is out of bounds for axis {axis} with size {size}" in msg, msg


CASES = [
    ("read", (X, 7), 7, 0, 5),
    ("read", (X, -6), -6, 0, 5),
    ("read", (X, 10 ** 7), 10 ** 7, 0, 5),
    ("write", (X, 5), 5, 0, 5),
    ("write", (X, -10 ** 7), -10 ** 7, 0, 5),
    ("gather", (X, np.array([1, 9, 2])), 9, 0, 5),
    ("gather", (X, np.array([0, -7])), -7, 0, 5),
    ("matrix", (A, 1, 4), 4, 1, 4),
    ("matrix", (A, 3, 0), 3, 0, 3),
    ("loop", (X, np.array([0, 1, 8])), 8, 0, 5),
]


@pytest.mark.parametrize("backend", ["interp", "pysource"])
@pytest.mark.parametrize("name,args,index,axis,size", CASES)
def test_out_of_bounds_primal_and_grad(m, backend, name, args, index, axis, size):
    f = getattr(m, name)
    with pytest.raises(IndexOutOfBoundsError) as err:
        pb.jit(f, backend=backend)(*args)
    _check(err, name, index, axis, size)
    with pytest.raises(IndexOutOfBoundsError) as err:
        pb.grad(f, backend=backend)(*args)
    _check(err, name, index, axis, size)


@pytest.mark.parametrize("backend", ["interp", "pysource"])
def test_in_range_indices_negative_ones_wrap(m, backend):
    assert pb.jit(m.read, backend=backend)(X, -2) == pytest.approx(X[-2] * 2 + X[0])
    g = pb.grad(m.read, backend=backend)(X, -5)
    np.testing.assert_allclose(g, [3.0, 0, 0, 0, 0])
    g = pb.grad(m.gather, backend=backend)(X, np.array([-1, 0, 0]))
    np.testing.assert_allclose(g, [4 * X[0], 0, 0, 0, 2 * X[4]])
    np.testing.assert_allclose(pb.grad(m.matrix, backend=backend)(A, -1, -4), _matrix_grad(-1, -4))
    np.testing.assert_allclose(pb.grad(m.matrix, backend=backend)(A, 2, 1), _matrix_grad(2, 1))


def _matrix_grad(i, j):
    g = np.zeros((3, 4))
    g[i, j] += A[0, 0]
    g[0, 0] += A[i, j]
    return g


@pytest.fixture
def numba_cache(tmp_path, monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(tmp_path / "cache"))


def test_numba_out_of_bounds_and_in_range(m, numba_cache):
    """A handful of numba compiles: read and gather, primal and gradient, each
    with several bad indices (one compile per program)."""
    read, gread = pb.jit(m.read, backend="numba"), pb.grad(m.read, backend="numba")
    for i in (7, -6, 10 ** 7, -10 ** 7):
        for fn in (read, gread):
            with pytest.raises(IndexOutOfBoundsError) as err:
                fn(X, i)
            _check(err, "read", i, 0, 5)
    assert read(X, -2) == pytest.approx(X[-2] * 2 + X[0])
    np.testing.assert_allclose(gread(X, 3), pb.grad(m.read, backend="interp")(X, 3))
    np.testing.assert_allclose(gread(X, -5), [3.0, 0, 0, 0, 0])
    ggather = pb.grad(m.gather, backend="numba")
    for idx, bad in ((np.array([1, 9, 2]), 9), (np.array([0, -7, 1]), -7)):
        with pytest.raises(IndexOutOfBoundsError) as err:
            ggather(X, idx)
        _check(err, "gather", bad, 0, 5)
    np.testing.assert_allclose(ggather(X, np.array([-1, 0, 0])), [4 * X[0], 0, 0, 0, 2 * X[4]])


def test_numba_write_out_of_bounds(m, numba_cache):
    gwrite = pb.grad(m.write, backend="numba")
    for i in (5, 10 ** 7, -10 ** 7):
        with pytest.raises(IndexOutOfBoundsError) as err:
            gwrite(X, i)
        _check(err, "write", i, 0, 5)
    np.testing.assert_allclose(gwrite(X, -1), pb.grad(m.write, backend="interp")(X, -1))


def _numba_source(f, *args, grad=False):
    from pullback.frontend import stage
    from pullback.passes.vjp import vjp_prog

    prog = stage(f, args).prog
    if grad:
        prog, name = vjp_prog(prog)
        prog = prog.with_funcs(prog.funcs, entry=name)
    return numba_backend.emit_prog(prog)


def test_boundscheck_switch(m, monkeypatch):
    """PULLBACK_BOUNDSCHECK=0 removes the bounds checks from numba code (read when
    the code is emitted, so the cache key, a hash of the source, differs); integer
    division checks stay. Loop indices with a static bound need no check."""
    pytest.importorskip("numba")
    on = _numba_source(m.loop, X, np.array([0, 1, 2]), grad=True)
    monkeypatch.setenv("PULLBACK_BOUNDSCHECK", "0")
    off = _numba_source(m.loop, X, np.array([0, 1, 2]), grad=True)
    assert "raise IndexError" in on and "raise IndexError" not in off
    # x[k] with k in range(3), 3 <= 5: only the traced idx[k] values are checked
    primal = on[on.index("def loop("):on.index("def loop_vjp(")]
    assert primal.count("raise IndexError") == 1, primal

    def div(a, b):
        return a // b

    assert "raise ZeroDivisionError" in _numba_source(div, 7, 2)
    monkeypatch.delenv("PULLBACK_BOUNDSCHECK")
    assert _numba_source(m.loop, X, np.array([0, 1, 2]), grad=True) == on


def test_pysource_source_stays_readable(m):
    """pysource code indexes with NumPy, which checks bounds itself: no check
    lines clutter `derivative_source`."""
    src = pb.derivative_source(m.read, X, 2)
    assert "raise" not in src and "x[i]" in src


def test_message_and_hint(m):
    with pytest.raises(IndexOutOfBoundsError) as err:
        pb.jit(m.read, backend="pysource")(X, 5)
    msg = str(err.value)
    assert os.path.basename(err.value.loc.file) == "bounds_prog.py" and err.value.loc.line == LINE["read"]
    assert "y = x[i] * 2.0" in msg and "-5 to 4" in msg, msg
    assert textwrap.dedent(msg).startswith(str(err.value.loc.file))
