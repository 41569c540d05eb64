"""Static slices as numba intrinsics (`backends/numba_views.py`; note
[compile-time], "Slices in place"): the call printed for an IR slice spec, the
view's values, memory and layout against NumPy's and numba's own slicing, and
a derivative that slices end to end; static reshapes (`_pb_reshape`, "Reshapes in
place") against NumPy, C arrays viewed and other layouts copied; broadcasts
(`_pb_broadcast`, "Broadcasts in place") as read-only views with NumPy's values."""
import numpy as np
import pytest

pytest.importorskip("numba")

from numba import njit, typeof  # noqa: E402

import pullback as pb  # noqa: E402
from pullback.backends import numba_backend  # noqa: E402
from pullback.backends.numba_views import (_pb_broadcast, _pb_region_add, _pb_region_set,  # noqa: E402
                                          _pb_reshape, _pb_view_a, _pb_view_c, view_text)

pytestmark = pytest.mark.usefixtures("private_cache")   # conftest.py


def _slices(shape, spec):
    """NumPy's index for an IR spec (missing axes whole)."""
    return tuple(slice(a, b, k) for _, a, b, k in spec)


SPECS = [
    ((7, 7), (("s", 1, None, None),)),                          # rows 1.. : C kept
    ((7, 7), (("s", 1, 7, 1), ("s", 0, 3, 1))),                  # a column block: A
    ((7, 7), (("s", None, None, None), ("s", 4, None, 1))),
    ((6,), (("s", -4, None, None),)),                            # negative start
    ((6,), (("s", None, None, -1),)),                            # reversed
    ((6,), (("s", 5, 0, -2),)),
    ((5, 4, 3), (("s", 1, 4, 2), ("s", None, None, None), ("s", 2, 3, 1))),
    ((5, 4), (("s", 3, 3, 1),)),                                 # empty
    ((5, 4), (("s", 2, 9, 1), ("s", -9, 2, 1))),                 # clamped
]


@pytest.mark.parametrize("shape,spec", SPECS)
def test_view_text_matches_numpy_slicing(shape, spec):
    x = np.arange(float(np.prod(shape))).reshape(shape)
    text = view_text("x", shape, spec)
    ns = {"_pb_view_a": _pb_view_a, "_pb_view_c": _pb_view_c, "njit": njit}
    exec(f"@njit\ndef g(x):\n    return {text}", ns)   # noqa: S102  (the call as modules print it)
    got = ns["g"](x)
    np.testing.assert_array_equal(got, x[_slices(shape, spec)])
    assert got.shape == x[_slices(shape, spec)].shape
    assert np.shares_memory(got, x) or got.size == 0


def test_view_text_declines_indices():
    assert view_text("x", (3, 4), (("d",), ("s", 0, 2, 1))) is None
    assert view_text("x", (3, 4), (("ds", 2), ("s", 0, 2, 1))) is None
    assert view_text("x", (), ()) is None


@njit
def _both(x):
    return _pb_view_c(x, (1, 0), (3, 4), (1, 1)), _pb_view_a(x, (0, 1), (4, 2), (1, 2))


def test_views_share_memory_and_numba_layouts():
    x = np.arange(16.0).reshape(4, 4)
    c, a = _both(x)
    np.testing.assert_array_equal(c, x[1:])
    np.testing.assert_array_equal(a, x[:, 1::2])
    assert typeof(c).layout == "C" and typeof(a).layout == "A"   # numba's own slicing gives the same
    c[0, 0] = -1.0
    assert x[1, 0] == -1.0                                      # a view, not a copy
    f, _ = _both(np.asfortranarray(x))                           # C kept only for a C-ordered array
    assert typeof(f).layout == "A"
    np.testing.assert_array_equal(f, x[1:])


def _minors(a):
    rest = a[1:, :]
    out = 0.0
    for j in range(a.shape[0]):
        m = np.concatenate([rest[:, :j], rest[:, j + 1:]], axis=1)
        out = out + np.sum(m * m[::-1, ::-1]) * a[0, j]
    return out + np.sum(a[::2, 1:3])


def test_slicing_gradient_on_numba():
    a = np.random.default_rng(4).standard_normal((5, 5))
    src = numba_backend.emit_prog(numba_backend.lower(
        pb.jit(lambda x: pb.grad(_minors)(x), backend="numba").staged(a).prog))
    code = [ln.split("#")[0] for ln in src.splitlines()]
    assert any("_pb_view_a(" in ln for ln in code) and any("_pb_view_c(" in ln for ln in code)
    assert not any(":]" in ln or "[:" in ln for ln in code if "def " not in ln)   # no numba slicing left
    np.testing.assert_allclose(pb.grad(_minors, backend="numba")(a), pb.grad(_minors, backend="interp")(a),
                               rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(pb.jit(_minors, backend="numba")(a), _minors(a), rtol=1e-13)


# -- region updates ---------------------------------------------------------------------------

@njit
def _regions(z, a):
    from_a = _pb_view_a(a, (0, 1), (3, 2), (1, 1))
    _pb_region_add(_pb_view_a(z, (1, 0), (3, 2), (1, 1)), from_a)
    _pb_region_set(_pb_view_a(z, (0, 2), (2, 2), (1, 1)), _pb_view_a(a, (1, 0), (2, 2), (1, 1)))
    _pb_region_add(_pb_view_c(z, (3, 0), (1, 4), (1, 1)), _pb_view_a(a, (2, 0), (1, 4), (-1, 1)))
    return z


def test_region_updates_match_numpy():
    z, a = np.arange(16.0).reshape(4, 4), np.linspace(-1.0, 1.0, 16).reshape(4, 4)
    want = z.copy()
    want[1:4, 0:2] += a[0:3, 1:3]
    want[0:2, 2:4] = a[1:3, 0:2]
    want[3:4, :] += a[2:3, :][::-1]
    got = _regions(z.copy(), a)
    np.testing.assert_array_equal(got, want)


def test_region_update_overlapping_itself_is_in_c_order():
    # the loops the intrinsic replaces ran in C order: an update that reads what it
    # wrote earlier in the same statement must see the same values
    z = np.arange(10.0)

    @njit
    def shift(z):
        _pb_region_add(_pb_view_a(z, (1,), (9,), (1,)), _pb_view_a(z, (0,), (9,), (1,)))
        return z

    want = np.arange(10.0)
    for i in range(9):
        want[1 + i] += want[i]
    np.testing.assert_array_equal(shift(z), want)


def _blocks(a):
    out = np.zeros((6, 6))
    out[1:, :3] = a[:, :3] * 2.0
    out[:5, 3:] = out[:5, 3:] + a[:, 1:]
    return np.sum(out * out)


def test_block_updates_in_a_gradient():
    a = np.random.default_rng(5).standard_normal((5, 4))
    src = numba_backend.emit_prog(numba_backend.lower(
        pb.jit(lambda x: pb.grad(_blocks)(x), backend="numba").staged(a).prog))
    assert "_pb_region_" in src
    np.testing.assert_allclose(pb.grad(_blocks, backend="numba")(a), pb.grad(_blocks, backend="interp")(a),
                               rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(pb.jit(_blocks, backend="numba")(a), _blocks(a), rtol=1e-13)


@njit(cache=False)
def _reshape2(x):
    return _pb_reshape(x, (3, 4))


@njit(cache=False)
def _reshape_flat(x):
    return _pb_reshape(x, (12,))


@njit(cache=False)
def _reshape3(x):
    return _pb_reshape(x, (2, 3, 2))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.bool_])
def test_reshape_of_c_arrays_is_a_view(dtype):
    x = (np.arange(12) % 5).astype(dtype).reshape(4, 3)
    for fn, shape in ((_reshape2, (3, 4)), (_reshape_flat, (12,)), (_reshape3, (2, 3, 2))):
        y = fn(x)
        assert y.dtype == dtype and y.flags.c_contiguous
        np.testing.assert_array_equal(y, x.reshape(shape))
        assert np.shares_memory(y, x)                    # no copy, as numba's reshape of a C array
    assert typeof(_reshape2(x)).layout == "C"


def test_reshape_of_other_layouts_copies():
    base = np.arange(24.0).reshape(4, 6)
    for x in (base[:, ::2], base.T[::2], np.asfortranarray(base[:, :3]), base[::-1, 1:4]):
        assert x.size == 12 and not x.flags.c_contiguous
        y = _reshape2(x)
        np.testing.assert_array_equal(y, np.ascontiguousarray(x).reshape(3, 4))
        assert not np.shares_memory(y, base) and typeof(y).layout == "C"


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.bool_])
def test_reshape_copy_of_other_layouts_owns_its_memory(dtype):
    """A non-C operand is copied by LLVM loops: one new allocation, owned by the result and
    freed with it, the source untouched (NRT's live allocations)."""
    from numba.core.runtime import _nrt_python, rtsys

    @njit(cache=False)
    def f(x):
        return _pb_reshape(x, (x.size,))

    x = np.asfortranarray((np.arange(12) % 7).astype(dtype).reshape(3, 4))
    was = _nrt_python.memsys_stats_enabled()
    _nrt_python.memsys_enable_stats()
    try:
        f(x)

        def alive():
            st = rtsys.get_allocation_stats()
            return st.mi_alloc - st.mi_free

        before = alive()
        y = f(x)
        assert alive() == before + 1        # the copy (the argument's wrapper is freed on return)
        np.testing.assert_array_equal(y, np.ascontiguousarray(x).reshape(-1))
        assert y.dtype == dtype and not np.shares_memory(y, x)
        del y
        assert alive() == before
    finally:
        if not was:
            _nrt_python.memsys_disable_stats()


def test_reshape_keeps_its_source_alive():
    """The view holds a reference to its source's memory: numba frees the temporary
    only when the view goes (NRT's allocation counts)."""
    from numba.core.runtime import _nrt_python, rtsys

    @njit(cache=False)
    def f(n):
        return _pb_reshape(np.arange(n * 1.0), (n // 2, 2))     # the source is a temporary

    was = _nrt_python.memsys_stats_enabled()
    _nrt_python.memsys_enable_stats()
    try:
        f(4)
        s0 = rtsys.get_allocation_stats()
        y = f(10)
        s1 = rtsys.get_allocation_stats()
        assert (s1.mi_alloc - s0.mi_alloc, s1.mi_free - s0.mi_free) == (1, 0)
        np.testing.assert_array_equal(y, np.arange(10.0).reshape(5, 2))
        del y
        s2 = rtsys.get_allocation_stats()
        assert (s2.mi_alloc - s0.mi_alloc, s2.mi_free - s0.mi_free) == (1, 1)
    finally:
        if not was:
            _nrt_python.memsys_disable_stats()


def test_gradient_module_prints_reshapes():
    def g(x):
        m = np.max(x.reshape(3, 4), axis=1, keepdims=True)
        return np.sum(np.exp(x.reshape(3, 4) - m).reshape(12) * x)

    x = np.linspace(-1.0, 1.0, 12)
    src = numba_backend.emit_prog(numba_backend.lower(pb.grad(g)._jit.staged(x).prog), parallel=False)
    assert "_pb_reshape(" in src and "np.ascontiguousarray(" not in src
    np.testing.assert_allclose(pb.grad(g, backend="numba")(x), pb.grad(g, backend="interp")(x), rtol=1e-14)


BROADCASTS = [((3,), (4, 3)), ((1, 3), (5, 3)), ((2, 1), (2, 4)), ((2, 1, 3), (4, 2, 5, 3)), ((1,), (2, 3, 1)),
              ((4,), (4,)), ((0, 1), (2, 0, 3))]


@pytest.mark.parametrize("src,shape", BROADCASTS)
def test_broadcast_is_numpys(src, shape):
    @njit(cache=False)
    def f(x, shp):
        return _pb_broadcast(x, shp)

    x = np.arange(1.0, 1.0 + np.prod(src)).reshape(src)
    want = np.broadcast_to(x, shape)
    got = f(x, shape)
    assert got.shape == want.shape and not got.flags.writeable
    np.testing.assert_array_equal(got, want)
    assert np.shares_memory(got, x) or got.size == 0
    xs = x[..., ::-1] if x.ndim and x.shape[-1] > 1 else x     # a strided source
    np.testing.assert_array_equal(f(xs, shape), np.broadcast_to(xs, shape))


def test_broadcast_keeps_its_source_alive():
    @njit(cache=False)
    def f(n):
        return _pb_broadcast(np.arange(n * 1.0), (3, n))      # the source is a temporary

    y = f(4)
    np.testing.assert_array_equal(y, np.broadcast_to(np.arange(4.0), (3, 4)))


def test_broadcast_modules_and_gradients():
    def g(x, w):
        return np.broadcast_to(x, (5, 3)) @ w

    def loss(x, w):
        return np.sum(np.sin(np.broadcast_to(x, (5, 3)) @ w))

    x, w = np.linspace(-1.0, 1.0, 3), np.linspace(0.5, 2.0, 12).reshape(3, 4)
    src = numba_backend.emit_prog(numba_backend.lower(pb.jit(g).staged(x, w).prog), parallel=False)
    code = [ln.split("#")[0] for ln in src.splitlines()]
    assert any("_pb_broadcast(x, (5, 3))" in ln for ln in code) and not any("broadcast_to(" in ln for ln in code)
    np.testing.assert_allclose(pb.jit(g, backend="numba")(x, w), g(x, w), rtol=1e-14)
    got = pb.grad(loss, argnums=(0, 1), backend="numba")(x, w)
    for a, b in zip(got, pb.grad(loss, argnums=(0, 1), backend="interp")(x, w)):
        np.testing.assert_allclose(a, b, rtol=1e-13)
