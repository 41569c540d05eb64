"""pb.jvp takes None as the tangent of an argument (issue 10): no tangent for
integer and boolean arguments, a zero one for float arguments."""
import numpy as np
import pytest

import pullback as pb


def f(x, n):
    s = 0.0
    for i in range(n):
        s = s + np.sin(x * i)
    return s


def g(x, y):
    return x * y


@pytest.mark.parametrize("backend", ["interp", "pysource"])
def test_none_tangents(backend):
    out, t = pb.jvp(f, (0.3, 4), (1.0, None), backend=backend)
    assert out == pytest.approx(f(0.3, 4)) and t == pytest.approx(sum(i * np.cos(0.3 * i) for i in range(4)))
    assert pb.jvp(g, (0.3, 2.0), (1.0, None), backend=backend)[1] == 2.0


def test_none_tangent_inside_staged_code():
    def h(x, n):
        return pb.jvp(f, (x, n), (1.0, None))[1]

    assert pb.jit(h, backend="interp")(0.3, 4) == pytest.approx(sum(i * np.cos(0.3 * i) for i in range(4)))
