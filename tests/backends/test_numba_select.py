"""The scalar select of numba code (`backends/numba_select.py`, note [compile-time],
"Scalar selects"): `where` of scalars prints as the `_pb_sel` intrinsic (one LLVM
select, no helper function), with the value of ``x if c else y`` for every operand
kind the printer passes, and pullback's results agree with NumPy."""
import numpy as np
import pytest

pytest.importorskip("numba")

from numba import njit  # noqa: E402

import pullback as pb  # noqa: E402
from pullback.backends import numba_backend as nb  # noqa: E402
from pullback.backends.numba_select import _pb_sel  # noqa: E402

pytestmark = pytest.mark.usefixtures("private_cache")   # conftest.py


@njit(error_model="numpy")
def sel(c, x, y):
    return _pb_sel(c, x, y)


@pytest.mark.parametrize("c,x,y", [
    (True, 1.5, -2.0), (False, 1.5, -2.0), (True, np.nan, 0.0), (False, -0.0, np.inf),
    (np.bool_(True), np.float32(1.25), np.float32(2.0)), (False, np.int64(3), np.int64(-4)),
    (True, True, False), (False, True, False), (1, 2.0, 3.0), (0, 2.0, 3.0),
    (True, np.int64(2), 0.5), (False, np.int64(2), 0.5),
])
def test_value_is_the_conditional_expression(c, x, y):
    got, want = sel(c, x, y), (x if c else y)
    assert got == want or (np.isnan(got) and np.isnan(want))
    if isinstance(want, float) and want == 0.0:
        assert np.signbit(got) == np.signbit(want)


def test_arrays_are_refused_at_typing():
    from numba.core.errors import TypingError

    with pytest.raises(TypingError):
        sel(True, np.ones(2), np.zeros(2))


def scalar_wheres(x, k):
    s = 0.0
    for i in range(4):
        s = s + np.where(x[i] > 0.5, x[i] * 2.0, -x[i])
    flag = np.where(x[0] > 0.0, True, False)
    n = np.where(k > 1, k, 0)
    return s + flag + n + np.where(x[1] < x[2], np.float32(1.5), np.float32(0.25))


def test_generated_code_imports_the_intrinsic_and_agrees():
    x = np.array([0.2, 0.7, 0.9, -0.4])
    prog = pb.jit(scalar_wheres, backend="numba").staged(x, 3).prog
    src = nb.emit_prog(nb.lower(prog), parallel=False)
    assert "from pullback.backends.numba_select import _pb_sel" in src
    assert "_pb_sel(" in src and "def _pb_sel" not in src
    assert pb.jit(scalar_wheres, backend="numba")(x, 3) == pytest.approx(scalar_wheres(x, 3), rel=1e-15)
    g = pb.grad(lambda x: scalar_wheres(x, 3), backend="numba")(x)
    np.testing.assert_allclose(g, [-1.0, 2.0, 2.0, -1.0])
