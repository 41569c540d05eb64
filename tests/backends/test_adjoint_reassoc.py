"""Only reverse mode's sums may be reassociated (note [adjoint-reassoc]): the
additions that carry a return sweep's adjoint of a free variable are printed
as `_pb_radd` (an ``fadd reassoc``) by the numba backend; a loop the user
wrote keeps its order (a plain ``+``)."""
import numpy as np
import pytest

pytest.importorskip("numba")

import pullback as pb
from pullback.backends import numba_backend as nb


def scaled_sum(x, w):             # the user's own serial sum over k
    s = 0.0
    for k in range(x.shape[0]):
        s = s + x[k] * w
    return s


def _src(f, *args):
    return nb.emit_prog(nb.lower(f._jit.staged(*args).prog if hasattr(f, "_jit") else f.staged(*args).prog),
                        parallel=False)


def _args():
    return np.linspace(-1.0, 2.0, 7), 0.3


def test_the_users_sum_keeps_its_order():
    src = _src(pb.jit(scaled_sum, backend="numba"), *_args())
    assert "_pb_radd" not in src
    assert "s + " in src or "s_2 + " in src or "+ t" in src


def squared_sum(x, w):            # the gradient runs the user's loop, then its return sweep
    s = 0.0
    for k in range(x.shape[0]):
        s = s + x[k] * w
    return s * s


@pytest.mark.parametrize("f", [scaled_sum, squared_sum])
def test_the_adjoint_sum_reassociates(f):
    g = pb.grad(f, argnums=(0, 1), backend="numba")
    src = _src(g, *_args())
    radd = [ln.strip() for ln in src.splitlines() if "_pb_radd(" in ln and "import" not in ln]
    assert radd and all(ln.startswith("w_adj") for ln in radd), radd   # w's adjoint, summed over the sweep
    if f is squared_sum:                 # the user's loop is in the gradient too, with a plain add
        assert any(ln.strip().startswith("s") and " + " in ln for ln in src.splitlines()), src
    x, w = _args()
    for a, b in zip(g(x, w), pb.grad(f, argnums=(0, 1), backend="interp")(x, w)):
        np.testing.assert_allclose(a, b, rtol=1e-13)


def test_radd_is_a_reassociating_fadd():
    from numba import njit

    from pullback.backends.numba_radd import _pb_radd

    @njit
    def f(a, b):
        return _pb_radd(a, b)

    assert f(1.5, 2.25) == 3.75
    ir = next(iter(f.inspect_llvm().values()))
    assert "fadd reassoc double" in ir
