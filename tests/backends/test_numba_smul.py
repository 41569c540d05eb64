"""The numba forms of `smul` (`backends/numba_smul.py`, `backends/libcalls/smul.py`,
note [strong-mul]): the same value as the guard of note [edge-numerics], bit for
bit (a zero's sign included), for every pair of edge values and operand types."""
import itertools

import numpy as np
from numba import njit

import pullback as pb
from pullback.backends.libcalls.smul import _ARRAY
from pullback.backends.numba_smul import _pb_smul_cs, _pb_smul_s, _pb_smul_sc
from _corpus import program  # noqa: E402 - tests/backends/_corpus.py

EDGE = [0.0, -0.0, 1.0, -2.5, 1e-310, 1e308, np.inf, -np.inf, np.nan]


def ref(x, y):
    """The guard as the IR states it: where(isnan(r) & ((x == 0) | (y == 0)), 0, r)."""
    with np.errstate(all="ignore"):
        r = np.float64(x) * np.float64(y)
        return np.float64(0.0) if np.isnan(r) and (x == 0 or y == 0) else r


def same(a, b):
    """Equal as bits up to NaN payloads."""
    a, b = np.float64(a), np.float64(b)
    return (np.isnan(a) and np.isnan(b)) or (a == b and np.signbit(a) == np.signbit(b))


@njit(error_model="numpy")
def scalar(x, y):
    return _pb_smul_s(x, y)


@njit(error_model="numpy")
def in_loop(xs, ys):
    out = np.empty(xs.shape[0])
    for i in range(xs.shape[0]):
        out[i] = _pb_smul_s(xs[i], ys[i])
    return out


def test_scalar_edge_values():
    for x, y in itertools.product(EDGE, EDGE):
        assert same(scalar(x, y), ref(x, y)), (x, y)


def test_loop_edge_values():
    """In a loop (which LLVM may vectorise) every lane gets its own guard."""
    pairs = list(itertools.product(EDGE, EDGE)) * 3
    xs = np.array([p[0] for p in pairs])
    ys = np.array([p[1] for p in pairs])
    got = in_loop(xs, ys)
    for x, y, g in zip(xs, ys, got):
        assert same(g, ref(x, y)), (x, y)


def test_integer_and_boolean_operands():
    for x, y in [(0, np.inf), (3, np.nan), (True, -np.inf), (False, np.nan), (0, -2.0), (np.float32(0), np.inf)]:
        assert same(scalar(x, y), ref(x, y)), (x, y)
        assert same(scalar(y, x), ref(y, x)), (y, x)


def test_array_helper():
    ns = {"np": np, "njit": njit}
    exec(_ARRAY.format(deco='@njit(error_model="numpy")'), ns)  # noqa: S102
    f = ns["_pb_smul"]
    x = np.array(EDGE * len(EDGE))
    y = np.repeat(np.array(EDGE), len(EDGE))
    for a, b in [(x, y), (x[x == x], y[x == x])]:   # with and without NaN products
        got = f(a, b)
        for u, v, g in zip(a, b, got):
            assert same(g, ref(u, v)), (u, v)
    got = f(np.array([[0.0, 1.0], [2.0, 0.0]]), np.inf)   # broadcasting
    np.testing.assert_array_equal(got, [[0.0, np.inf], [np.inf, 0.0]])


def test_generated_code_calls_the_intrinsic():
    """The numba module prints one call per guarded product, not the
    conditional expression, and gives the strong zero."""
    from pullback.backends import numba_backend as nb

    def f(x):
        return np.sum(np.where(x > 0, np.sqrt(x), 0.0))

    x = np.array([-1.0, 0.0, 4.0])
    prog = pb.jit(pb.grad(f), backend="numba").staged(x).prog
    src = nb.emit_prog(nb.lower(prog), parallel=False)
    assert "_pb_smul_s(" in src and "(0.0 if" not in src
    np.testing.assert_array_equal(pb.grad(f, backend="numba")(x), [0.0, 0.0, 0.25])


@njit(error_model="numpy")
def _fixed_loop(xs, c):
    """Both invariant-factor forms over a loop in which `c` stays the same."""
    out = np.empty((2, xs.shape[0]))
    for i in range(xs.shape[0]):
        out[0, i] = _pb_smul_sc(xs[i], c)
        out[1, i] = _pb_smul_cs(c, xs[i])
    return out


def test_invariant_factor_forms_are_the_strong_product():
    """`_pb_smul_sc(x, c)` and `_pb_smul_cs(c, x)` (note [strong-mul], "Invariant factors"):
    the strong product bit for bit, whatever the fixed factor is (finite, zero, infinite, NaN)."""
    xs = np.array(EDGE * 3)
    for c in EDGE:
        got = _fixed_loop(xs, c)
        for x, g, h in zip(xs, got[0], got[1]):
            assert same(g, ref(x, c)), (x, c)
            assert same(h, ref(c, x)), (c, x)


# Gaussian elimination: the inner adjoint loop multiplies by the row's `factor`, which that loop
# does not change
_elim = program("det_gauss_inplace")


def test_loops_print_the_invariant_factor_form_where_a_factor_is_fixed():
    from pullback.backends import numba_backend as nb

    A = np.array([[2.0, 1.0, 0.5], [1.0, 3.0, 1.0], [0.5, 1.0, 4.0]])
    prog = pb.jit(pb.grad(_elim), backend="numba").staged(A).prog
    src = nb.emit_prog(nb.lower(prog), parallel=False)
    inner = [ln for ln in src.splitlines() if "_pb_smul" in ln and "import" not in ln]
    assert any("_pb_smul_sc(" in ln and "factor" in ln for ln in inner), inner   # fixed in k
    assert any("_pb_smul_s(" in ln for ln in inner)                          # both factors change
    # a zero pivot makes f infinite or NaN: the guard still decides, as in the interpreter
    for B in (A, np.array([[0.0, 1.0, 0.5], [1.0, 3.0, 1.0], [0.5, 1.0, 4.0]]),
              np.array([[1.0, 2.0, 0.0], [0.5, 1.0, 1.0], [np.inf, 1.0, 1.0]])):
        with np.errstate(all="ignore"):   # the interpreter's NumPy meets the infinities
            want = pb.grad(_elim, backend="interp")(B)
        got = pb.grad(_elim, backend="numba")(B)
        np.testing.assert_array_equal(got, want)


def test_fused_loops_print_the_invariant_factor_form():
    from pullback.backends import numba_backend as nb

    def f(x, c):
        return np.sum(np.sin(x * c))

    x = np.linspace(-1.0, 1.0, 40)
    prog = pb.jit(pb.grad(f), backend="numba").staged(x, 2.0).prog
    src = nb.emit_prog(nb.lower(prog), parallel=False)
    assert "_pb_smul_sc(" in src or "_pb_smul_cs(" in src
    for c in (2.0, 0.0, np.inf, np.nan):
        for xv in (x, np.where(x > 0.5, np.inf, x)):
            np.testing.assert_array_equal(pb.grad(f, backend="numba")(xv, c), pb.grad(f, backend="interp")(xv, c))


def test_loops_llvm_would_not_vectorise_keep_the_plain_guard():
    """The invariant-factor form pays only where LLVM vectorises the loop; elsewhere it is
    more code to compile for nothing: a loop of fewer than 16 iterations keeps `_pb_smul_s`."""
    from pullback.backends import numba_backend as nb

    def dot(n):
        def f(x, c):
            s = 0.0
            for i in range(n):
                s = s + np.sin(x[i] * c)
            return s
        return f

    def forms(n):
        x = np.linspace(0.1, 1.0, 40)
        prog = pb.jit(pb.grad(dot(n)), backend="numba").staged(x, 2.0).prog
        src = nb.emit_prog(nb.lower(prog), parallel=False)
        return {name for name in ("_pb_smul_s(", "_pb_smul_sc(", "_pb_smul_cs(") if name in src}

    assert forms(40) & {"_pb_smul_sc(", "_pb_smul_cs("}
    assert forms(3) == {"_pb_smul_s("}
