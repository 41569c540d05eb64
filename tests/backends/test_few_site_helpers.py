"""Module helpers that few sites call are inlined by numba (`NumbaDialect.few_helper`,
`numba_loop_helpers.FEW_SITES`; note [compile-time], "Helpers at few sites"): the
decorator follows the number of call sites, a mutually recursive module keeps calls,
and the inlined helpers compute and raise as the called ones did."""
import re

import numpy as np
import pytest

import pullback as pb
from pullback.backends import numba_backend as nb
from pullback.backends import numba_checks
from pullback.backends.numba_loop_helpers import FEW_SITES
from pullback.errors import PullbackError

pytest.importorskip("numba")


def _source(f, *args):
    return nb.emit_prog(nb.lower(pb.jit(f, backend="numba").staged(*args).prog), parallel=False)


def _inlined(src, name):
    """Whether helper `name` is printed `inline="always"` (None: not printed)."""
    m = re.search(rf"(@njit\([^\n]*\))\ndef {name}\(", src)
    return None if m is None else 'inline="always"' in m.group(1)


def gathers(x, i, j, k, n):
    out = np.sum(x[i])
    if n >= 2:
        out = out + np.sum(x[j] * 2.0)
    if n >= 3:
        out = out + np.sum(x[k] * 3.0)
    return out + np.max(x)


@pytest.mark.parametrize("n, inlined", [(1, True), (3, False)])
def test_decorator_follows_the_sites(n, inlined):
    x = np.linspace(-1.0, 1.0, 6)
    idx = (np.array([0, 5, -1]), np.array([1, 2]), np.array([3, 3, -6]))
    src = _source(lambda x, i, j, k: gathers(x, i, j, k, n), x, *idx)
    defined = "def _pb_check_idx(" in src
    calls = src.count("_pb_check_idx(") - defined           # less its def
    assert (calls <= FEW_SITES) is inlined
    if inlined:
        assert _inlined(src, "_pb_check_idx") is True
    else:   # more sites: the process-wide overload (numba_checks), not a copy per module
        assert not defined and numba_checks.IMPORT in src
    assert _inlined(src, "_reduce_all_max_f64") is (src.count("_reduce_all_max_f64(") - 1 <= FEW_SITES)
    got = pb.jit(gathers, backend="numba", static_argnums=4)(x, *idx, n)
    assert got == gathers(x, *idx, n)


def test_inlined_check_raises_the_located_error():
    x = np.linspace(-1.0, 1.0, 6)
    f = pb.jit(lambda x, i, j, k: gathers(x, i, j, k, 1), backend="numba")
    ok = np.array([0, 1])
    assert f(x, ok, ok, ok) == gathers(x, ok, ok, ok, 1)
    with pytest.raises(PullbackError, match="test_few_site_helpers.py"):
        f(x, np.array([0, 6]), ok, ok)


def even(n, x, i):
    if n == 0:
        return x[i]
    return odd(n - 1, x * 0.5, i)


def odd(n, x, i):
    if n == 0:
        return x[i] * 2.0
    return even(n - 1, x + 1.0, i)


def test_mutual_recursion_keeps_calls():
    x, i = np.array([1.0, 2.0, 3.0]), np.array([0, 2])
    src = _source(lambda n, x, i: np.sum(even(n, x, i)), np.int64(3), x, i)
    assert src.count("_pb_check_idx(") - 1 <= FEW_SITES
    assert _inlined(src, "_pb_check_idx") is False
    got = pb.jit(lambda n, x, i: np.sum(even(n, x, i)), backend="numba")(np.int64(3), x, i)
    assert got == np.sum(even(3, x, i))


def test_gradient_with_inlined_helpers_matches_the_interpreter():
    x = np.linspace(-1.0, 1.0, 6)
    idx = (np.array([0, 5, -1]), np.array([1, 2]), np.array([3, 3, -6]))

    def f(x, i, j):
        return gathers(x, i, j, j, 2)

    src = _source(pb.grad(f), x, *idx[:2])
    assert _inlined(src, "_take_add0_1") is True
    np.testing.assert_array_equal(pb.grad(f, backend="numba")(x, *idx[:2]), pb.grad(f, backend="interp")(x, *idx[:2]))


def vec_sum(x, y):
    return np.sum(x) + np.sum(y[::-2]) * 0.5


_R = np.random.default_rng(3).standard_normal(101)


@pytest.mark.parametrize("x", [np.full(40, -0.0), np.tile([1e16, 1.0, -1e16, 3.0], 10),
                               np.concatenate([_R[:40], [np.inf], _R[40:50]]),
                               np.concatenate([_R[:40], [np.nan]]), _R, np.tile(_R, 5)])
def test_vector_sum_helper_has_numpys_bits(x):
    """`_pb_sum_vec` adds in NumPy's pairwise order (note [pairwise-sums]): the same bits
    as np.sum, strided vectors included."""
    src = _source(vec_sum, x, x)
    code = "\n".join(t.split("#")[0] for t in src.split("\n\n\n", 1)[1].splitlines())
    assert "_pb_sum_vec(" in code and "np.sum(" not in code
    want = np.sum(x) + np.sum(x[::-2]) * 0.5
    got = pb.jit(vec_sum, backend="numba")(x, x)
    assert np.asarray(got).tobytes() == np.asarray(want).tobytes()
