"""Direct calls (note [call-overhead]): once a call with writeable, aligned arrays of its
parameters' dtypes has run, later calls with the same key (dtypes, shapes and layout
flags) go straight to numba's compiled function. Every result and error is the general
path's; anything else (scalars, read-only or strided arrays) keeps the general path."""
import numpy as np
import pytest

import pullback as pb
from pullback.errors import PullbackError

pytest.importorskip("numba")


def weighted(x, w):
    return np.sum(np.sin(x) * w)


def gather(x, idx):
    return np.sum(x[idx] * 2.0)


def pair(x, w):
    return x * w, np.sum(x)


def _direct(f):
    """The jit object behind `f` (a pb.jit, or a transformation's inner jit)."""
    return getattr(f, "_jit", f)._direct


def test_second_call_is_direct_and_equal():
    f = pb.jit(weighted, backend="numba")
    x, w = np.linspace(0.0, 1.0, 7), np.linspace(1.0, 2.0, 7)
    first = f(x, w)
    assert len(_direct(f)) == 1 and all(callable(d) for d in _direct(f).values())
    second = f(x, w)
    assert second == first and type(second) is type(first) is np.float64
    x2 = x + 0.5   # new values, same key
    assert np.isclose(f(x2, w), pb.jit(weighted, backend="interp")(x2, w), rtol=1e-14)


def test_tuple_results_and_gradients_are_direct():
    f = pb.jit(pair, backend="numba")
    x, w = np.linspace(0.0, 1.0, 5), np.linspace(1.0, 2.0, 5)
    a = f(x, w)
    b = f(x, w)
    assert isinstance(b, tuple) and np.array_equal(a[0], b[0]) and a[1] == b[1]
    g = pb.grad(weighted, argnums=(0, 1), backend="numba")
    ga = g(x, w)
    gb = g(x, w)
    assert any(callable(d) for d in _direct(g).values())
    for p, q in zip(ga, gb):
        np.testing.assert_array_equal(p, q)
    g1 = pb.grad(weighted, argnums=(0,), backend="numba")   # one result in a 1-tuple
    ga, gb = g1(x, w), g1(x, w)
    assert any(callable(d) for d in _direct(g1).values())
    assert isinstance(gb, tuple) and len(gb) == 1 and gb[0].shape == x.shape
    np.testing.assert_array_equal(ga[0], gb[0])


def test_other_layouts_take_the_general_path_and_are_right():
    f = pb.jit(weighted, backend="numba")
    x, w = np.linspace(0.0, 1.0, 14), np.linspace(1.0, 2.0, 7)
    f(x[:7].copy(), w)
    f(x[:7].copy(), w)
    strided = x[::2]                       # another layout: its own key, copied to C order (small)
    ro = w.copy()
    ro.flags.writeable = False             # read-only: copied at the boundary, never direct
    want = pb.jit(weighted, backend="interp")
    for args in ((strided, w), (strided, w), (x[:7].copy(), ro), (x[:7].copy(), ro)):
        assert np.isclose(f(*args), want(*args), rtol=1e-14)
    kinds = sorted(bool(d) for d in _direct(f).values())
    # contiguous direct; strided and read-only not: the entry copies them to C order
    # (note [contiguous-args]), which a direct caller would skip
    assert kinds == [False, False, True]
    assert not ro.flags.writeable


def _scaled(x, s):
    return np.sum(x) * s


@pytest.mark.parametrize("s", [2.0, 3, True, np.float64(2.5), np.float32(1.5)])
def test_scalar_leaves_are_direct_and_equal(s):
    """A scalar leaf whose type is its parameter's (a Python float, int or bool for float64,
    int64 or bool; a NumPy scalar of the dtype) goes to the compiled code unconverted."""
    f = pb.jit(_scaled, backend="numba")
    x = np.linspace(0.0, 1.0, 4)
    first, second = f(x, s), f(x, s)
    assert any(callable(d) for d in _direct(f).values())
    want = pb.jit(_scaled, backend="interp")(x, s)
    for got in (first, second, f(x, type(s)(s * 2))):
        assert type(got) is type(want)
    assert second == first == want
    assert f(x, type(s)(s * 2)) == pb.jit(_scaled, backend="interp")(x, type(s)(s * 2))


def test_scalar_leaves_that_need_converting_keep_the_general_path():
    from pullback.backends.numba_backend import _as_is

    f64, i64 = (np.dtype(np.float64), False), (np.dtype(np.int64), False)
    assert _as_is(2.0, f64) and _as_is(2, i64) and _as_is(np.float64(2.0), f64)
    assert not _as_is(2, f64) and not _as_is(2.0, i64) and not _as_is(True, i64)   # numba would type them otherwise
    assert not _as_is(np.float32(2.0), f64) and not _as_is(np.ones(2), f64) and not _as_is(2.0, (f64[0], True))

    class Num(float):
        """A float subclass: numba would not type it as the float the code was compiled for."""

    assert not _as_is(Num(2.0), f64)
    g = pb.jit(_scaled, backend="numba")
    x = np.ones(3)
    assert g(x, 2) == g(x, 2) == 6                  # direct for ints that fit
    for _ in range(2):                              # beyond int64: no fast key, staging's error every time
        with pytest.raises(PullbackError, match="does not fit in 64 bits"):
            g(x, 2 ** 70)


def test_a_check_failing_in_a_direct_call_is_the_located_error():
    f = pb.jit(gather, backend="numba")
    x = np.arange(5.0)
    assert f(x, np.array([0, 4])) == 8.0
    assert f(x, np.array([1, 2])) == 6.0     # direct
    with pytest.raises(PullbackError) as e:
        f(x, np.array([1, 9]))
    assert "test_direct_calls.py" in str(e.value) and "index" in str(e.value).lower()
    with pytest.raises(PullbackError) as general:   # the same call on a fresh jit: the general path
        pb.jit(gather, backend="numba")(x, np.array([1, 9]))
    assert type(e.value) is type(general.value) and str(e.value) == str(general.value)


def _ints(x, idx):
    return np.sum(idx) + idx[0]


def _bools(x, idx):
    return np.sum(x) > 0.5


def _f32(x, idx):
    return x.astype(np.float32) * np.float32(2.0)


def _arr(x, idx):
    return x * 2.0


@pytest.mark.parametrize("f", [_ints, _bools, _f32, _arr, gather])
def test_direct_results_have_the_general_paths_types(f):
    jf = pb.jit(f, backend="numba")
    x, idx = np.linspace(0.0, 1.0, 5), np.array([3, 1])
    first, second = jf(x, idx), jf(x, idx)   # the general path, then the direct one
    assert any(callable(d) for d in _direct(jf).values())
    assert type(second) is type(first) and np.asarray(second).dtype == np.asarray(first).dtype
    np.testing.assert_array_equal(second, first)
    want = pb.jit(f, backend="interp")(x, idx)
    assert type(second) is type(want) and np.asarray(second).dtype == np.asarray(want).dtype


class _Sub(np.ndarray):
    """An ndarray subclass: the same dtype, shape and flags as the array it views."""


def _spied(f):
    """`f` with its general path counted: calls that did not take the hot lookup."""
    seen = []
    general = f._call

    def spy(args, kwargs):
        seen.append(len(args))
        return general(args, kwargs)

    f._call = spy
    return seen


@pytest.mark.parametrize("make", [lambda f: pb.jit(f, backend="numba"), lambda f: pb.grad(f, backend="numba")])
def test_calls_of_arrays_alone_look_their_key_up_first(make):
    f = make(weighted)
    x, w = np.linspace(0.0, 1.0, 7), np.linspace(1.0, 2.0, 7)
    assert f._hot is None
    first = f(x, w)
    assert f._hot is _direct(f)
    seen = _spied(f)
    second = f(x, w)
    assert seen == []                                   # the hot lookup answered
    np.testing.assert_array_equal(second, first)
    assert type(second) is type(first)


def test_the_hot_lookup_leaves_every_other_call_to_the_general_path():
    f = pb.jit(lambda x, w: np.sum(x * w), backend="numba")
    x, w = np.linspace(0.0, 1.0, 7), np.linspace(1.0, 2.0, 7)
    f(x, w)
    seen = _spied(f)
    want = float(np.sum(x * w))
    sub = x.view(_Sub)
    masked = np.ma.masked_array(x, mask=np.zeros(7, bool))
    for args in ((sub, w), (x, sub), (x, 2.0), (np.float64(2.0), w), (x[:5], w[:5]), (x.astype(np.float32), w)):
        f(*args)
    assert len(seen) == 6                               # subclasses, scalars, other shapes and dtypes
    assert np.isclose(f(x, w=w), want) and len(seen) == 7   # keywords
    with pytest.raises(PullbackError, match="masked arrays"):   # never a silent answer without the mask
        f(masked, w)
    assert len(seen) == 8


def test_the_hot_lookup_of_one_and_of_three_arrays():
    one = pb.jit(lambda x: np.sum(x * x), backend="numba")
    three = pb.jit(lambda x, y, z: np.sum(x * y * z), backend="numba")
    x = np.linspace(0.0, 1.0, 6)
    assert one(x) == one(x) and three(x, x, x) == three(x, x, x)
    seen1, seen3 = _spied(one), _spied(three)
    assert np.isclose(one(x), np.sum(x * x)) and np.isclose(three(x, x, x), np.sum(x ** 3))
    assert seen1 == seen3 == []
    one(x.view(_Sub)), one(x.reshape(2, 3)), three(x, x, x.view(_Sub)), three(x, x, 1.0)
    assert seen1 == [1, 1] and seen3 == [3, 3]


def test_static_arguments_and_trees_never_look_up_first():
    f = pb.jit(lambda x, n: np.sum(x) * n, backend="numba", static_argnums=(1,))
    g = pb.jit(lambda xs: np.sum(xs[0] * xs[1]), backend="numba")
    x = np.ones(3)
    f(x, 2), f(x, 2), g((x, x)), g((x, x))
    assert any(callable(d) for d in f._direct.values()) and any(callable(d) for d in g._direct.values())
    assert f._hot is None and g._hot is None


def test_floats_and_bools_look_up_first_ints_and_numpy_scalars_do_not():
    """The hot lookup keys a Python float or bool by its type, as `_fast_key` does; an int
    needs its range checked and a NumPy scalar its dtype: those take `_call` (and its direct
    caller)."""
    f = pb.jit(_scaled, backend="numba")
    x = np.linspace(0.0, 1.0, 5)
    want = pb.jit(_scaled, backend="interp")
    for s in (2.0, True, 3, np.float64(1.5)):
        f(x, s)
    seen = _spied(f)
    for s in (2.5, False):
        got = f(x, s)
        assert got == want(x, s) and type(got) is type(want(x, s))
    assert seen == []
    for s in (4, np.float64(0.5)):
        assert f(x, s) == want(x, s)
    assert seen == [2, 2]
    one = pb.jit(lambda s: s * s, backend="numba")   # GradBench's hello: one float
    one(3.0)
    seen1 = _spied(one)
    assert one(1.5) == 2.25 and type(one(1.5)) is np.float64 and seen1 == []


def _many(x, idx):
    return {"f32": x.astype(np.float32) * np.float32(2.0), "pair": (np.sum(idx), np.sum(x) > 0.5),
            "arr": x * 2.0}


@pytest.mark.parametrize("make, second", [
    (lambda: pb.jit(_many, backend="numba"), np.array([3, 1])),
    (lambda: pb.value_and_grad(weighted, backend="numba"), np.linspace(1.0, 2.0, 5)),
    (lambda: pb.grad(weighted, argnums=(0, 1), backend="numba"), np.linspace(1.0, 2.0, 5))])
def test_direct_result_trees_have_the_general_paths_types(make, second):
    """Several results go through `_direct_outs` (each converted only where numba's type is
    not already the output's) and `pytree.builder`: the same tree, values and types as the
    general path's."""
    from pullback.pytree import flatten

    f = make()
    x = np.linspace(0.0, 1.0, 5)
    first, again = f(x, second), f(x, second)   # the general path, then the direct one
    assert any(callable(d) for d in _direct(f).values())
    la, ta = flatten(first)
    lb, tb = flatten(again)
    assert ta == tb and len(la) > 1
    for p, q in zip(la, lb):
        assert type(p) is type(q) and np.asarray(p).dtype == np.asarray(q).dtype
        np.testing.assert_array_equal(p, q)
