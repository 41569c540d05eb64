"""Public API behaviour: transformations, nesting, readable source, memory, errors."""
import re

import numpy as np
import pytest

import pullback as pb
from pullback.errors import NonDifferentiableError, PullbackError


def poly(x):
    return np.sum(x ** 3 - 2.0 * x)


def prefix(x):
    a = np.zeros_like(x)
    for i in range(x.shape[0]):
        a[i] = x[i] * x[i] + (0.5 * a[i - 1] * a[i - 1] if i > 0 else 0.0)
    return np.sum(a)


def newton_sqrt(a):
    x = a
    it = 0
    while abs(x * x - a) > 1e-12 and it < 100:
        x = 0.5 * (x + a / x)
        it += 1
    return x


def test_grad_value_and_grad_argnums():
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(pb.grad(poly)(x), 3 * x ** 2 - 2)
    v, g = pb.value_and_grad(poly)(x)
    assert np.isclose(v, poly(x))
    np.testing.assert_allclose(g, 3 * x ** 2 - 2)

    def f(a, b):
        return np.sum(a * b) + np.sum(b)

    ga, gb = pb.grad(f, argnums=(0, 1))(x, 2 * x)
    np.testing.assert_allclose(ga, 2 * x)
    np.testing.assert_allclose(gb, x + 1)


def test_jvp_vjp_jacobian_hessian():
    x = np.array([0.5, -1.0, 2.0])
    out, t = pb.jvp(poly, (x,), (np.ones(3),))
    assert np.isclose(out, poly(x)) and np.isclose(t, np.sum(3 * x ** 2 - 2))
    out, f_vjp = pb.vjp(lambda_free_square, x)
    (ct,) = f_vjp(np.ones(3))
    np.testing.assert_allclose(ct, 2 * x)
    for mode in ("rev", "fwd"):
        np.testing.assert_allclose(pb.jacobian(lambda_free_square, mode=mode)(x), np.diag(2 * x))
    np.testing.assert_allclose(pb.hessian(poly)(x), np.diag(6 * x))


def lambda_free_square(x):
    return x * x


@pytest.mark.parametrize("backend", ["interp", "numba"])
def test_a_vjp_fn_called_in_staged_code_stages_the_vjp(backend):
    """The pullback `pb.vjp` returns, called inside a jitted or differentiated function,
    is staged with the primals as constants (it once ran into the boundary's own try/except)."""
    x = np.array([0.5, -1.0, 2.0])
    _, back = pb.vjp(lambda_free_square, x, backend=backend)
    ct = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(pb.jit(lambda t: back(t)[0] * 3.0, backend=backend)(ct), 6.0 * x * ct)
    np.testing.assert_allclose(pb.grad(lambda t: np.sum(back(t)[0]), backend=backend)(ct), 2 * x)


def test_a_vjp_fn_takes_one_cotangent():
    _, back = pb.vjp(lambda_free_square, np.ones(3))
    with pytest.raises(PullbackError, match="one cotangent") as e:
        back(np.ones(3), np.ones(3))
    assert "test_api.py" in str(e.value)
    with pytest.raises(PullbackError, match="one cotangent") as e:
        pb.jit(lambda t: back(t, t)[0])(np.ones(3))
    assert "test_api.py" in str(e.value)


def test_while_loop_with_data_dependent_trip_count():
    for a in (2.0, 10.0, 0.3):
        assert np.isclose(pb.grad(newton_sqrt)(a), 0.5 / np.sqrt(a), rtol=1e-8)


def grad_of_grad_inner(x):
    return np.sin(x) * x


def test_nested_grad_of_grad_and_jvp_of_grad():
    d1 = pb.grad(grad_of_grad_inner)
    d2 = pb.grad(d1)
    x = 0.7
    assert np.isclose(d2(x), 2 * np.cos(x) - x * np.sin(x))
    _, t = pb.jvp(d1, (x,), (1.0,))
    assert np.isclose(t, 2 * np.cos(x) - x * np.sin(x))


def test_derivative_source_is_readable():
    src = pb.derivative_source(poly, np.array([1.0, 2.0]))
    assert "x_adj" in src
    assert "test_api.py" in src  # provenance comments name the user's file
    fsrc = pb.derivative_source(poly, np.array([1.0, 2.0]), mode="fwd")
    assert "x_tan" in fsrc


@pytest.mark.parametrize("backend", ["interp", "pysource", "numba"])
def test_backends_agree(backend):
    x = np.linspace(0.1, 1.0, 5)
    np.testing.assert_allclose(pb.grad(prefix, backend=backend)(x), pb.grad(prefix, backend="interp")(x))


def test_memory_grows_linearly_with_elements_written():
    peaks = [pb.memory_report(prefix, np.linspace(0.1, 1.0, n)).peak_bytes for n in (8, 16, 32, 64)]
    assert peaks[0] > 0
    ratios = [b / a for a, b in zip(peaks, peaks[1:])]
    assert all(abs(r - 2.0) < 0.01 for r in ratios), peaks  # O(n), not O(n^2)


def int_arg(x, n):
    return x * n


def test_grad_wrt_int_argument_is_a_located_error():
    with pytest.raises(NonDifferentiableError) as ei:
        pb.grad(int_arg, argnums=1)(1.5, 3)
    assert ei.value.loc is not None and ei.value.loc.file.endswith("test_api.py")
    assert "float" in str(ei.value)


def vector_out(x):
    return x * 2.0


def test_grad_of_non_scalar_is_a_located_error():
    with pytest.raises(PullbackError) as ei:
        pb.grad(vector_out)(np.ones(3))
    assert ei.value.loc is not None and ei.value.loc.file.endswith("test_api.py")
    assert "scalar" in str(ei.value)


def test_missing_rule_names_the_primitive(monkeypatch):
    from pullback.errors import MissingRuleError
    from pullback.ir.prims import TABLE

    monkeypatch.setattr(TABLE.rows["tanh"], "vjp", None)

    def f(x):
        return np.tanh(x) * 2.0

    with pytest.raises(MissingRuleError) as ei:
        pb.grad(f)(0.3)
    assert "tanh" in str(ei.value) and "vjp" in str(ei.value)


def scaled(x, scale=2.0, power=2):
    return scale * np.sum(x ** power)


def test_keyword_arguments_bind_like_python():
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(pb.grad(scaled)(x, scale=3.0), 6.0 * x)
    np.testing.assert_allclose(pb.jit(scaled)(x, power=3), 2.0 * np.sum(x ** 3))
    with pytest.raises(PullbackError):
        pb.grad(scaled)(x, bogus=1)


def branchy_reads(x):
    total = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            total = total + np.sin(x[i]) * x[i]
        else:
            total = total + x[i] ** 2
    return total


def test_adjoint_of_reads_in_a_loop_is_updated_in_place():
    """The readable reverse code accumulates x_adj[i] in place: no per-iteration array copy."""
    src = pb.derivative_source(branchy_reads, np.linspace(-1.0, 1.0, 6))
    loop_body = src[src.index("# adjoint of"):]
    assert re.search(r"x_adj\w*\[i\w*\] \+=", loop_body), src
    assert loop_body.count(".copy()") <= 1, src
    x = np.linspace(-1.0, 1.0, 6)
    np.testing.assert_allclose(pb.grad(branchy_reads)(x), np.where(x > 0, np.sin(x) + x * np.cos(x), 2 * x))


def test_transformations_are_cached_per_function():
    """`pb.grad(f)(x)` in a Python loop stages f once per signature."""
    from pullback import frontend

    calls = []
    real = frontend.stage

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    x = np.array([0.5, 1.5])
    import pullback.api as api

    old = frontend.stage
    frontend.stage = counting
    try:
        for _ in range(3):
            pb.grad(poly)(x)
            pb.jvp(poly, (x,), (x,))
    finally:
        frontend.stage = old
    assert len(calls) <= 2, len(calls)
    assert pb.grad(poly) is pb.grad(poly)
    assert api.grad(poly, argnums=0) is not api.grad(poly, argnums=(0,))


def row_prods(x):
    return np.sum(np.prod(x, axis=1))


def test_prod_derivative_is_exact_at_zeros():
    x = np.array([[1.0, 0.0, 2.0], [3.0, 4.0, 5.0], [0.0, 0.0, 7.0]])
    want = np.array([[0.0, 2.0, 0.0], [20.0, 15.0, 12.0], [0.0, 0.0, 0.0]])
    for backend in ("interp", "pysource"):
        np.testing.assert_allclose(pb.grad(row_prods, backend=backend)(x), want)
    _, t = pb.jvp(row_prods, (x,), (np.ones_like(x),))
    assert np.isclose(t, want.sum())


def test_default_backend_is_numba(monkeypatch):
    """Users get compiled code: with no backend and no $PULLBACK_BACKEND, numba runs it."""
    monkeypatch.delenv("PULLBACK_BACKEND", raising=False)

    def f(x):
        s = 0.0
        for i in range(x.shape[0]):
            s = s + np.sin(x[i]) * x[i]
        return s

    g = pb.grad(f)
    x = np.linspace(0.1, 1.0, 7)
    np.testing.assert_allclose(g(x), np.cos(x) * x + np.sin(x), rtol=1e-12)
    assert g._jit.backend == "numba"
    from pullback.backends import numba_backend

    assert numba_backend.last_compile_seconds() is not None


def test_pullback_backend_variable_selects_and_is_checked(monkeypatch):
    monkeypatch.setenv("PULLBACK_BACKEND", "interp")
    assert pb.jit(lambda x: x * 2.0).backend == "interp"
    monkeypatch.setenv("PULLBACK_BACKEND", "fortran")
    with pytest.raises(PullbackError, match="PULLBACK_BACKEND='fortran' is not a backend"):
        pb.jit(lambda x: x * 2.0)


def test_ufuncs_are_transformed_once():
    """A NumPy ufunc has no `__dict__` for `_cached`: its transformations are kept apart, so a
    top-level `pb.jvp(np.cos, ...)` in a loop stages once (it staged on every call)."""
    from pullback import api

    x = np.array([0.1, 0.7, 2.0])
    assert pb.grad(np.sin) is pb.grad(np.sin)
    for _ in range(3):
        out, tan = pb.jvp(np.cos, (x,), (np.ones(3),))
        np.testing.assert_allclose(tan, -np.sin(x))
    (jvp_t,) = [t for k, t in api._UFUNC_TRANSFORMS[np.cos]["__pullback_transforms__"].items() if k[0] == "jvp"]
    assert len(jvp_t._jit._cache) == 1
