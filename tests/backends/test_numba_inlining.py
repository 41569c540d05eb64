"""The inlined-IR memo of `backends/numba_inlining.py` (note [compile-time],
"Inlined helpers"): while pullback's modules compile, numba builds the untyped IR
of an ``inline="always"`` function once and inlines copies of it at every site,
with the same results as without the memo; outside pullback's compiles numba's
own method is back and the memo is empty."""
import numpy as np
import pytest

numba = pytest.importorskip("numba")

from numba.core.inline_closurecall import InlineWorker  # noqa: E402

import pullback as pb  # noqa: E402
from pullback.backends import numba_inlining  # noqa: E402
from pullback.backends.numba_opt import numba_opt  # noqa: E402

pytestmark = pytest.mark.usefixtures("private_cache")   # conftest.py

_SRC = """
@numba.njit(inline="always", cache=False)
def helper(a, b):
    c = a * b
    if c > 1.0:
        c = c - 1.0
    return c + a

@numba.njit(cache=False)
def caller(x):
    s = helper(x[0], x[1])
    t = helper(x[2], s)          # the same helper at three sites, feeding each other
    for i in range(x.shape[0]):
        s += helper(x[i], t)
    return s, t
"""


def _fresh():
    """A new caller and helper (numba compiles them from scratch)."""
    ns = {"numba": numba}
    exec(_SRC, ns)   # noqa: S102  (test source)
    return ns["caller"]


def _reference(x):
    def helper(a, b):
        c = a * b
        if c > 1.0:
            c = c - 1.0
        return c + a

    s = helper(x[0], x[1])
    t = helper(x[2], s)
    for i in range(len(x)):
        s += helper(x[i], t)
    return s, t


def test_helper_ir_built_once_and_inlined_at_every_site():
    x = np.array([0.5, 3.0, -1.25, 2.0])
    before = dict(numba_inlining.STATS)
    with numba_opt(3):
        got = _fresh()(x)
        assert numba_inlining._MEMO                       # held while compiling
    assert numba_inlining.STATS["misses"] - before["misses"] == 1
    assert numba_inlining.STATS["hits"] - before["hits"] == 2
    assert not numba_inlining._MEMO                        # emptied on the way out
    assert got == _reference(x)
    assert _fresh()(x) == got                              # numba's own inlining: the same values


def test_numba_method_restored_outside():
    assert getattr(InlineWorker.__dict__["inline_function"], "__wrapped__", None) is None
    with numba_opt(3):
        assert InlineWorker.__dict__["inline_function"].__wrapped__ is not None
        with numba_opt(3):
            assert InlineWorker.__dict__["inline_function"].__wrapped__ is not None
        assert InlineWorker.__dict__["inline_function"].__wrapped__ is not None   # an inner exit keeps it
    assert getattr(InlineWorker.__dict__["inline_function"], "__wrapped__", None) is None
    with pytest.raises(ValueError), numba_opt(3):
        raise ValueError("x")
    assert getattr(InlineWorker.__dict__["inline_function"], "__wrapped__", None) is None


def test_vecmath_sites_in_a_module_hit_the_memo():
    """pullback's exp and log at several sites of one function: built once each."""
    def f(x):
        return np.sum(np.exp(x) * np.log(x + 2.0) + np.exp(-x) - np.log(x * x + 1.0))

    x = np.linspace(0.1, 2.0, 64)
    before = dict(numba_inlining.STATS)
    g = pb.grad(f, backend="numba")(x)
    assert numba_inlining.STATS["hits"] > before["hits"]
    np.testing.assert_allclose(g, pb.grad(f, backend="interp")(x), rtol=1e-13)
    np.testing.assert_allclose(pb.jit(f, backend="numba")(x), f(x), rtol=1e-13)
