"""`return a` inside a loop, then an in-place update of `a` on the path that did
not return: the early-return rewrite's value variable may alias `a`, but the
flag it sets guards every later statement, so the update is not ambiguous."""
import numpy as np
import pytest

import pullback as pb
from pullback.testing import check_grads


def clip_walk(v, d):
    w = v.copy()
    for i in range(3):
        if w[i] > 5.0:
            return w
        w[i] = np.tanh(w[i] + 0.3 * d)
    return w * 1.05


@pytest.mark.parametrize("backend", ["interp", "pysource"])
@pytest.mark.parametrize("v", [np.array([0.1, 0.2, 0.3]), np.array([0.1, 6.0, 0.3])])
def test_update_after_an_early_return_in_a_loop(backend, v):
    np.testing.assert_allclose(pb.jit(clip_walk, backend=backend)(v, 2.0), clip_walk(v, 2.0))  # plain Python
    check_grads(lambda x: np.sum(clip_walk(x, 2.0) ** 2), (v,), modes=("rev", "fwd"), order=1, backend=backend)
