"""Every user-facing error is a PullbackError naming the user's file and line, with a hint."""
import inspect

import numpy as np
import pytest

from _helpers import check
from pullback.errors import PullbackError, ShapeError, StagingError, UnsupportedSyntaxError
from pullback.frontend import stage

HERE = __file__


def _line_of(fn, needle):
    lines, first = inspect.getsourcelines(fn)
    for k, l in enumerate(lines):
        if needle in l:
            return first + k
    raise AssertionError(needle)


def expect(exc, fn, args, needle, static_argnums=(), where=None):
    with pytest.raises(exc) as ei:
        stage(fn, args, static_argnums=static_argnums)
    err = ei.value
    assert isinstance(err, PullbackError)
    assert err.loc is not None, str(err)
    assert err.loc.file == HERE, err.loc
    assert err.loc.line == _line_of(where or fn, needle), str(err)
    assert err.hint, str(err)
    assert f"{err.loc.line}" in str(err)
    return err


# -- unsupported syntax --------------------------------------------------------------

def test_class_def():
    def f(x):
        class A:  # here
            scale = 2.0
        return x * A.scale

    expect(UnsupportedSyntaxError, f, (1.0,), "# here")


def test_try():
    def f(x):
        try:  # here
            y = x
        except Exception:
            y = 0.0
        return y

    expect(UnsupportedSyntaxError, f, (1.0,), "# here")


def test_with():
    def f(x):
        with open("/dev/null"):  # here
            x = x + 1.0
        return x

    expect(UnsupportedSyntaxError, f, (1.0,), "# here")


def test_generator():
    def f(x):
        yield x  # here

    expect(UnsupportedSyntaxError, f, (1.0,), "# here")


def test_global_nonlocal():
    def f(x):
        global SOMETHING  # here
        return x

    expect(UnsupportedSyntaxError, f, (1.0,), "# here")

    def g(x):
        y = x

        def h():
            nonlocal y  # here
            return y
        return h()

    expect(UnsupportedSyntaxError, g, (1.0,), "nonlocal y  # here")


def test_del():
    def f(x):
        y = x
        del y  # here
        return x

    expect(UnsupportedSyntaxError, f, (1.0,), "# here")


def test_async():
    def f(x):
        async def g():  # here
            return 1
        return x

    expect(UnsupportedSyntaxError, f, (1.0,), "# here")


def test_comprehension_over_traced():
    # short ones are unrolled (tests/user_suite/test_fixes.py); past the unroll cap, a located error
    def f(x):
        return sum([v * 2 for v in x])  # here

    expect(UnsupportedSyntaxError, f, (np.ones(100),), "# here")


def test_star_args_traced():
    def g(*a):
        return a[0]

    def f(x):
        return g(*x)  # here

    expect(UnsupportedSyntaxError, f, (np.ones(3),), "# here")


def test_set_literal():
    def f(x):
        s = {1, 2}  # here
        return x

    expect(UnsupportedSyntaxError, f, (1.0,), "# here")


# -- shapes ----------------------------------------------------------------------------

def test_shape_mismatch_add():
    def f(a, b):
        c = a * 2
        return c + b  # here

    err = expect(ShapeError, f, (np.ones(3), np.ones(4)), "# here")
    assert "(3,)" in str(err) and "(4,)" in str(err)


def test_shape_mismatch_matmul():
    def f(a, b):
        return a @ b  # here

    expect(ShapeError, f, (np.ones((2, 3)), np.ones((2, 3))), "# here")


def test_shape_mismatch_in_helper_points_into_helper():
    def helper(a, b):
        return a - b  # here

    def f(a, b):
        return helper(a, b)

    expect(ShapeError, f, (np.ones(3), np.ones(2)), "# here", where=helper)


def test_branch_shape_mismatch_used_later():
    def f(x, c):
        if c > 0:
            y = x
        else:
            y = x[:2]
        return y * 2  # here

    expect(StagingError, f, (np.ones(3), 1.0), "# here")


def test_index_out_of_bounds():
    def f(x):
        return x[5]  # here

    expect(ShapeError, f, (np.ones(3),), "# here")


# -- values needed at staging time ------------------------------------------------------

def test_traced_shape():
    def f(x, n):
        return np.zeros(n) + x  # here

    err = expect(StagingError, f, (1.0, 3), "# here")
    assert "static" in err.hint


def test_python_list_indexed_by_traced():
    def f(x, i):
        ws = [1.0, 2.0, 3.0]
        return ws[i] * x  # here

    expect(StagingError, f, (1.0, 1), "# here")


def test_print_traced():
    def f(x):
        print(x)  # here
        return x

    expect(StagingError, f, (1.0,), "# here")


def test_bool_of_traced_in_python_context():
    def f(x):
        flags = [True, False]
        return flags[bool(x > 0)]  # here

    expect(StagingError, f, (1.0,), "# here")


def test_variable_defined_in_one_branch():
    def f(x):
        if x > 0:
            y = x * 2
        return y  # here

    err = expect(StagingError, f, (1.0,), "# here")
    assert "only one branch" in str(err)


def test_traced_range_is_fine():
    def f(x):
        s = 0.0
        for i in range(int(x)):
            s += i
        return s

    check(f, 4.0)


# -- unknown functions ---------------------------------------------------------------

def test_unknown_numpy_function():
    def f(x):
        return np.fft.fft(x)  # here

    err = expect(StagingError, f, (np.ones(4),), "# here")
    assert "fft" in str(err)


def test_c_function_without_source():
    import operator

    def f(x):
        return operator.methodcaller("foo")(x)  # here

    expect(StagingError, f, (1.0,), "# here")


def test_unknown_attribute_on_traced():
    def f(x):
        return x.searchsorted(0.5)  # here

    err = expect(StagingError, f, (np.ones(3),), "# here")
    assert "searchsorted" in str(err)


def test_undefined_name():
    def f(x):
        return x + undefined_thing  # noqa: F821  # here

    expect(StagingError, f, (1.0,), "# here")


def test_internal_python_error_is_wrapped():
    def f(x):
        d = {}
        return d["missing"] + x  # here

    err = expect(StagingError, f, (1.0,), "# here")
    assert "KeyError" in str(err)


def _list_arith(v):
    return np.sum(v * v)


def test_list_argument_in_array_arithmetic():
    """A Python list argument is a pytree of scalars, not an array: the error says
    to pass an array (GradBench's saddle called with [1.0, 1.0] failed with only
    Python's TypeError)."""
    err = expect(StagingError, _list_arith, ([1.0, 2.0],), "np.sum(v * v)")
    assert "np.asarray" in err.hint
