"""Careless input at the public API: each gives a PullbackError naming the
caller's file and line with a hint (or the right answer), never an internal
exception (note [api-errors])."""
import functools
import sys

import numpy as np
import pytest

import pullback as pb
from pullback import api
from pullback.errors import InternalError, NonDifferentiableError, PullbackError

HERE = __file__


def expect(call, exc=PullbackError, line=None):
    """`call()` raises `exc` located at this test's line (the caller's, by default)."""
    line = line or sys._getframe(1).f_lineno
    with pytest.raises(PullbackError) as ei:
        call()
    err = ei.value
    assert isinstance(err, exc), f"{type(err).__name__}: {err}"
    assert err.loc is not None, str(err)
    assert err.loc.file == HERE and err.loc.line == line, str(err)
    assert err.hint, str(err)
    assert f"{HERE}:{line}" in str(err)
    return err


def f(x):
    return np.sum(x * x)


def two(x, y):
    return x * y


def sq(x):
    return x * x


def rec(x, n):
    if n <= 0:
        return x
    return rec(x, n - 1) + 0.0


X = np.array([1.0, 2.0, 3.0])


def test_bad_argnums():
    assert "argnums" in str(expect(lambda: pb.grad(f, argnums="x")(X)))
    expect(lambda: pb.grad(two, argnums=1.5)(1.0, 2.0))
    expect(lambda: pb.grad(two, argnums=(0, 0))(1.0, 2.0))
    expect(lambda: pb.grad(two, argnums=())(1.0, 2.0))
    expect(lambda: pb.grad(two, argnums=(0, "y"))(1.0, 2.0))
    expect(lambda: pb.grad(two, argnums=True)(1.0, 2.0))
    expect(lambda: pb.value_and_grad(two, argnums=[0, 0])(1.0, 2.0))
    expect(lambda: pb.jacobian(sq, argnums=(0, 0.5))(X))   # a tuple of ints is fine (issue 10); floats are not
    expect(lambda: pb.hessian(f, argnums="0")(X))


def test_argnums_out_of_range_or_repeated_after_wrapping():
    # known only at the call: located at the function's definition
    err = expect(lambda: pb.grad(two, argnums=2)(1.0, 2.0), line=two.__code__.co_firstlineno)
    assert "argnums=2" in str(err)
    expect(lambda: pb.grad(two, argnums=(1, -1))(1.0, 2.0), line=two.__code__.co_firstlineno)


def test_negative_argnums_count_from_the_end():
    assert pb.grad(two, argnums=-1)(3.0, 2.0) == 3.0
    assert pb.grad(two, argnums=[0, 1])(3.0, 2.0) == (2.0, 3.0)


def test_integers_beyond_64_bits():
    assert "64 bits" in str(expect(lambda: pb.jit(two)(1.0, 2 ** 63)))
    expect(lambda: pb.jit(two)(1.0, -2 ** 63 - 1))
    expect(lambda: pb.jit(sq)(np.uint64(2 ** 63 + 5)))
    expect(lambda: pb.jit(f)(np.array([2 ** 63 + 1], dtype=np.uint64)))
    assert pb.jit(two)(1.0, 2 ** 63 - 1) == float(2 ** 63 - 1)
    jf = pb.jit(two)
    jf(1.0, 3)  # warm: the next call takes the fast path
    expect(lambda: jf(1.0, 2 ** 64))


def test_wrong_number_of_arguments_and_keywords():
    expect(lambda: pb.grad(two)(1.0))
    expect(lambda: pb.grad(two)(1.0, 2.0, 3.0))
    expect(lambda: pb.grad(two)(1.0, z=2.0))
    expect(lambda: pb.jit(two)(1.0))
    assert pb.grad(two)(1.0, y=2.0) == 2.0


def test_none_argument_is_an_empty_pytree():
    with pytest.raises(PullbackError) as ei:
        pb.grad(two)(1.0, None)
    assert ei.value.loc.file == HERE and ei.value.loc.line == two.__code__.co_firstlineno + 1


@pytest.mark.parametrize("bad", ["a", object(), 1 + 2j, np.ones(2, complex), np.array([1.0, None]),
                                 [1.0, "a"], {"a": 1.0, 1: 2.0}, b"bytes"])
def test_arguments_that_cannot_be_traced(bad):
    expect(lambda: pb.grad(two)(1.0, bad))


def test_containers_that_contain_themselves_or_nest_too_deep():
    cyc = [1.0]
    cyc.append(cyc)
    expect(lambda: pb.jit(lambda l: l[0] * 2.0)(cyc))
    deep = 1.0
    for _ in range(1000):
        deep = [deep]
    expect(lambda: pb.jit(lambda l: 1.0)(deep))


def test_grad_with_respect_to_bool_or_int_arrays():
    expect(lambda: pb.grad(f)(np.ones(3, bool)), NonDifferentiableError, line=f.__code__.co_firstlineno)
    expect(lambda: pb.grad(sq)(3), NonDifferentiableError, line=sq.__code__.co_firstlineno)


def test_things_that_are_not_functions():
    expect(lambda: pb.grad(3)(1.0))
    expect(lambda: pb.jit(None))
    expect(lambda: pb.jit(dict)(1.0))
    expect(lambda: pb.grad(len)(X))
    expect(lambda: pb.grad(print)(1.0))
    expect(lambda: pb.jit(print)(1.0))
    assert pb.grad(np.sin, backend="interp")(1.0) == np.cos(1.0)   # ufuncs are functions too (issue 10)


def test_bad_modes_backends_and_options():
    expect(lambda: pb.jacobian(sq, mode="x"))
    expect(lambda: pb.derivative_source(f, X, mode="sideways"))
    expect(lambda: pb.grad(f, backend="gpu")(X))
    expect(lambda: pb.jit(f, static_argnums="a"))
    expect(lambda: pb.jit(two, static_argnums=5)(1.0, 2.0))
    expect(lambda: pb.jvp(sq, 1.0, 1.0))
    expect(lambda: pb.jvp(sq, (1.0,), 1.0))
    expect(lambda: pb.memory_report(f, "a"))


def test_bad_results():
    none = pb.jit(lambda x: None)(1.0)
    assert none is None
    with pytest.raises(PullbackError) as ei:
        pb.jit(lambda x: "abc")(1.0)
    assert ei.value.loc is not None and ei.value.loc.file == HERE


def test_vjp_with_a_bad_cotangent():
    _, vjp_fn = pb.vjp(sq, 2.0)
    expect(lambda: vjp_fn("a"))
    assert vjp_fn(1.0) == (4.0,)


def test_unusual_but_valid_arrays_give_the_right_answer():
    m = np.arange(16.0).reshape(4, 4)
    np.testing.assert_allclose(pb.grad(f)(m[:, 1]), 2 * m[:, 1])                 # non-contiguous
    ro = np.array([1.0, 2.0])
    ro.setflags(write=False)
    np.testing.assert_allclose(pb.grad(f)(ro), 2 * ro)                          # read-only
    assert pb.grad(f)(np.array(2.0)) == 4.0                                     # 0-d
    g = pb.grad(f)(np.array([np.nan, np.inf, 1.0]))                             # NaN/inf propagate
    assert np.isnan(g[0]) and np.isinf(g[1]) and g[2] == 2.0
    np.testing.assert_allclose(pb.jit(f)(np.ones(3, np.int32)), 3)              # other int widths


def test_callable_objects_partials_and_methods():
    class Scale:
        def __init__(self, a):
            self.a = a

        def __call__(self, x):
            return x * self.a

        def m(self, x):
            return x * self.a

    assert pb.grad(Scale(3.0))(1.0) == 3.0
    assert pb.grad(functools.partial(two, 2.0))(5.0) == 2.0
    assert pb.grad(functools.partial(two, y=4.0))(5.0) == 4.0
    # a bound method's transformations are per instance, never shared through the function
    assert pb.grad(Scale(2.0).m)(1.0) == 2.0
    assert pb.grad(Scale(5.0).m)(1.0) == 5.0


def test_recursion_deeper_than_the_stack_at_run_time():
    for backend in ("pysource", "interp"):
        with pytest.raises(PullbackError) as ei:
            pb.jit(rec, backend=backend)(1.0, 200000)
        assert ei.value.loc is not None and ei.value.hint
    assert pb.jit(rec, backend="pysource")(1.0, 10) == 1.0


def test_out_of_memory_is_a_located_error():
    huge = np.broadcast_to(np.ones(1), (10 ** 13,))
    err = expect(lambda: pb.jit(lambda x: np.sum(x * x))(huge))
    assert "memory" in str(err)


def test_internal_errors_are_located_and_debuggable(monkeypatch):
    def broken(name, prog):
        def run(*leaves):
            raise KeyError("boom")
        return run

    monkeypatch.setattr(api, "_runner", broken)
    err = expect(lambda: pb.jit(lambda x: x + 1.0)(1.0), InternalError)
    assert "KeyError" in str(err) and "PULLBACK_DEBUG" in err.hint
    assert err.__traceback__ is not None and err.__cause__ is None
    monkeypatch.setenv("PULLBACK_DEBUG", "1")
    with pytest.raises(KeyError):
        pb.jit(lambda x: x + 2.0)(1.0)


def ones_neg(x):
    return np.sum(np.ones(-1)) + x  # neg


def zeros_huge(x):
    return np.sum(np.zeros((10 ** 10, 10 ** 10))) + x  # huge


def test_bad_and_absurd_shapes_are_located_shape_errors():
    from pullback.errors import ShapeError

    expect(lambda: pb.jit(ones_neg)(1.0), ShapeError, line=ones_neg.__code__.co_firstlineno + 1)
    expect(lambda: pb.jit(zeros_huge)(1.0), ShapeError, line=zeros_huge.__code__.co_firstlineno + 1)
    expect(lambda: pb.grad(f)(np.ones((1,) * 33)))


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_matrix_and_masked_arrays_are_refused():
    # np.matrix's '*' is a matrix product: staging it elementwise would be a silent wrong answer
    err = expect(lambda: pb.jit(sq)(np.matrix([[1.0, 2.0], [3.0, 4.0]])))
    assert "matrix" in str(err)
    expect(lambda: pb.grad(f)(np.ma.array([1.0, 2.0], mask=[0, 1])))
    jf = pb.jit(sq)
    jf(np.ones((2, 2)))  # a warm plain-array signature must not let a matrix through the fast path
    expect(lambda: jf(np.matrix(np.ones((2, 2)))))


def grad_of_local_lambda(x):
    return pb.grad(lambda y: y * x)(x)  # nested


def nested_bad_argnums(x):
    return pb.grad(sq, argnums="x")(x)  # nested


def test_grad_of_a_local_lambda_works():
    assert pb.grad(grad_of_local_lambda, backend="interp")(1.5) == pytest.approx(1.0)


@pytest.mark.parametrize("fn", [nested_bad_argnums])
def test_api_error_inside_staged_code_is_located_at_the_staged_line(fn):
    """An API call made by staged code is located at the staged statement, not at
    the outer call that started staging."""
    import inspect

    lines, first = inspect.getsourcelines(fn)
    line = first + next(k for k, t in enumerate(lines) if "# nested" in t)
    expect(lambda: pb.grad(fn, backend="interp")(1.5), line=line)
