"""pb.vjp's vjp_fn and None (issue 10): integer and boolean primals get None cotangents
(JAX gives float0 zeros); None cotangents are accepted for integer/boolean outputs and, as a
zero, for float outputs; at the top level and inside staged code."""
import os

import numpy as np
import pytest

import pullback as pb

HERE = os.path.basename(__file__)


def f(x, n, flag):
    y = x * n if flag else x
    return np.sum(y ** 2), n + 1


@pytest.mark.parametrize("backend", ["interp", "pysource"])
def test_integer_primals_get_none_and_none_cotangents_are_accepted(backend):
    x = np.array([1.0, 2.0])
    (v, m), vjp_fn = pb.vjp(f, x, 3, True, backend=backend)
    assert v == 45.0 and m == 4
    gx, gn, gf = vjp_fn((1.0, None))               # no cotangent for the integer output
    np.testing.assert_allclose(gx, 2 * 9 * x)
    assert gn is None and gf is None
    gx0, gn0, _ = vjp_fn((None, None))             # None for a float output: a zero cotangent
    np.testing.assert_array_equal(gx0, [0.0, 0.0])
    assert gn0 is None


def test_inside_staged_code():
    def g(x):
        _, vjp_fn = pb.vjp(f, x, 2, False)
        gx, gn, gf = vjp_fn((2.0, None))
        assert gn is None and gf is None            # staging-time values: None stays None
        return np.sum(gx)
    x = np.array([1.0, 3.0])
    assert pb.jit(g, backend="interp")(x) == pytest.approx(np.sum(4 * x))
    # and the whole thing differentiates: d/dx sum(4 x) = 4
    np.testing.assert_allclose(pb.grad(g, backend="interp")(x), [4.0, 4.0])


def test_a_cotangent_of_the_wrong_structure_is_still_an_error():
    _, vjp_fn = pb.vjp(f, np.ones(2), 3, True, backend="interp")
    with pytest.raises(pb.PullbackError, match="cotangent structure") as e:
        vjp_fn((1.0, None, None))
    assert HERE in str(e.value)
