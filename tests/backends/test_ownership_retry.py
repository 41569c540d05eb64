"""A regression from tests/test_random_programs.py (session 29): the ownership analysis
(pysource's, which the numba dialect shares) tries a loop parameter as owned, analyses the
body, and drops the candidate when the body's result is not owned; the accumulations in
place (`inplace_add`) recorded in the rejected try survived, so pysource updated the loop's
read-only initial array (the broadcast seed of `np.sum`'s adjoint) in place:
"ValueError: output array is read-only". The decisions are now undone with the candidate."""
import numpy as np
import pytest

import pullback as pb


def f(x0, x1, x2):   # noqa: C901 - a generated program, as hypothesis drew it
    if np.dot((x0 / (1.0 + x0 * x0)), x0) > -1000.0:
        for i1 in range(1):
            t2 = x0[-1]
            x1 = np.sin((np.log(1.0 + t2 * t2) / (1.0 + t2 * t2)))
            def m3(e4, k5):
                t6 = (0.5 * k5)
                t7 = (t2 / (1.0 + t6 * t6))
                return 0.5 * e4 + 0.5 * np.tanh(((x0[-1] / (1.0 + t2 * t2)) / (1.0 + t7 * t7)))
            x0 = pb.map(m3, x0, np.arange(3))
    for i8 in range(1):
        for i9 in range(1):
            x1 = 0.5 * x1 + np.tanh(np.dot(x0, x0))
            def m10(e11):
                return 0.5 * e11 + 0.5 * np.tanh(np.dot((x0 - x0), (x0 + x0)))
            x0 = pb.map(m10, x0)
    for i12 in range(1):
        for i13 in range(2):
            def m14(e15, k16):
                t18 = -1.25
                t19 = (0.5 / (1.0 + t18 * t18))
                if np.sum(x0) >= -1000.0:
                    r17 = (np.exp(np.tanh(e15)) + np.dot(x0, x0))
                else:
                    t20 = np.sum(x0)
                    r17 = np.sqrt(1.0 + t20 * t20)
                return 0.5 * e15 + 0.5 * np.tanh(r17)
            x0 = pb.map(m14, x0, np.arange(3))
        t21 = np.dot(x0, x0)
        x1 = 0.5 * x1 + np.tanh(np.sin(np.log(1.0 + t21 * t21)))
    return np.sum(x0) + 0.5 * x1


@pytest.mark.parametrize("backend", ["pysource", "numba"])
def test_rejected_loop_ownership_leaves_no_update_in_place(backend):
    if backend == "numba":
        pytest.importorskip("numba")
    x0 = np.array([0.3, -0.2, 0.5])
    want = pb.grad(f, argnums=(0, 1, 2), backend="interp")(x0.copy(), 0.4, 0.1)
    got = pb.grad(f, argnums=(0, 1, 2), backend=backend)(x0.copy(), 0.4, 0.1)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)
