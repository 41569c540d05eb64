"""pb.custom_jvp / pb.custom_vjp (issue 10): user rules replace the body's derivative in the
modes they serve, at every order, called from staged code and at the top level, with pytrees
and nondiff_argnums, on every backend. The rules below are deliberately *not* the body's true
derivative (a factor 3, a different function), so a test fails if the body were differentiated."""
import functools
import os

import numpy as np
import pytest

import pullback as pb
from pullback.ir.parser import parse_prog
from pullback.ir.printer import print_prog

BACKENDS = ["interp", "pysource", "numba"]


# -- custom_jvp ---------------------------------------------------------------------------

@pb.custom_jvp
def s3(x):
    return np.sin(x)


@s3.defjvp
def s3_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return s3(x), 3.0 * np.cos(x) * t      # "derivative" 3 cos x; the rule calls s3 itself


@pb.custom_jvp
def softplus(x):
    return np.log1p(np.exp(x))


@softplus.defjvp
def softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softplus(x), t / (1.0 + np.exp(-x))


def sum_s3(x):
    return np.sum(s3(x) * 2.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_custom_jvp_both_modes(backend):
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(pb.jit(sum_s3, backend=backend)(x), 2 * np.sum(np.sin(x)))
    np.testing.assert_allclose(pb.grad(sum_s3, backend=backend)(x), 6 * np.cos(x))
    y, t = pb.jvp(s3, (x,), (np.array([1.0, 2.0, 0.5]),), backend=backend)
    np.testing.assert_allclose(y, np.sin(x))
    np.testing.assert_allclose(t, 3 * np.cos(x) * [1.0, 2.0, 0.5])
    np.testing.assert_allclose(pb.grad(softplus, backend=backend)(0.3), 1 / (1 + np.exp(-0.3)))


def test_custom_jvp_top_level_and_second_order():
    assert pb.grad(s3, backend="interp")(0.4) == pytest.approx(3 * np.cos(0.4))
    out, vjp_fn = pb.vjp(s3, 0.4, backend="interp")
    assert out == pytest.approx(np.sin(0.4))
    assert vjp_fn(2.0)[0] == pytest.approx(6 * np.cos(0.4))
    # the rule is differentiated for higher orders: d/dx 3 cos x = -3 sin x, in every composition
    assert pb.grad(pb.grad(s3), backend="interp")(0.4) == pytest.approx(-3 * np.sin(0.4))
    assert pb.hessian(s3, backend="interp")(0.4) == pytest.approx(-3 * np.sin(0.4))
    _, t = pb.jvp(pb.grad(s3), (0.4,), (1.0,), backend="interp")
    assert t == pytest.approx(-3 * np.sin(0.4))
    x = np.array([0.1, 0.7])
    np.testing.assert_allclose(pb.hessian(sum_s3, backend="interp")(x), np.diag(-6 * np.sin(x)))


def test_custom_jvp_in_loop_and_nested_call():
    def f(x, n):
        acc = 0.0
        for i in range(n):
            acc = acc + s3(x * i)
        return acc
    g = pb.grad(f, backend="interp")(0.3, 4)
    assert g == pytest.approx(sum(3 * np.cos(0.3 * i) * i for i in range(4)))


def test_custom_jvp_defjvps():
    @pb.custom_jvp
    def h(x, y):
        return x * y

    h.defjvps(lambda tx, ans, x, y: 2.0 * tx * y, None)   # only x moves, with a factor 2
    gx, gy = pb.grad(h, argnums=(0, 1), backend="interp")(3.0, 5.0)
    assert (gx, gy) == (10.0, 0.0)
    assert pb.jvp(h, (3.0, 5.0), (1.0, 1.0), backend="interp")[1] == 10.0


def test_custom_jvp_nondiff_argnums_and_pytrees():
    @functools.partial(pb.custom_jvp, nondiff_argnums=(0,))
    def apply(fn, xs):
        a, b = xs
        return fn(a) + b

    @apply.defjvp
    def apply_jvp(fn, primals, tangents):
        (a, b), = primals
        (ta, tb), = tangents
        return apply(fn, (a, b)), 5.0 * ta + tb    # fn'(a) replaced by 5

    def loss(a, b):
        return apply(np.tanh, (a, b)) * 2.0
    assert pb.grad(loss, argnums=(0, 1), backend="interp")(0.2, 0.1) == (10.0, 2.0)
    assert pb.jvp(loss, (0.2, 0.1), (1.0, 0.0), backend="pysource")[1] == 10.0


# -- custom_vjp ---------------------------------------------------------------------------

@pb.custom_vjp
def f2(x, y):
    return np.sin(x) * y


def f2_fwd(x, y):
    return f2(x, y), (np.cos(x), np.sin(x), y)


def f2_bwd(res, g):
    c, s, y = res
    return 3.0 * c * y * g, s * g       # d/dx scaled by 3


f2.defvjp(f2_fwd, f2_bwd)


@pytest.mark.parametrize("backend", BACKENDS)
def test_custom_vjp_reverse(backend):
    gx, gy = pb.grad(f2, argnums=(0, 1), backend=backend)(0.4, 2.0)
    assert gx == pytest.approx(3 * np.cos(0.4) * 2.0) and gy == pytest.approx(np.sin(0.4))

    def use(x):
        return np.sum(f2(x, x) ** 2)
    x = np.array([0.4, 1.1])
    f = np.sin(x) * x
    np.testing.assert_allclose(pb.grad(use, backend=backend)(x), 2 * f * (3 * np.cos(x) * x + np.sin(x)))


def test_custom_vjp_second_order_and_vjp_fn():
    # reverse over reverse differentiates fwd and bwd: d/dx (3 cos x * y) = -3 sin x * y
    g2 = pb.grad(lambda x: pb.grad(f2)(x, 2.0), backend="interp")(0.4)
    assert g2 == pytest.approx(-3 * np.sin(0.4) * 2.0)
    out, vjp_fn = pb.vjp(f2, 0.4, 2.0, backend="interp")
    assert out == pytest.approx(np.sin(0.4) * 2)
    cx, cy = vjp_fn(1.5)
    assert cx == pytest.approx(4.5 * np.cos(0.4) * 2) and cy == pytest.approx(1.5 * np.sin(0.4))


def test_custom_vjp_pytrees_none_and_nondiff():
    @functools.partial(pb.custom_vjp, nondiff_argnums=(1,))
    def scale(xs, k):
        a, b = xs
        return (a * k, b * k)

    def scale_fwd(xs, k):
        return scale(xs, k), None

    def scale_bwd(k, res, ct):
        ca, cb = ct
        return ((ca * k * 2.0, None),)    # b gets a zero cotangent; a's doubled

    scale.defvjp(scale_fwd, scale_bwd)

    def loss(a, b):
        u, v = scale((a, b), 3.0)
        return np.sum(u) + np.sum(v)
    a, b = np.array([1.0, 2.0]), np.array([0.5])
    ga, gb = pb.grad(loss, argnums=(0, 1), backend="interp")(a, b)
    np.testing.assert_array_equal(ga, [6.0, 6.0])
    np.testing.assert_array_equal(gb, [0.0])


def test_custom_vjp_closure_over_traced_value():
    def outer(x, w):
        def mul_body(y):
            return y * w

        mul = pb.custom_vjp(mul_body)     # (decorators on nested defs are not staged)

        def fwd(y):
            return mul(y), None

        def bwd(res, g):
            return (g * w * 10.0,)

        mul.defvjp(fwd, bwd)
        return mul(x)
    gx, gw = pb.grad(outer, argnums=(0, 1), backend="interp")(2.0, 3.0)
    assert gx == 30.0      # the rule
    assert gw == 0.0       # the captured value has no derivative through the custom function


def test_custom_vjp_forward_mode_is_a_located_error():
    def uses(x):
        return f2(x, 2.0) + 1.0
    with pytest.raises(pb.PullbackError) as e:
        pb.jvp(uses, (0.4,), (1.0,), backend="interp")
    msg = str(e.value)
    assert "custom_vjp" in msg and "custom_jvp" in msg
    assert os.path.basename(__file__) in msg and "f2(x, 2.0)" in msg


# -- errors ---------------------------------------------------------------------------------

def test_rule_errors_are_located():
    @pb.custom_vjp
    def two(x, y):
        return x * y

    two.defvjp(lambda x, y: (x * y, (x, y)), lambda res, g: (g,))   # one cotangent for two arguments
    with pytest.raises(pb.PullbackError, match="tuple of 2 cotangent") as e:
        pb.grad(two, backend="interp")(1.0, 2.0)
    assert os.path.basename(__file__) in str(e.value)

    @pb.custom_jvp
    def vec(x):
        return x * 2.0

    vec.defjvp(lambda p, t: (vec(p[0]), np.ones(3)))    # tangent of the wrong shape
    with pytest.raises(pb.PullbackError, match="shape") as e:
        pb.jvp(vec, (np.ones(2),), (np.ones(2),), backend="interp")
    assert os.path.basename(__file__) in str(e.value)

    @pb.custom_jvp
    def norule(x):
        return x
    with pytest.raises(pb.PullbackError, match="has no rule") as e:
        pb.grad(lambda x: norule(x) * 2.0, backend="interp")(1.0)
    assert os.path.basename(__file__) in str(e.value)


def test_outside_staging_is_the_function():
    assert s3(0.5) == np.sin(0.5)
    assert f2(0.5, 2.0) == np.sin(0.5) * 2.0


# -- the IR ---------------------------------------------------------------------------------

def test_rules_attribute_round_trips_and_survives_inlining():
    from pullback.frontend import stage
    from pullback.passes.inline import inline_small

    prog = stage(pb.grad(sum_s3), (np.ones(2),)).prog
    assert any(f.rules for f in prog.funcs)
    text = print_prog(prog)
    assert "rules(jvp=" in text
    assert parse_prog(text) == prog
    custom = {f.name for f in prog.funcs if f.rules}
    prim = stage(sum_s3, (np.ones(2),)).prog
    called = {st.exp.func for f in inline_small(prim).funcs for st in f.body.stmts if hasattr(st.exp, "func")}
    assert custom & called or {f.name for f in prim.funcs if f.rules} & called


def _rec(x, n):
    if n == 0:
        return x
    return np.sin(_rec(x, n - 1))


@pb.custom_vjp
def crec(x, n):
    return _rec(x, n)


crec.defvjp(lambda x, n: (crec(x, n), x), lambda x, g: (g * 100.0, None))


def test_custom_function_whose_body_recurses():
    # the body's recursion (split mode for its callers) must not replace the rule
    assert pb.grad(lambda x, n: crec(x, n) * 1.0, backend="interp")(0.3, 3) == 100.0
    assert pb.jit(crec, backend="interp")(0.3, 2) == pytest.approx(np.sin(np.sin(0.3)))


def test_derivative_source_shows_the_rule():
    src = pb.derivative_source(sum_s3, np.ones(2))
    assert "cos" in src and "s3" in src
    src = pb.derivative_source(lambda x: f2(x, 2.0), 0.4)
    assert "f2" in src


def _chain(x, n):
    acc = x
    for i in range(n):
        acc = s3(acc) + f2(acc, 0.5)
    return acc


def test_cheap_gradient_through_custom_functions_in_a_loop():
    from pullback.backends import interp
    from pullback.frontend import stage

    def ratio(n):
        ops = []
        for fn in (_chain, pb.grad(_chain)):
            c = interp.OpCount()
            interp.run(stage(fn, (0.3, n)).prog, 0.3, n, ops=c)
            ops.append(c.stmts)
        return ops[1] / ops[0]
    r1, r2 = ratio(np.int64(20)), ratio(np.int64(400))
    assert r2 < 8 and abs(r1 - r2) < 0.1 * r1


@pytest.mark.parametrize("backend", ["pysource", pytest.param("numba", marks=pytest.mark.slow)])
def test_second_order_on_compiled_backends(backend):
    assert pb.grad(pb.grad(s3), backend=backend)(0.4) == pytest.approx(-3 * np.sin(0.4))
    assert pb.hessian(s3, backend=backend)(0.4) == pytest.approx(-3 * np.sin(0.4))
    g2 = pb.grad(lambda x: pb.grad(f2)(x, 2.0), backend=backend)(0.4)
    assert g2 == pytest.approx(-3 * np.sin(0.4) * 2.0)
