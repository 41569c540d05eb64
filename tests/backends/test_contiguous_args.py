"""Array arguments handed to numba C-ordered (note [contiguous-args]): a small array, and
a large one that the program reads whole and does enough work per element of, is copied
to C order at the call, so an F-ordered or strided argument runs the C-ordered code (no
second numba compile, no strided loops); a large array the program reads a few elements
of, or only sums, is passed as it is."""
import numpy as np
import pytest

pytest.importorskip("numba")

import pullback as pb  # noqa: E402
from pullback.backends import numba_backend as nb  # noqa: E402
from pullback.backends import warm_cache  # noqa: E402
from pullback.backends.numba_contiguous import SMALL_COPY, contiguous_params, read_whole  # noqa: E402

pytestmark = pytest.mark.usefixtures("private_cache")   # conftest.py


def lse(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def corner(X, i):
    return X[i, 0] * 2.0 + X[0, 1]


def most_rows(X):
    return np.sum(X[1:] * 2.0)


def two_rows(X):
    return np.sum(X[:2] * 2.0)


def loop_rows(X, n):
    acc = 0.0
    for i in range(n):
        acc = acc + X[i, 0]
    return acc


def _helper(Y):
    return np.sum(Y * Y)


def through_call(X, Z):
    return _helper(X.T) + Z[0, 0]


def carried(X, n):
    Y = X
    for _ in range(n):
        Y = Y * 0.5
    return np.sum(Y)


def plain_sum(x):
    return np.sum(x)


def _params(f, *args, grad=False, rule=read_whole):
    t = pb.grad(f) if grad else pb.jit(f)
    prog = nb.lower(getattr(t, "_jit", t).staged(*args).prog, False, None)
    return rule(prog, prog.func(prog.entry))


X = np.ones((100, 50))


@pytest.mark.parametrize("f, args, want", [
    (lse, (np.ones(1000),), (True,)),
    (corner, (X, 3), (False, False)),
    (most_rows, (X,), (True,)),          # 99 of 100 rows: as good as whole
    (two_rows, (X,), (False,)),
    (loop_rows, (X, 5), (False, False)),
    (through_call, (X, X), (True, False)),   # read whole by the helper, through a transpose
    (carried, (X, 3), (True, False)),       # through a loop parameter it starts
])
def test_what_counts_as_read_whole(f, args, want):
    assert _params(f, *args) == want


def test_gradient_reads():
    assert _params(lse, np.ones(1000), grad=True) == (True,)
    assert _params(most_rows, X, grad=True) == (False,)   # its gradient does not read X at all


def test_which_arguments_are_copied():
    big, small = np.ones(5000), np.ones(SMALL_COPY)
    c = contiguous_params
    assert _params(lse, big, rule=c) == (True,)              # exp: work enough per element
    assert _params(lse, big, grad=True, rule=c) == (True,)
    assert _params(plain_sum, big, rule=c) == (False,)       # a sum: a copy costs as much
    assert _params(plain_sum, small, rule=c) == (True,)      # small: copied whatever it does
    assert _params(corner, np.ones((100, 60)), 3, rule=c) == (False, False)


def _signatures(f, x, *rest):
    fn = nb.compile_prog(pb.jit(f).staged(x, *rest).prog)
    got = fn(x, *rest)
    return got, fn.__wrapped__.signatures


def test_strided_and_f_arguments_run_the_c_code():
    x = np.random.default_rng(0).standard_normal(2 * 5000)
    want = nb.compile_prog(pb.jit(lse).staged(x[::2].copy()).prog)(x[::2].copy())
    for v in (x[::2], x[::-2]):
        got, sigs = _signatures(lse, v)
        assert got == want or v.strides[0] < 0
        assert len(sigs) == 1 and all(t.layout == "C" for t in sigs[0] if hasattr(t, "layout")), sigs
    A = np.random.default_rng(1).standard_normal((300, 40))
    for M in (np.asfortranarray(A), A.T.copy().T, A[:, ::2]):
        got, sigs = _signatures(lse, M)
        np.testing.assert_allclose(got, lse(M), rtol=1e-13)
        assert len(sigs) == 1 and sigs[0][0].layout == "C", sigs
    got, sigs = _signatures(plain_sum, x[::2])          # not copied: its layout compiled
    assert got == np.sum(x[::2]) and sigs[0][0].layout == "A", sigs
    np.testing.assert_allclose(pb.grad(lse)(x[::2]), pb.grad(lse)(x[::2].copy()), rtol=0, atol=0)


def test_a_large_array_read_in_a_few_places_is_not_copied():
    big = np.asfortranarray(np.random.default_rng(2).standard_normal((400, 300)))
    assert big.size > SMALL_COPY
    got, sigs = _signatures(corner, big, 7)
    assert got == corner(big, 7)
    assert sigs[0][0].layout == "F", sigs       # passed as it is: numba compiled its layout
    small = np.asfortranarray(big[:20, :20])
    assert small.size <= SMALL_COPY
    got, sigs = _signatures(corner, small, 7)
    assert got == corner(small, 7) and sigs[0][0].layout == "C", sigs


def test_warm_entry_checks_the_flags():
    assert warm_cache._contiguous([True, False], 2) == (True, False)
    assert warm_cache._contiguous([], 2) == ()
    for bad in ([1, 0], [True], ["yes", False]):
        with pytest.raises(ValueError):
            warm_cache._contiguous(bad, 2)
