import numpy as np
import pytest

from _helpers import check, ops_of, run_staged
from pullback.errors import StagingError
from pullback.frontend import stage

rng = np.random.default_rng(1)
X = rng.normal(size=(4, 3))
V = rng.normal(size=5)


# -- if ---------------------------------------------------------------------------

def test_if_traced_merges_variables():
    def f(x):
        y = 1.0
        if x > 0:
            y = x * 2
            z = 3.0
        elif x > -1:
            y = x - 1
            z = 4.0
        else:
            z = 5.0
        return y + z

    for v in (0.5, -0.5, -2.0):
        st = check(f, v)
    assert "If" in ops_of(st)


def test_if_concrete_stages_one_branch():
    def f(x, flag):
        if flag:
            return np.sin(x)
        return np.cos(x)

    got, st = run_staged(f, 0.3, True, static_argnums=(1,))
    assert "If" not in ops_of(st) and "cos" not in ops_of(st)
    assert np.isclose(got, np.sin(0.3))


def test_if_shape_based_condition_is_concrete():
    def f(x):
        if x.ndim == 1 and x.shape[0] > 2:
            return x.sum()
        return x[0]

    st = check(f, V)
    assert "If" not in ops_of(st)


def test_if_dtype_promotion_between_branches():
    def f(x):
        if x > 0:
            y = 1
        else:
            y = x * 0.5
        return y

    check(f, 2.0, dtype=False)
    check(f, -2.0)


def test_if_on_array_elements_in_loop():
    def f(v):
        out = np.zeros_like(v)
        for i in range(v.shape[0]):
            if v[i] > 0:
                out[i] = v[i]
            else:
                out[i] = -2 * v[i]
        return out

    check(f, V)


def test_ifexp():
    def f(x):
        return (x if x > 0 else -x) + (1.0 if np.ndim(x) == 0 else 2.0)

    check(f, -1.5)
    check(f, 1.5)


def test_early_return_in_traced_if():
    def f(x):
        if x > 1:
            return x * 10
        y = x + 1
        if y < 0:
            return -y
        return y * 2

    for v in (2.0, 0.5, -3.0):
        check(f, v)


def test_nested_early_return():
    def f(x, y):
        if x > 0:
            if y > 0:
                return x * y
            x = x + 1
        else:
            y = y * 2
        return x + y

    for a in (1.0, -1.0):
        for b in (1.0, -1.0):
            check(f, a, b)


# -- for ----------------------------------------------------------------------------

def test_for_static_range_is_ir_loop():
    def f(x):
        s = 0.0
        for i in range(x.shape[0]):
            s = s + x[i] * i
        return s

    st = check(f, V)
    assert "ForForm" in ops_of(st)


def test_for_promotes_int_accumulator():
    def f(x):
        s = 0
        for i in range(len(x)):
            s += x[i]
        return s

    st = check(f, V)
    assert "ForForm" in ops_of(st)


def test_for_range_start_stop_step():
    def f(x):
        s = 0.0
        for i in range(1, 5, 2):
            s += x[i]
        for i in range(4, 0, -1):
            s = s * 0.5 + x[i]
        return s

    check(f, V)


def test_for_traced_bounds():
    def f(x, n, m):
        s = 0.0
        for i in range(n):
            s = s + x[i]
        for i in range(m, n):
            s = s * 2 + x[i]
        for i in range(n, 0, -2):
            s = s - x[i]
        return s

    for n, m in ((4, 1), (0, 0), (2, 3)):
        check(f, V, n, m)


def test_for_over_array_rows():
    def f(x):
        acc = np.zeros(3)
        for row in x:
            acc = acc + row * row
        return acc

    st = check(f, X)
    assert "ForForm" in ops_of(st)


def test_for_over_python_list_unrolls():
    def f(x):
        ws = [1.0, 2.0, 3.0]
        s = 0.0
        for w in ws:
            s += w * x
        for k, w in enumerate(ws):
            s += k * w
        for a, b in zip(ws, [x, x, x]):
            s += a * b
        return s

    st = check(f, 1.5)
    assert "ForForm" not in ops_of(st)


def test_enumerate_zip_over_arrays():
    def f(x, v):
        s = 0.0
        for i, r in enumerate(x):
            s += i * r.sum()
        for a, b in zip(v, v[::-1]):
            s += a * b
        return s

    check(f, X, V)


def test_for_unroll_fallback_on_python_list_index():
    def f(x):
        coeffs = [1.0, -2.0, 3.0]
        out = []
        s = 0.0
        for i in range(3):
            s += coeffs[i] * x[i]
            out.append(s)
        return s, out

    st = check(f, V)
    assert "ForForm" not in ops_of(st)


def test_for_unroll_fallback_on_shape_change():
    def f(x):
        y = x
        for i in range(2):
            y = np.concatenate([y, y])
        return y

    check(f, V)


def test_nested_loops_and_matrix_updates():
    def f(a):
        n, m = a.shape
        out = np.zeros((m, n))
        for i in range(n):
            for j in range(m):
                out[j, i] = a[i, j] * (i + j)
        return out

    check(f, X)


def test_loop_variable_defined_in_body_not_usable_after():
    def f(x, n):
        for i in range(n):
            t = x * i
        return t

    with pytest.raises(StagingError) as ei:
        stage(f, (1.0, 3))
    assert ei.value.loc is not None and ei.value.loc.line > 0


def test_loop_over_carried_tuple_and_list():
    def f(x):
        state = (x, 0.0)
        acc = [0.0, 1.0]
        for i in range(3):
            a, b = state
            state = (a * 0.5, b + a)
            acc[0] = acc[0] + b
        return state, acc

    check(f, 2.0)


# -- while ---------------------------------------------------------------------------

def test_while_traced_condition():
    def f(x):
        n = 0
        while x > 1.0:
            x = x / 2
            n += 1
        return x, n

    st = check(f, 37.0)
    assert "WhileForm" in ops_of(st)
    check(f, 0.5)


def test_while_carrying_traced_state_is_an_ir_loop():
    """`t = 0.0; while t < T:` simulations stay loops, even with a concrete condition."""
    def f(x):
        k = 8
        while k > 1:
            x = x * 2
            k = k // 2
        return x

    st = check(f, 1.5)
    assert "WhileForm" in ops_of(st)


def test_while_over_python_values_runs_at_staging_time():
    def f(x):
        k, n = 8, 1
        while k > 1:
            k = k // 2
            n += 1
        return np.zeros(n) + x  # n stays a Python int, usable as a shape

    st = check(f, 1.5)
    assert "WhileForm" not in ops_of(st)


def test_while_newton():
    def f(a):
        x = a
        it = 0
        while np.abs(x * x - a) > 1e-10 and it < 100:
            x = 0.5 * (x + a / x)
            it += 1
        return x

    check(f, 2.0)


# -- break / continue ----------------------------------------------------------------

def test_break_in_for():
    def f(x):
        s = 0.0
        for i in range(x.shape[0]):
            if x[i] < 0:
                break
            s += x[i]
        return s

    check(f, np.array([1.0, 2.0, -1.0, 4.0]))
    check(f, np.array([1.0, 2.0, 1.0, 4.0]))


def test_continue_in_for():
    def f(x):
        s = 0.0
        for v in x:
            if v < 0:
                continue
            s += v
        return s

    check(f, np.array([1.0, -2.0, 3.0, -4.0]))


def test_break_in_while_and_else():
    def f(x):
        i = 0
        s = 0.0
        while i < 10:
            s += x
            if s > 5:
                break
            i += 1
        else:
            s = -1.0
        return s, i

    check(f, 1.0)
    check(f, 0.1)


def test_break_concrete_in_unrolled_loop():
    def f(x):
        s = 0.0
        for w in [1.0, 2.0, 3.0, 4.0]:
            if w > 2.5:
                break
            s += w * x
        return s

    check(f, 2.0)


# -- return in loops -------------------------------------------------------------------

def test_return_inside_loop():
    def f(x):
        for i in range(x.shape[0]):
            if x[i] > 2:
                return x[i] * 10
        return -1.0

    check(f, np.array([1.0, 3.0, 5.0]))
    check(f, np.array([1.0, 0.0, 1.0]))


def test_return_inside_while():
    def f(x):
        i = 0
        while i < x.shape[0]:
            if x[i] < 0:
                return i
            i += 1
        return -1

    check(f, np.array([1.0, 3.0, -5.0]))
    check(f, np.array([1.0, 3.0, 5.0]))


def test_return_inside_nested_loops():
    def f(x):
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                if x[i, j] > 1.0:
                    return x[i, j], i
        return 0.0, -1

    check(f, X)
    check(f, X * 0.0)


def test_while_promotes_dtype():
    def f(x):
        n = 0
        while x > 1.0:
            x = x / 2
            n = n + 0.5
        return n

    check(f, 37.0)


def test_traced_loop_shape_change_is_error():
    def f(x, n):
        y = x
        for i in range(n):
            y = np.concatenate([y, y])
        return y

    with pytest.raises(StagingError) as ei:
        stage(f, (np.ones(2), 3))
    assert "shape" in str(ei.value) and ei.value.loc is not None


def test_slice_assignment_and_for_over_concrete_array():
    def f(v):
        a = np.zeros(5)
        a[1:3] = v[:2]
        a[3:] = 1.0
        s = 0.0
        for w in np.array([1.0, 2.0]):
            s = s + w * v[0]
        return a, s

    check(f, V)


def test_return_tuple_from_loop_with_promotion():
    def f(x):
        for i in range(x.shape[0]):
            if x[i] > 0:
                return i, x[i]
        return -1, 0

    check(f, np.array([-1.0, 2.0]), dtype=False)
    check(f, np.array([-1.0, -2.0]), dtype=False)


def test_traced_flag_break_with_concrete_list():
    def f(x):
        out = 0.0
        for w in [1.0, 2.0, 3.0]:
            out = out + w * x
            if out > 2.5:
                break
        return out

    check(f, 1.0)
    check(f, 0.1)
