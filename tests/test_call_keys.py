"""A warm call of a jitted function finds its compiled code by a cheap key
(`boundary._fast_key`): arrays and numbers, flat tuples or lists of them, and
static ints, strings and tuples of them. Anything else takes the general
signature key. The key must tell apart whatever staging tells apart."""
import numpy as np
import pytest

import pullback as pb
from pullback import frontend
from pullback.boundary import _LAYOUT_FLAGS, _fast_key


def chain(x, model, parents):
    a, b = model
    s = 0.0
    for p in parents:            # a Python loop over the static tuple
        s = s + a[p] * b[p]
    return s * x


def typed(x, s):
    return x * 2.0 if type(s[0]) is float else (x * 3.0 if type(s[0]) is bool else x)


A, B = np.arange(4.0), np.arange(4.0) + 1.0


@pytest.mark.parametrize("backend", ["interp", "numba"])
def test_static_tuple_and_pytree_give_the_right_program(backend):
    f = pb.jit(chain, backend=backend, static_argnums=(2,))
    for parents in [(0, 1), (0, 2), (0, 1), (3,), (0, 2)]:
        want = sum(A[p] * B[p] for p in parents) * 2.0
        assert f(2.0, (A, B), parents) == pytest.approx(want)
    # a new shape inside the pytree stages again
    assert f(1.0, (A[:3], B[:3]), (2,)) == pytest.approx(A[2] * B[2])
    # a list of arrays is another tree than a tuple of them; both work
    assert f(1.0, [A, B], (1,)) == pytest.approx(A[1] * B[1])


def test_static_values_equal_but_of_other_types_are_other_programs():
    f = pb.jit(typed, backend="interp", static_argnums=(1,))
    assert f(1.0, (1,)) == 1.0
    assert f(1.0, (1.0,)) == 2.0     # (1.0,) == (1,), but staging sees a float
    assert f(1.0, (True,)) == 3.0    # and a bool
    assert f(1.0, (1,)) == 1.0


def test_fast_keys():
    x = np.ones(3)
    # an array's key: dtype, shape and the layout flags numba's type depends on (note [call-overhead])
    assert _fast_key((x, 1.0)) == (((x.dtype, (3,), x.flags.num & _LAYOUT_FLAGS), float), (x, 1.0))
    assert _fast_key((x[::2],))[0] != _fast_key((x[:2].copy(),))[0]   # strided, contiguous
    ro = x.copy()
    ro.flags.writeable = False
    assert _fast_key((ro,))[0] != _fast_key((x,))[0]
    key, leaves = _fast_key((x, (x, 2), (1, 2)), static=(2,))
    assert len(leaves) == 3 and leaves[0] is x and leaves[1] is x and leaves[2] == 2
    assert key != _fast_key((x, (x, 2), (True, 2)), static=(2,))[0]   # (True, 2) == (1, 2)
    assert key == _fast_key((x, (x, 5), (1, 2)), static=(2,))[0]      # a number's value is no part of it
    assert key != _fast_key((x, [x, 2], (1, 2)), static=(2,))[0]
    assert _fast_key((x, ((x,),))) is None               # nested: the general key
    assert _fast_key((x, (x, None))) is None
    assert _fast_key((x, [1, 2]), static=(1,)) is None   # a list static: the general key
    assert _fast_key((x, (1.5,)), static=(1,)) is None   # floats (NaN) never take the fast key
    assert _fast_key((x, (np.ma.array(np.ones(2)),))) is None   # ndarray subclasses: the checked path


def test_warm_call_with_pytree_and_static_args_skips_the_signature_key(monkeypatch):
    f = pb.jit(chain, backend="interp", static_argnums=(2,))
    assert f(2.0, (A, B), (0, 1)) == pytest.approx(4.0)

    def no(*a, **k):
        raise AssertionError("the general signature key was computed on a warm call")
    monkeypatch.setattr(frontend, "signature_key", no)
    assert f(2.0, (A, B), (0, 1)) == pytest.approx(4.0)
    assert f(3.0, (B, A), (0, 1)) == pytest.approx(6.0)   # other values, same signature


def test_fast_key_keeps_the_errors_of_bad_leaves():
    f = pb.jit(chain, backend="interp", static_argnums=(2,))
    f(1.0, (A, B), (0,))
    with pytest.raises(pb.PullbackError):
        f(1.0, (A, np.ma.array(B, mask=[0, 1, 0, 0])), (0,))



def scaled(t):
    return t[0] * t[1]


def plus_one(n):
    return n + 1


@pytest.mark.parametrize("backend", ["interp", "numba"])
def test_an_int_too_large_after_a_warm_call_is_a_clear_error(backend):
    f, g = pb.jit(scaled, backend=backend), pb.jit(plus_one, backend=backend)
    np.testing.assert_allclose(f((A, 3)), 3 * A)   # warm: the next calls have the same cheap key
    assert g(5) == 6
    for big in (2 ** 63, -2 ** 63 - 1, 2 ** 70):
        with pytest.raises(pb.PullbackError, match="64 bits"):
            f((A, big))
        with pytest.raises(pb.PullbackError, match="64 bits"):
            g(big)


def test_static_tokens_tell_apart_what_staging_tells_apart():
    from pullback.boundary import StaticTokens

    st = StaticTokens()
    a = (1, 2)
    ta = st.token(0, a)
    assert st.token(0, a) is ta                      # the same object: remembered by identity
    assert st.token(0, tuple([1, 2])) is ta          # an equal tuple of the same types: the same token
    assert st.token(0, (1.0, 2)) is None             # floats never take the fast key
    assert st.token(0, (True, 2)) is not ta          # equal, but a bool
    assert st.token(1, (1, 2)) is ta                 # tokens name values, whatever the position
    assert st.token(0, [1, 2]) is None and st.token(0, a) is ta
    x = np.ones(3)
    k1 = _fast_key((x, a), static=(1,), statics=st)[0]
    assert k1 == _fast_key((x, (1, 2)), static=(1,), statics=st)[0]
    assert k1 != _fast_key((x, (True, 2)), static=(1,), statics=st)[0]
    assert k1 != _fast_key((x, (1, 3)), static=(1,), statics=st)[0]


def test_static_tokens_from_many_threads_are_one_per_value():
    import threading

    from pullback.boundary import StaticTokens

    st = StaticTokens()
    values = [tuple(range(n)) for n in range(200)]
    got = [[] for _ in range(4)]

    def work(out):
        for v in values:
            out.append(st.token(0, tuple(v)))   # a fresh tuple each time: no identity hit

    threads = [threading.Thread(target=work, args=(out,)) for out in got]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for out in got[1:]:
        assert all(p is q for p, q in zip(out, got[0]))
    assert len({id(t) for t in got[0]}) == len(values)


def test_dicts_of_arrays_take_the_fast_key_in_flatten_order():
    from pullback.pytree import flatten

    x, w, b = np.ones(3), np.arange(3.0), np.ones(1)
    key, leaves = _fast_key(({"w": w, "b": b}, x))
    assert leaves == flatten(({"w": w, "b": b}, x))[0]                  # sorted keys: b, then w
    assert _fast_key(({"b": b, "w": w}, x))[0] == key                     # insertion order is no part of it
    assert _fast_key(({"w": w, "c": b}, x))[0] != key                     # other names
    assert _fast_key(({"w": w, "b": b.astype(np.float32)}, x))[0] != key
    assert _fast_key(({"w": w, "b": (b,)}, x)) is None                    # nested: the general key
    assert _fast_key(({1: w, 2: b}, x)) is None                           # keys that are not strings


@pytest.mark.parametrize("backend", ["interp", "numba"])
def test_dict_arguments_warm_calls_skip_the_signature_key(backend, monkeypatch):
    def loss(p, x):
        return np.sum((x @ p["w"] + p["b"]) ** 2)

    x, w, b = np.linspace(0.0, 1.0, 12).reshape(4, 3), np.arange(3.0), np.ones(1)
    g = pb.grad(loss, backend=backend)
    g({"w": w, "b": b}, x)
    calls = [{"b": b, "w": w}, {"w": w + 1.0, "b": b}]
    want = [pb.grad(loss, backend="interp")(p, x) for p in calls]

    def no(*a, **k):
        raise AssertionError("the general signature key was computed on a warm call")
    monkeypatch.setattr(frontend, "signature_key", no)
    for p, ref in zip(calls, want):
        got = g(p, x)
        assert type(got) is dict and sorted(got) == ["b", "w"]
        for name in ("b", "w"):
            np.testing.assert_allclose(got[name], ref[name], rtol=1e-14)
