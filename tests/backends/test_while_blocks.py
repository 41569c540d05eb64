"""While loops that push to stores run in blocks on numba (note [numba-stores],
"While loops in blocks"): room for a block of iterations is reserved once per
block, and the pushes in the block need no growth check. Values are the
interpreter's for trip counts around the block length and past the stores'
first growth, and the source shows the form."""
import re

import numpy as np
import pytest

pytest.importorskip("numba")

import pullback as pb  # noqa: E402
from pullback.backends import numba_backend as nb  # noqa: E402
from pullback.backends.numba_dialect import WHILE_BLOCK  # noqa: E402

pytestmark = pytest.mark.usefixtures("private_cache")   # conftest.py


def walk(w, n):
    # a data-dependent while loop (trip count n, unknown to the compiler): its reverse
    # sweep needs every step's state, pushed once per iteration
    x = np.array([0.1, 0.2]) * w
    k = 0
    while k < n:
        x = np.array([np.sin(x[1] * w) + 0.5 * x[0], x[0] * 0.9 - 0.1 * x[1]])
        k += 1
    return x[0] + x[1] * w


def source(f, *args):
    return nb.emit_prog(nb.lower(pb.jit(f, backend="numba").staged(*args).prog), parallel=False)


@pytest.mark.parametrize("n", [0, 1, WHILE_BLOCK - 1, WHILE_BLOCK, WHILE_BLOCK + 1, 2600])
def test_blocked_gradient_agrees_with_the_interpreter(n):
    g = pb.grad(walk)
    got = pb.jit(g, backend="numba")(0.7, np.int64(n))
    want = pb.jit(g, backend="interp")(0.7, np.int64(n))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_the_while_loop_runs_in_blocks_without_push_checks():
    src = source(pb.grad(walk), 0.7, np.int64(5))
    lines = src.splitlines()
    k = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("while "))
    loop = lines[k:]
    assert any(f"in range({WHILE_BLOCK}):" in ln for ln in loop[:40]), "\n".join(loop[:40])
    pushes = [i for i, ln in enumerate(loop) if "# pb:store_push" in ln]
    assert pushes
    # no `if st_n == st_buf.shape[0]:` growth check among the block's pushes
    assert not any(re.search(r"if st_n\w* == st_buf\w*\.shape\[0\]", loop[i]) for i in pushes), src
