"""Dynamic slices (issue 10): a slice with a traced start and a static length,
`x[i:i+k]`, is an `index`/`index_update` with a ``("ds", k)`` spec entry, not a
reason to unroll the loop; a start outside ``0 <= i <= n - k`` is a located
index error on every backend (never clamped, never wrapped); a loop that still
needs unrolling is unrolled at most `control.FALLBACK_UNROLL_LIMIT` times, above
that a located error says why."""
import numpy as np
import pytest

import pullback as pb
from pullback.backends import interp
from pullback.frontend import control, stage
from pullback.ir.builder import Builder
from pullback.ir.core import Func, Loop, Prog, Var
from pullback.ir.types import TensorType
from pullback.testing import check_grads, check_prog

BACKENDS = ["interp", "pysource", "numba"]


def windows(x):
    s = 0.0
    for i in range(len(x) - 1):
        s = s + np.sum(np.sin(x[i:i + 2]) ** 2)
    return s


def scatter(x):
    y = np.zeros(len(x) + 2)
    for i in range(len(x)):
        y[i:i + 3] += x[i] * np.array([1.0, 2.0, 3.0])
    return np.sum(y ** 2)


def columns(A):
    s = 0.0
    for j in range(A.shape[1] - 1):
        s = s + np.sum(A[:, j:j + 2] ** 2) * A[0, j]
    return s


def offsets(x):
    s = 0.0
    for i in range(1, len(x) - 2):
        s = s + np.sum(x[i - 1:i + 1] * x[i + 1:i + 3])
    return s


def rows_and_col(A):
    s = 0.0
    k = 2
    for i in range(A.shape[0] - k + 1):
        s = s + np.sum(A[i:i + k, 2] ** 3)
    return s


def updates(x):
    y = x.copy()
    for i in range(len(x) - 1):
        y[i:i + 2] *= 1.5
        y[i + 1:i + 2] -= y[i:i + 1] * 0.5
    z = np.zeros(len(x))
    for i in range(len(x) - 2):
        z[i:i + 3] = y[i] + z[i:i + 3]
    return np.sum(np.sin(y) * z)


def carried_start(x):
    s, k = 0.0, 0
    while k + 2 <= len(x):
        s = s + np.prod(x[k:k + 2])
        k += 2
    return s


def set_window(x, k):
    y = x.copy()
    y[k:k + 2] = 0.0
    return y


def read_window(x, k):
    return np.sum(x[k:k + 3])


def write_window(x, k):
    y = x.copy()
    y[k:k + 3] = 1.0
    return y


X = np.linspace(0.1, 2.0, 7)
A = np.arange(20.0).reshape(4, 5) / 10


@pytest.mark.parametrize("backend", BACKENDS)
def test_values(backend):
    for f, a in ((windows, X), (scatter, X), (columns, A), (offsets, X), (rows_and_col, A), (updates, X),
                 (carried_start, X)):
        assert pb.jit(f, backend=backend)(a) == pytest.approx(f(a), rel=1e-12), f.__name__
    np.testing.assert_array_equal(pb.jit(set_window, backend=backend)(X, 3), set_window(X, 3))


CASES = ((windows, X), (scatter, X), (columns, A), (offsets, X), (rows_and_col, A), (updates, X))


@pytest.mark.parametrize("backend", ["interp", "pysource"])
def test_gradients(backend):
    for f, a in CASES:
        check_grads(f, (a,), modes=("rev", "fwd"), order=1, backend=backend)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["interp", "pysource"])
def test_second_order(backend):
    for f, a in CASES:
        check_grads(f, (a,), modes=("rev", "fwd"), order=2, backend=backend)


def test_gradients_numba():
    check_grads(updates, (X,), modes=("rev", "fwd"), order=1, backend="numba")


def _loops(prog):
    n = 0

    def body(b):
        nonlocal n
        for s in b.stmts:
            if isinstance(s.exp, Loop):
                n += 1
                body(s.exp.body)

    for f in prog.funcs:
        body(f.body)
    return n


def _ops(prog, op):
    out = []

    def body(b):
        for s in b.stmts:
            if isinstance(s.exp, Loop):
                body(s.exp.body)
            elif getattr(s.exp, "op", None) == op:
                out.append(s.exp)

    for f in prog.funcs:
        body(f.body)
    return out


def test_a_22_iteration_loop_is_an_ir_loop():
    x = np.linspace(0.0, 1.0, 23)
    st = stage(windows, (x,))
    assert _loops(st.prog) == 1
    (ix,) = _ops(st.prog, "index")  # one read in the body, not 22
    assert dict(ix.params)["spec"] == (("ds", 2),)
    assert pb.jit(windows, backend="interp")(x) == pytest.approx(windows(x))


def test_20000_iterations():
    def f(x):
        s = 0.0
        for i in range(len(x) - 1):
            s = s + np.sum(x[i:i + 2] ** 2)
        return s

    x = np.linspace(0.0, 1.0, 20000)
    assert _loops(stage(f, (x,)).prog) == 1
    assert pb.jit(f, backend="pysource")(x) == pytest.approx(f(x), rel=1e-12)
    c = np.full(len(x), 2.0)
    c[[0, -1]] = 1.0
    np.testing.assert_allclose(pb.grad(f, backend="pysource")(x), 2 * x * c, rtol=1e-12)


def test_read_gradient_is_cheap():
    """The adjoint of a read x[i:i+k] adds into the adjoint of x in place: the
    gradient's work stays a constant times the primal's (two sizes)."""
    from pullback.passes.vjp import vjp_prog

    ratios = []
    for n in (16, 128):
        x = np.linspace(0.1, 1.0, n)
        st = stage(windows, (x,))
        p, g = interp.OpCount(), interp.OpCount()
        interp.run(st.prog, x, ops=p)
        vprog, name = vjp_prog(st.prog)
        interp.run(vprog, x, 1.0, fname=name, ops=g)
        ratios.append(g.work / p.work)
    assert ratios[1] <= 1.5 * ratios[0] and ratios[1] < 10, ratios


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("k", [5, 6, -1, -3])
def test_out_of_range_is_a_located_error(backend, k):
    with pytest.raises(pb.IndexOutOfBoundsError) as ei:
        pb.jit(read_window, backend=backend)(X, k)
    msg = str(ei.value)
    assert "test_dynamic_slices.py" in msg and "x[k:k + 3]" in msg, msg
    assert f"slice [{k}:{k + 3}]" in msg and "size 7" in msg and "0 <= i <= 4" in msg, msg
    with pytest.raises(pb.IndexOutOfBoundsError) as ei:
        pb.jit(write_window, backend=backend)(X, k)
    assert "y[k:k + 3] = 1.0" in str(ei.value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_in_range_edges(backend):
    for k in (0, 4):
        assert pb.jit(read_window, backend=backend)(X, k) == pytest.approx(read_window(X, k))
        np.testing.assert_array_equal(pb.jit(write_window, backend=backend)(X, k), write_window(X, k))


def test_views_of_dynamic_slices():
    def f(x, i):
        y = x.copy()
        v = y[i:i + 2]
        y[i] = 7.0
        w = y[i - 1:i + 1]
        w += 1.0
        return v * x[0]

    for backend in BACKENDS:
        np.testing.assert_array_equal(pb.jit(f, backend=backend)(X, 3), f(X, 3))


def _err(f, *args):
    with pytest.raises(pb.PullbackError) as ei:
        pb.jit(f, backend="interp")(*args)
    return str(ei.value)


def test_length_must_be_static():
    def prefix(x, k):
        return np.sum(x[:k])

    def two(x, i, j):
        return np.sum(x[i:j])

    def step(x, i):
        return np.sum(x[i:i + 4:2])

    for f, args in ((prefix, (X, 3)), (two, (X, 1, 3)), (step, (X, 1))):
        msg = _err(f, *args)
        assert "test_dynamic_slices.py" in msg and "x[i:i+k]" in msg, msg
        assert ("known at staging time" if f is not step else "step must be 1") in msg, msg
    assert "np.where" in _err(prefix, X, 3)


def test_too_long_for_the_slice():
    def f(x, i):
        return np.sum(x[i:i + 9])

    msg = _err(f, X, 0)
    assert "length 9" in msg and "size 7" in msg and "test_dynamic_slices.py" in msg


def test_unrolling_is_capped_with_a_located_reason():
    def prefix_sums(x):
        s = 0.0
        for i in range(len(x)):
            s = s + np.sum(x[:i + 1])
        return s

    n = control.FALLBACK_UNROLL_LIMIT
    x = np.linspace(0.0, 1.0, n)
    assert pb.jit(prefix_sums, backend="interp")(x) == pytest.approx(prefix_sums(x))  # short: unrolled
    msg = _err(prefix_sums, np.linspace(0.0, 1.0, n + 1))
    assert f"copy its body {n + 1} times" in msg and f"at most {n}" in msg, msg
    assert "test_dynamic_slices.py" in msg and "np.sum(x[:i + 1])" in msg and "np.where" in msg, msg

    def lists(x):
        w = [1.0] * len(x)
        s = 0.0
        for i in range(len(x)):
            s = s + x[i] * w[i]
        return s

    msg = _err(lists, np.ones(100))
    assert "Python list" in msg and "w[i]" in msg and "np.array" in msg, msg

    def whiles(x):
        s, i = 0.0, 0
        while i < len(x):
            s = s + np.sum(x[:i + 1])
            i += 1
        return s

    msg = _err(whiles, np.ones(100))
    assert "`while` loop" in msg and "np.sum(x[:i + 1])" in msg, msg


def test_an_outer_loop_still_unrolls_for_an_inner_one():
    def f(x):
        ws = [1.0, 2.0]
        s = 0.0
        for j in range(2):
            for i in range(100):
                s = s + x[i] * ws[j]
        return s

    x = np.linspace(0.0, 1.0, 100)
    assert pb.jit(f, backend="interp")(x) == pytest.approx(f(x))


def _one(op, spec, xs, vs=None, mode=None):
    b = Builder()
    x = Var("x", TensorType("f64", xs))
    i = Var("i", TensorType("i64"))
    params = [x]
    if vs is not None:
        v = Var("v", TensorType("f64", vs))
        params.append(v)
        out = b.emit(op, x, v, i, spec=spec, mode=mode)
    else:
        out = b.emit(op, x, i, spec=spec)
    params.append(i)
    return Prog((Func("f", tuple(params), b.body([out]), (out.type,)),), "f")


@pytest.mark.parametrize("backend", ["interp", "pysource"])
def test_primitive_rules(backend):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, 4))
    check_prog(_one("index", (("s", 0, 5, 1), ("ds", 2)), (5, 4)), [x, 1], backend=backend)
    check_prog(_one("index", (("ds", 3),), (5, 4)), [x, 2], backend=backend)
    for mode in ("set", "add"):
        check_prog(_one("index_update", (("ds", 3),), (5, 4), (3, 1), mode), [x, rng.normal(size=(3, 1)), 2],
                   backend=backend)
    with pytest.raises(IndexError):
        interp.run(_one("index", (("ds", 3),), (5, 4)), x, 3)


def nested(A):
    B = A.copy()
    for j in range(A.shape[0]):
        for i in range(A.shape[1] - 1):
            B[j, i:i + 2] = B[j, i:i + 2] * 0.9 + np.sin(B[j, i]) * 0.1
    return np.sum(B ** 2)


def test_nested_loop_updating_a_dynamic_slice():
    check_grads(nested, (A,), modes=("rev",), order=1, backend="interp")
