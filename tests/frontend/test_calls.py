import numpy as np
import pytest

from _helpers import check, ops_of, run_staged
from pullback.errors import StagingError
from pullback.frontend import StagingContext, Traced, stage
from pullback.ir.core import Apply

SCALE = 3.0


def helper(x, y=2.0, *, z=1.0):
    return x * y + z + SCALE


def pair(x):
    return x * 2, {"neg": -x, "n": 3}


def make_scaler(k):
    def scaler(x):
        return x * k
    return scaler


def test_helper_calls_become_funcs():
    def f(x):
        a = helper(x)
        b = helper(x, 3.0, z=-1.0)
        c = helper(y=0.5, x=x)
        d, e = pair(x)
        return a + b + c + d + e["neg"] * e["n"]

    st = check(f, 1.5)
    names = [fn.name for fn in st.prog.funcs]
    assert names[0] == "f" and "helper" in names and "pair" in names
    assert "Apply" in ops_of(st)


def test_same_signature_reuses_func():
    def f(x, y):
        return helper(x) + helper(y)

    st = check(f, 1.0, 2.0)
    assert sum(1 for fn in st.prog.funcs if fn.name.startswith("helper")) == 1


def test_closure_helper():
    s3 = make_scaler(3.0)

    def f(x):
        return s3(x) + make_scaler(2.0)(x)

    check(f, np.arange(3.0))


def fact(n, x):
    if n <= 1:
        return x
    return n * fact(n - 1, x)


def test_static_recursion_specialises():
    def f(x):
        return fact(4, x)

    check(f, 1.5)


def det(m):
    n = m.shape[0]
    if n == 1:
        return m[0, 0]
    total = 0.0
    for j in range(n):
        minor = np.concatenate([m[1:, :j], m[1:, j + 1:]], axis=1)
        total = total + (-1) ** j * m[0, j] * det(minor)
    return total


def test_det_by_minors():
    a = np.random.default_rng(3).normal(size=(4, 4))
    got, st = run_staged(det, a)
    assert np.isclose(got, np.linalg.det(a))


def tree_sum(t):
    if isinstance(t, tuple):
        return tree_sum(t[0]) + tree_sum(t[1])
    return t * 1.0


def test_tree_sum_nested_tuple():
    def f(t):
        return tree_sum(t)

    check(f, ((1.0, 2.0), (3.0, (4.0, 5.0))))


def power_rec(x, n):
    if n == 0:
        return 1.0
    return x * power_rec(x, n - 1)


def test_traced_recursion_becomes_ir_recursion():
    st = check(power_rec, 1.5, 5)
    check(power_rec, 2.0, 0)
    f = st.prog.func("power_rec")

    def applies(b):
        out = []
        for s in b.stmts:
            if isinstance(s.exp, Apply):
                out.append(s.exp.func)
            for sub in ("then", "else_", "body"):
                if hasattr(s.exp, sub):
                    out += applies(getattr(s.exp, sub))
        return out

    assert "power_rec" in applies(f.body)


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def test_recursion_int_result():
    for n in (0, 1, 7):
        check(fib, n)


def sum_list_rec(x, i):
    if i >= x.shape[0]:
        return 0.0
    return x[i] + sum_list_rec(x, i + 1)


def test_recursion_over_array_index():
    check(sum_list_rec, np.arange(5.0), 0)


def bad_rec(n):
    if n > 0:
        return bad_rec(n - 1) * 2.0
    return 1.0


def test_recursion_without_base_case_first_errors():
    with pytest.raises(StagingError) as ei:
        stage(bad_rec, (3,))
    assert "base case" in str(ei.value)
    assert ei.value.loc.line > 0


def test_helper_with_kwargs_and_pytrees():
    def inner(p, scale=1.0):
        return {"a": p[0] * scale, "b": p[1] + scale}

    def f(x, y):
        r = inner((x, y), scale=2.0)
        return r["a"] + r["b"]

    check(f, np.ones(3), 2.0)


def test_helper_called_with_concrete_args_runs_natively():
    def table(n):
        return [i * 0.5 for i in range(n)]

    def f(x):
        return x * sum(table(4))

    check(f, 2.0)


# -- __pullback_stage__ hooks -------------------------------------------------------

class Doubler:
    """A nested-transformation-like object: stages `fn` as a Func and applies it twice."""

    def __init__(self, fn):
        self.fn = fn

    def __pullback_stage__(self, ctx, args, kwargs):
        assert isinstance(ctx, StagingContext)
        atoms, tree = ctx.to_atoms(args)
        name, out_tree, ret_types = ctx.stage_function(self.fn, [a.type for a in atoms], tree)
        assert name in [f.name for f in ctx.funcs()]
        outs = ctx.apply(name, atoms, ret_types)
        once = ctx.from_atoms(outs, out_tree)
        atoms2, _ = ctx.to_atoms((once,))
        outs2 = ctx.apply(name, atoms2, ret_types)
        assert ctx.loc is not None
        b = ctx.builder
        return ctx.from_atoms([b.emit("add", outs2[0], 1.0)], out_tree)

    def __call__(self, x):
        return self.fn(self.fn(x)) + 1.0


def sq(x):
    return x * x


def test_hook_inside_function():
    d = Doubler(sq)

    def f(x):
        return d(x) * 2.0

    check(f, 1.5)


def test_hook_as_top_level():
    check(Doubler(sq), 1.5)


def test_hook_add_func_and_fresh_name():
    from pullback.ir.builder import Builder
    from pullback.ir.core import Func

    class AddsFunc:
        def __pullback_stage__(self, ctx, args, kwargs):
            name = ctx.fresh_func_name("derived")
            b = Builder()
            p = b.fresh("x", args[0].type)
            r = b.emit("mul", p, 3.0)
            ctx.add_func(Func(name, (p,), b.body([r]), (r.type,)))
            (out,) = ctx.apply(name, [args[0].atom], [r.type])
            return Traced(out)

        def __call__(self, x):
            return x * 3.0

    h = AddsFunc()

    def f(x):
        return h(x) + 1.0

    st = check(f, 2.0)
    assert any(fn.name.startswith("derived") for fn in st.prog.funcs)


def test_top_level_varargs_and_defaults():
    def f(x, *rest, scale=2.0):
        return x * scale + sum(rest)

    check(f, 1.0, 2.0, 3.0)


def test_reversed_range_is_loop():
    def f(x):
        s = 0.0
        for i in reversed(range(x.shape[0])):
            s = s * 0.5 + x[i]
        return s

    st = check(f, np.arange(4.0))
    assert "ForForm" in ops_of(st)


def powv(x, n):
    if n == 0:
        return 1.0
    return x * powv(x, n - 1)


def test_recursion_scalar_base_case_broadcasts():
    check(powv, np.array([1.0, 2.0, 3.0]), 3)
