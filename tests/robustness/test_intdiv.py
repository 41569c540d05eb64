"""Issue 8: integer `//` and `%` by zero raise `IntegerDivisionError` (also a
ZeroDivisionError) naming the user's file and line, on every backend. Before
the fix both backends returned 0 silently. Float division by zero keeps
NumPy's inf/nan (numba's error_model stays "numpy"), and int / int true
division by zero gives inf as in NumPy."""
import importlib.util

import numpy as np
import pytest

import pullback as pb
from pullback.backends import numba_backend
from pullback.backends.checks import IntegerDivisionError
from pullback.errors import IntegerPowerError

SRC = '''\
import numpy as np


def scalar_div(a, b):
    return a // b


def scalar_mod(a, b):
    return a % b


def array_ops(x, a, b):
    q = a // b
    r = a % b
    return np.sum(x * q) + np.sum(x * r)


def fused(a, b):
    t = a * 2
    q = t // b
    return np.sum(q + 1)


def true_div(x, a, b):
    return x * (a / b) + x / 0.0


def int_pow(x, a, n):
    return x * np.sum(a ** n)


def int_pow_fused(a, n):
    t = a + 1
    return np.sum(t ** n)
'''
LINE = {"scalar_div": 5, "scalar_mod": 9, "array_ops": 13, "fused": 20, "int_pow": 29, "int_pow_fused": 34}
X = np.array([1.0, 2.0, 3.0])


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    path = tmp_path_factory.mktemp("userprog") / "intdiv_prog.py"
    path.write_text(SRC)
    spec = importlib.util.spec_from_file_location("intdiv_prog", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _check(err, name, what):
    msg = str(err.value)
    assert isinstance(err.value, ZeroDivisionError)
    assert f"intdiv_prog.py:{LINE[name]}:" in msg, msg
    assert f"integer {what} by zero" in msg, msg


@pytest.mark.parametrize("backend", ["interp", "pysource"])
def test_int_division_by_zero(m, backend):
    with pytest.raises(IntegerDivisionError) as err:
        pb.jit(m.scalar_div, backend=backend)(7, 0)
    _check(err, "scalar_div", "division")
    with pytest.raises(IntegerDivisionError) as err:
        pb.jit(m.scalar_mod, backend=backend)(-7, 0)
    _check(err, "scalar_mod", "modulo")
    a, b = np.array([7, -7, 5]), np.array([2, 0, 3])
    with pytest.raises(IntegerDivisionError) as err:
        pb.jit(m.array_ops, backend=backend)(X, a, b)
    _check(err, "array_ops", "division")
    with pytest.raises(IntegerDivisionError) as err:
        pb.grad(m.array_ops, backend=backend)(X, a, b)
    _check(err, "array_ops", "division")
    with pytest.raises(IntegerDivisionError) as err:
        pb.jit(m.fused, backend=backend)(a, b)
    _check(err, "fused", "division")


@pytest.mark.parametrize("backend", ["interp", "pysource"])
def test_nonzero_divisors_unchanged(m, backend):
    assert pb.jit(m.scalar_div, backend=backend)(-7, 2) == -7 // 2
    assert pb.jit(m.scalar_mod, backend=backend)(-7, 3) == -7 % 3
    a, b = np.array([7, -7, 5]), np.array([2, 3, -3])
    want = np.sum(X * (a // b)) + np.sum(X * (a % b))
    assert pb.jit(m.array_ops, backend=backend)(X, a, b) == pytest.approx(want)
    np.testing.assert_allclose(pb.grad(m.array_ops, backend=backend)(X, a, b), a // b + a % b)


@pytest.mark.parametrize("backend", ["interp", "pysource"])
def test_float_division_by_zero_is_inf(m, backend):
    """Only integer // and % raise: x / 0.0 and int / int are true divisions (inf, as in NumPy)."""
    r = pb.jit(m.true_div, backend=backend)(X, 1, 0)
    assert np.all(np.isinf(r))


def test_numba(m, tmp_path, monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(tmp_path / "cache"))
    f = pb.jit(m.scalar_mod, backend="numba")
    with pytest.raises(IntegerDivisionError) as err:
        f(-7, 0)
    _check(err, "scalar_mod", "modulo")
    assert f(-7, 3) == -7 % 3
    g = pb.jit(m.fused, backend="numba")
    a = np.array([7, -7, 5])
    with pytest.raises(IntegerDivisionError) as err:
        g(a, np.array([2, 0, 3]))
    _check(err, "fused", "division")
    b = np.array([2, 3, -3])
    assert g(a, b) == np.sum((a * 2) // b + 1)
    r = pb.jit(m.true_div, backend="numba")(X, 1, 0)
    assert np.all(np.isinf(r))


def test_numba_fused_loop_checks_each_divisor(m):
    """The fused elementwise loop checks the divisor per element (no array pass)."""
    pytest.importorskip("numba")
    from pullback.frontend import stage

    a = np.array([7, -7, 5])
    src = numba_backend.emit_prog(stage(m.fused, (a, a)).prog)
    body = src[src.index("def fused("):]
    assert "for i0 in range(3):" in body and "raise ZeroDivisionError" in body, body


@pytest.mark.parametrize("backend", ["interp", "pysource", "numba"])
def test_int_negative_power(m, backend, tmp_path, monkeypatch):
    """An integer to a negative integer power is refused, located (NumPy raises; numba gave 0)."""
    if backend == "numba":
        pytest.importorskip("numba")
        monkeypatch.setenv("PULLBACK_CACHE_DIR", str(tmp_path / "cache"))
    a = np.array([1, 2, 3])
    for name, args in (("int_pow", (2.0, a, -1)), ("int_pow_fused", (a, -2))):
        with pytest.raises(IntegerPowerError) as err:
            pb.jit(getattr(m, name), backend=backend)(*args)
        assert f"intdiv_prog.py:{LINE[name]}:" in str(err.value), str(err.value)
        assert "negative integer power" in str(err.value) and err.value.hint
    assert pb.jit(m.int_pow, backend=backend)(2.0, a, 2) == 2.0 * np.sum(a ** 2)
    assert pb.grad(m.int_pow, backend=backend)(2.0, a, 3) == np.sum(a ** 3)
    assert pb.jit(m.int_pow_fused, backend=backend)(a, 3) == np.sum((a + 1) ** 3)
