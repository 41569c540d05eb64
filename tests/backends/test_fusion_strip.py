"""Strip-mined fused sums (note [vecmath]): a fused full sum over a row of at
least 2 * _STRIP elements that computes a vecmath function runs in blocks
through a buffer, and gives the same bits as the lanes form."""
import numpy as np
import pytest

pytest.importorskip("numba")

import pullback as pb  # noqa: E402
from pullback.backends import numba_backend as nb  # noqa: E402
from pullback.backends import numba_fusion  # noqa: E402


def lse(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def rows(X):
    return np.sum(np.tanh(X) * X)


@pytest.mark.parametrize("f, shape", [(lse, (1000 + 3,)), (pb.grad(lse), (1000 + 3,)), (rows, (3, 700))])
def test_strip_mined_sum_is_bitwise_the_lanes_form(monkeypatch, f, shape):
    x = np.random.default_rng(0).standard_normal(shape)
    prog = pb.jit(f).staged(x).prog
    strip = nb.compile_prog(prog, parallel=False)
    assert "_buf[" in strip.source
    monkeypatch.setattr(numba_fusion, "_strip_worth", lambda g: False)
    lanes = nb.compile_prog(prog, parallel=False)
    assert "_buf[" not in lanes.source
    np.testing.assert_array_equal(strip(x)[0], lanes(x)[0])
