"""pb.grad's vjp starts its activity analysis from the arguments in `argnums` only
(note [entry-activity]): the others get no adjoints, and values that depend on
them alone are not varied, so loops need not save them."""
import numpy as np
import pytest

import pullback as pb
from pullback.ir.core import Prim
from pullback.ir.traverse import iter_lets


def poly_fit(x, t, s):
    acc = np.zeros(t.shape[0])
    p = np.ones(t.shape[0])
    for j in range(x.shape[0]):
        acc = acc + x[j] * p
        p = p * t
    r = s - acc
    return 0.5 * np.sum(r * r)


def rec(x, y, n):
    """Recursive: its calls swap the arguments."""
    if n == 0:
        return np.sum(x * y * y)
    return rec(y, x, n - 1) + np.sum(x)


_ARGS = (np.linspace(0.2, 1.0, 5), np.linspace(-1.0, 1.0, 30), np.sign(np.linspace(-1.0, 1.0, 30)))


def _pushes(g, *args):
    prog = g._jit.staged(*args).prog
    return sum(1 for fn in prog.funcs for st in iter_lets(fn.body)
               if isinstance(st.exp, Prim) and st.exp.op == "store_push")


@pytest.mark.parametrize("argnums", [0, 1, 2, (0, 1), (0, 2), (2, 0)])
def test_gradients_equal_the_all_argument_gradient(argnums):
    full = pb.grad(poly_fit, argnums=(0, 1, 2), backend="interp")(*_ARGS)
    got = pb.grad(poly_fit, argnums=argnums, backend="interp")(*_ARGS)
    want = full[argnums] if isinstance(argnums, int) else tuple(full[i] for i in argnums)
    for a, b in zip((got,) if isinstance(argnums, int) else got, (want,) if isinstance(argnums, int) else want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    for backend in ("pysource", "numba"):
        again = pb.grad(poly_fit, argnums=argnums, backend=backend)(*_ARGS)
        for a, b in zip((again,) if isinstance(argnums, int) else again, (got,) if isinstance(argnums, int) else got):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_inactive_arguments_need_no_saves():
    """With t inactive, p = t**j is not varied: the loop's return sweep runs forward
    (note [forward-return-sweep]) and saves nothing; with t active it saves p."""
    assert _pushes(pb.grad(poly_fit, argnums=0, backend="interp"), *_ARGS) == 0
    assert _pushes(pb.grad(poly_fit, argnums=(0, 1), backend="interp"), *_ARGS) > 0


@pytest.mark.parametrize("checkpoint", ["store", "joint"])
def test_recursive_entry_keeps_every_argument_active(checkpoint):
    """rec's calls swap x and y, so x's gradient flows through y's position in the
    recursive calls: those must keep every argument active (staging makes them a
    function apart from the entry; vjp_prog also refuses the restriction for a
    recursive or split entry). Both with split mode and under Joint."""
    from pullback.checkpointing import Joint

    cp = Joint() if checkpoint == "joint" else "store"
    x, y = np.array([0.5, -1.0]), np.array([2.0, 0.3])
    for n in (1, 2, 3):
        gx = pb.grad(rec, argnums=0, backend="interp", checkpoint=cp)(x, y, n)
        gxy = pb.grad(rec, argnums=(0, 1), backend="interp", checkpoint=cp)(x, y, n)
        np.testing.assert_allclose(gx, gxy[0], rtol=1e-12)
        eps = 1e-6
        fd = np.array([(rec(x + eps * e, y, n) - rec(x - eps * e, y, n)) / (2 * eps) for e in np.eye(2)])
        np.testing.assert_allclose(gx, fd, rtol=1e-6, atol=1e-8)


def test_mixed_second_derivative_through_a_restricted_gradient():
    """d/dt of (d/dx f): the inner gradient treats t as inactive, the outer jvp still
    sees how x's adjoint depends on t."""
    def f(x, t):
        return np.sum(np.sin(x * t) * t)

    x, t = np.array([0.3, 0.7]), np.array([1.1, -0.4])
    H = pb.jacobian(pb.grad(f, argnums=0, backend="interp"), argnums=1, mode="fwd", backend="interp")(x, t)
    # d/dx_i f = cos(x_i t_i) t_i^2, so d/dt_j is diagonal
    want = np.diag(-np.sin(x * t) * x * t ** 2 + 2 * t * np.cos(x * t))
    np.testing.assert_allclose(H, want, rtol=1e-10, atol=1e-12)


def test_derivative_source_with_argnums():
    """derivative_source(argnums=0) shows the gradient pb.grad(argnums=0) runs: with t
    inactive the loop saves nothing; without argnums every float argument is active."""
    only_x = pb.derivative_source(poly_fit, *_ARGS, argnums=0)
    every = pb.derivative_source(poly_fit, *_ARGS)
    assert "p_saved" not in only_x and "p_saved" in every
    assert "def poly_fit_jvp" in pb.derivative_source(poly_fit, *_ARGS, mode="fwd", argnums=(0, 2))


@pytest.mark.parametrize("bad, says", [(5, "argnums=5 but poly_fit got 3 arguments"),
                                       ("x", "argnums must be an int or a tuple of ints"),
                                       ((0, -4), "argnums=-4 but poly_fit got 3 arguments")])
def test_derivative_source_bad_argnums(bad, says):
    with pytest.raises(pb.PullbackError) as ei:
        pb.derivative_source(poly_fit, *_ARGS, argnums=bad)
    assert says in str(ei.value) and "test_entry_activity.py" in str(ei.value)
