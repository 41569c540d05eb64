"""Interprocedural activity (note [call-activity]): a call's result varies only
with the arguments it depends on (`activity.CallDeps`), and a loop's return
sweep carries only the adjoints that can be non-zero (`activity.useful_in_loop`).
A descent whose iterates do not depend on the differentiated variable (its
inner gradient reads only the iterate) is then not reversed at all: GradBench's
saddle, whose inner maximisation over y starts from a constant."""
import numpy as np
import pytest

import pullback as pb
from pullback.ir.core import Apply, Loop, Prim
from pullback.ir.traverse import iter_lets
from pullback.passes.activity import CallDeps, useful_in_loop


def f(x, y):
    return (x[0] ** 2 + x[1] ** 2) - (y[0] ** 2 + y[1] ** 2)


def ascend(x, start):
    """y climbs f(x, .) from `start`; its steps read grad_y f, which does not involve x."""
    y = start
    i = 0
    while i < 10 and y[0] > -100.0:
        g = pb.grad(lambda y: f(x, y))(y)
        y = y + 0.1 * g
        i += 1
    return f(x, y)


def stores(prog):
    return [st for fn in prog.funcs for st in iter_lets(fn.body)
            if isinstance(st.exp, Prim) and st.exp.op == "store_new"]


def loops(prog):
    return [st for fn in prog.funcs for st in iter_lets(fn.body) if isinstance(st.exp, Loop)]


X, S = np.array([1.0, 2.0]), np.array([0.5, 0.25])


@pytest.mark.parametrize("backend", ["interp", "pysource", "numba"])
def test_an_inactive_descent_is_not_reversed(backend):
    g = pb.jit(pb.grad(ascend), backend=backend)
    np.testing.assert_array_equal(g(X, S), 2.0 * X)      # d/dx f(x, y*) with y* independent of x
    prog = pb.jit(pb.grad(ascend), backend="interp").staged(X, S).prog
    assert not stores(prog)                   # no tape
    assert len(loops(prog)) == 1              # the forward descent only, no return sweep


def test_the_descent_is_reversed_when_its_start_is_differentiated():
    g = pb.grad(ascend, argnums=(0, 1))
    gx, gs = pb.jit(g, backend="interp")(X, S)
    np.testing.assert_allclose(gx, 2.0 * X)
    np.testing.assert_allclose(gs, -2.0 * S * 0.8 ** 20, rtol=1e-12)   # y* = 0.8^10 start
    assert stores(pb.jit(g, backend="interp").staged(X, S).prog)


def compared(x):
    """`best` varies with x but only meets comparisons: its adjoint is always zero."""
    y = x
    best = x * x
    i = 0
    while i < 10 and best > -1.0:
        y = 0.9 * y
        if x * y < best:
            best = x * y
        i += 1
    return y


def test_a_parameter_only_compared_gets_no_adjoint():
    prog = pb.jit(pb.grad(compared), backend="interp").staged(0.7).prog
    np.testing.assert_allclose(pb.jit(pb.grad(compared), backend="interp")(0.7), 0.9 ** 10, rtol=1e-14)
    rev = [st for st in loops(prog) if "adj" in " ".join(p.name for p in st.exp.params)]
    assert rev
    for st in rev:
        assert not any(p.name.startswith("best") for p in st.exp.params), [p.name for p in st.exp.params]


def two(a, b):
    u = np.sin(a) * 2.0
    v = np.cos(b) * 3.0
    return u, v


def first(a, b):
    u, v = two(a, b)
    return u * u + v


def test_call_summaries():
    prog = pb.jit(first, backend="interp").staged(0.3, 0.4).prog
    deps = CallDeps(prog)
    assert deps("two") == (frozenset({0}), frozenset({1}))
    for be in ("interp", "numba"):
        ga, gb = pb.jit(pb.grad(first, argnums=(0, 1)), backend=be)(0.3, 0.4)
        np.testing.assert_allclose(ga, 8.0 * np.sin(0.3) * np.cos(0.3), rtol=1e-14)
        np.testing.assert_allclose(gb, -3.0 * np.sin(0.4), rtol=1e-14)


def hop(x, n):                       # recursion: the summary of a cycle is conservative
    if n <= 0:
        return x
    return hop(np.sin(x) + 0.5 * x, n - 1)


def test_recursive_callee():
    prog = pb.jit(hop, backend="interp").staged(0.3, 4).prog
    deps = CallDeps(prog)
    assert deps(prog.entry) == (frozenset({0}),)
    g = pb.jit(pb.grad(hop), backend="interp")
    h = 1e-6
    fd = (pb.jit(hop, backend="interp")(0.3 + h, 4) - pb.jit(hop, backend="interp")(0.3 - h, 4)) / (2 * h)
    np.testing.assert_allclose(g(0.3, 4), fd, rtol=1e-8)


def test_a_custom_rule_is_trusted_over_the_body():
    """A straight-through rule: the body's value does not depend on x, the rule says
    it does. The summary must not drop the rule's gradient."""
    @pb.custom_vjp
    def through(x):
        return np.floor(x) * 0.0 + 1.0

    through.defvjp(lambda x: (through(x), None), lambda res, g: (5.0 * g,))

    def use(x):
        return 2.0 * through(x)

    for be in ("interp", "numba"):
        assert pb.jit(pb.grad(use), backend=be)(0.3) == 10.0


def test_useful_in_loop_follows_branches():
    """Only y's adjoint is carried: `best` reaches y through the branch's condition alone."""
    fwd = [st for st in loops(pb.jit(compared, backend="interp").staged(0.7).prog)]
    assert len(fwd) == 1
    e = fwd[0].exp
    varied = set(e.params) | {p for p in e.init if hasattr(p, "name")}
    ys = [k for k, p in enumerate(e.params) if p.name.startswith("y")]
    useful, _ = useful_in_loop(e, ys, varied)
    assert {e.params[k].name[:1] for k in useful} == {"y"}


def test_saddle_rr_has_no_tape():
    """GradBench's saddle, both derivatives reverse: the inner maximisation starts
    from the input, not from the outer variable, so no descent is reversed."""
    from pullback.gradbench.modules import saddle

    jitted = saddle.FUNCTIONS["rr"].__closure__[0].cell_contents
    prog = jitted.staged(np.array([1.0, 1.0])).prog
    assert not stores(prog)
    assert not [st for fn in prog.funcs for st in iter_lets(fn.body)
                if isinstance(st.exp, Apply) and st.exp.func.startswith("argmin") and "vjp" in st.exp.func]


@pytest.mark.parametrize("backend", ["interp", "numba"])
def test_forward_mode_keeps_the_zero_tangents_of_calls(backend):
    """jacfwd of the same descent: the inner gradient's call does not depend on x, so
    its result's tangent stays a symbolic zero and the loop carries no tangent of y."""
    np.testing.assert_array_equal(pb.jit(pb.jacfwd(ascend), backend=backend)(X, S), 2.0 * X)
    prog = pb.jit(pb.jacfwd(ascend), backend="interp").staged(X, S).prog
    (st,) = loops(prog)
    assert not [p.name for p in st.exp.params if p.name.startswith("y") and "tan" in p.name]


def ascend_n(x, start, n):
    y = start
    i = 0
    while i < n and y[0] > -100.0:
        g = pb.grad(lambda y: f(x, y))(y)
        y = y + 0.01 * g
        i += 1
    return f(x, y)


def _work(jitted, *args):
    from pullback.backends import interp

    ops = interp.OpCount()
    interp.run(jitted.staged(*args).prog, *args, ops=ops)
    return ops.work


def test_the_gradient_costs_a_constant_times_the_primal():
    # cheap gradients, at two trip counts: the descent runs forward once, nothing is reversed
    ratio = {n: _work(pb.jit(pb.grad(ascend_n)), X, S, n) / _work(pb.jit(ascend_n), X, S, n) for n in (10, 40)}
    assert max(ratio.values()) < 1.6, ratio
    assert abs(ratio[40] - ratio[10]) < 0.2, ratio
