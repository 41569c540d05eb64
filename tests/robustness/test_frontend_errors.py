"""Staging-time refusals: assert on traced values, async/generator functions,
reductions of empty arrays with no identity, and recursion deeper than Python's
stack. Each is a located PullbackError with a hint, never a silent drop or a
bare internal exception."""
import inspect

import numpy as np
import pytest

import pullback as pb
from pullback.errors import PullbackError, ShapeError, StagingError, UnsupportedSyntaxError

HERE = __file__


def line_of(fn, needle):
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, text in enumerate(lines) if needle in text)


def expect(exc, call, fn, needle):
    with pytest.raises(exc) as ei:
        call()
    err = ei.value
    assert err.loc is not None and err.loc.file == HERE, str(err)
    assert err.loc.line == line_of(fn, needle), str(err)
    assert err.hint, str(err)
    return err


# -- assert -------------------------------------------------------------------------------

def traced_assert(x):
    assert x > 0  # traced
    return x * 2.0


def traced_assert_in_expr(x, n):
    assert n > 0 and np.sum(x) > 0, "positive"  # traced
    return np.sum(x)


def concrete_assert(x):
    assert x.shape[0] == 3, "need three"  # concrete
    return np.sum(x * x)


def failing_assert_in_traced_branch(x):
    if x > 0:
        assert x.ndim == 1  # inside
        y = x
    else:
        y = -x
    return y


def test_assert_on_traced_value_is_refused():
    err = expect(StagingError, lambda: pb.grad(traced_assert)(1.0), traced_assert, "# traced")
    assert "assert" in str(err) and "traced" in str(err)
    expect(StagingError, lambda: pb.jit(traced_assert_in_expr)(np.ones(2), 3), traced_assert_in_expr, "# traced")


def test_concrete_assert_is_checked_while_staging():
    np.testing.assert_allclose(pb.grad(concrete_assert)(np.ones(3)), 2 * np.ones(3))
    err = expect(StagingError, lambda: pb.grad(concrete_assert)(np.ones(2)), concrete_assert, "# concrete")
    assert "need three" in str(err)


def test_failing_concrete_assert_in_traced_branch_is_refused():
    expect(UnsupportedSyntaxError, lambda: pb.jit(failing_assert_in_traced_branch)(1.0),
           failing_assert_in_traced_branch, "# inside")


# -- not plain functions --------------------------------------------------------------------

async def coroutine(x):  # async def
    return x


async def async_gen(x):  # async gen
    yield x


def generator(x):
    yield x  # yield here


def test_async_and_generator_functions_are_refused():
    err = expect(UnsupportedSyntaxError, lambda: pb.grad(coroutine)(1.0), coroutine, "# async def")
    assert "async" in str(err)
    expect(UnsupportedSyntaxError, lambda: pb.jit(async_gen)(1.0), async_gen, "# async gen")
    err = expect(UnsupportedSyntaxError, lambda: pb.jit(generator)(1.0), generator, "# yield here")
    assert "generator" in str(err)


def calls_generator_helper(x):
    return generator(x)  # helper call


def test_generator_helper_called_with_traced_data_is_refused():
    with pytest.raises(UnsupportedSyntaxError) as ei:
        pb.jit(calls_generator_helper)(1.0)
    assert ei.value.loc.line == line_of(generator, "# yield here")


# -- reductions with no identity ----------------------------------------------------------------

def np_max(x):
    return np.max(x)  # max


def method_min(x):
    return x.min() + 1.0  # min


def arg_extrema(x):
    return np.argmax(x) + np.argmin(x)  # arg


def max_over_axis(x):
    return np.sum(np.max(x, axis=1))  # axis


@pytest.mark.parametrize("fn,needle,op", [(np_max, "# max", "max"), (method_min, "# min", "min"),
                                          (arg_extrema, "# arg", "argmax")])
def test_empty_reduction_without_identity_is_a_shape_error(fn, needle, op):
    err = expect(ShapeError, lambda: pb.jit(fn)(np.ones(0)), fn, needle)
    assert f"zero-size array to reduction operation {op} which has no identity" in str(err)


def test_empty_reduction_along_an_axis():
    expect(ShapeError, lambda: pb.grad(max_over_axis)(np.ones((2, 0))), max_over_axis, "# axis")
    # reducing a non-empty axis of an empty array is fine, as in NumPy
    assert pb.jit(lambda x: np.max(x, axis=0))(np.ones((3, 0))).shape == (0,)
    np.testing.assert_allclose(pb.grad(max_over_axis)(np.array([[1.0, 3.0]])), [[0.0, 1.0]])


# -- recursion deeper than Python's stack -----------------------------------------------------

def static_depth(x, n):
    if n == 0:
        return x
    return static_depth(x, n - 1) * 1.0  # recurse


def test_deep_static_recursion_while_staging_is_a_staging_error():
    with pytest.raises(PullbackError) as ei:
        pb.grad(static_depth, argnums=0)(1.0, 100000)
    err = ei.value
    assert not isinstance(err, RecursionError)
    assert err.loc is not None and err.loc.file == HERE and err.hint
    assert "recursion" in str(err)
    # a shallow one still works afterwards
    assert pb.grad(static_depth)(2.0, 5) == 1.0


def any_all(x):
    return (x > 0).any(), (x > 0).all(), np.any(x > 5), np.all(x > 5, axis=0)


@pytest.mark.parametrize("x", [np.ones(3), np.zeros(0), np.array([-1.0, 6.0])])
def test_any_all_functions_and_methods_including_empty_arrays(x):
    assert pb.jit(any_all)(x) == any_all(x)


# -- boolean scalar indices -----------------------------------------------------------------

def bool_scalar_index(x, b):
    return np.sum(x[b])  # bool index


def bool_condition_index(x):
    return x[x[0] > 0]  # bool index


@pytest.mark.parametrize("fn, args", [(bool_scalar_index, (np.ones(3), True)),
                                      (bool_scalar_index, (np.ones(3), np.bool_(False))),
                                      (bool_condition_index, (np.ones(3),))])
def test_bool_scalar_index_refused(fn, args):
    # NumPy reads x[True] as a mask that adds an axis; reading it as position 1 was a silent wrong answer
    err = expect(UnsupportedSyntaxError, lambda: pb.jit(fn, backend="interp")(*args), fn, "# bool index")
    assert "int(" in err.hint
