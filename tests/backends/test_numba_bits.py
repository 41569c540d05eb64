"""The bit casts of numba code (`backends/numba_bits.py`; note [vecmath], "Bit casts"):
a double's bits as an int64 and back, as NumPy's `.view`, other widths converted first;
the vecmath helpers use them instead of numba's scalar `.view`."""
import numpy as np
import pytest

pytest.importorskip("numba")

from numba import njit  # noqa: E402

import pullback as pb  # noqa: E402
from pullback.backends import numba_backend  # noqa: E402
from pullback.backends.numba_bits import _pb_bits_f64, _pb_f64_bits  # noqa: E402

pytestmark = pytest.mark.usefixtures("private_cache")   # conftest.py

VALUES = [0.0, -0.0, 1.5, -2.75, np.inf, -np.inf, np.nan, 5e-324, 1.7976931348623157e308, 2.2250738585072014e-308]


@njit(cache=False)
def _roundtrip(x):
    k = _pb_f64_bits(x)
    return k, _pb_bits_f64(k), _pb_bits_f64(k + 1)


@pytest.mark.parametrize("x", VALUES)
def test_bits_are_numpys_view(x):
    k, back, nxt = _roundtrip(np.float64(x))
    assert k == np.float64(x).view(np.int64)
    assert np.float64(x).tobytes() == np.float64(back).tobytes()   # NaN and signed zeros too
    assert np.float64(nxt).tobytes() == np.int64(k + 1).view(np.float64).tobytes()


def test_other_widths_are_converted_first():
    @njit(cache=False)
    def f(a, b):
        return _pb_f64_bits(a), _pb_bits_f64(b)

    k, y = f(np.float32(1.5), np.int32(7))
    assert k == np.float64(1.5).view(np.int64) and np.float64(y).tobytes() == np.int64(7).view(np.float64).tobytes()


def test_vecmath_modules_use_them():
    def g(x):
        return np.exp(x) * np.log(x)

    x = np.linspace(0.5, 2.0, 1000)   # long enough for the vecmath helpers (short loops call libm)
    src = numba_backend.emit_prog(numba_backend.lower(pb.jit(g).staged(x).prog), parallel=False)
    code = [ln.split("#")[0] for ln in src.splitlines()]
    assert any("_pb_f64_bits(" in ln for ln in code) and not any(".view(" in ln for ln in code)
    np.testing.assert_allclose(pb.jit(g, backend="numba")(x), g(x), rtol=1e-15)
