"""In-place updates of arrays inside called functions are seen by the caller, through every name
bound to the array, as in Python (Note [argument-mutation]); where pullback cannot follow an
alias it raises a located error instead of returning a wrong value."""
from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.testing import check_grads

BACKENDS = ["interp", "pysource"]


def _agree(f, *args, backend):
    want = f(*(a.copy() if isinstance(a, np.ndarray) else a for a in args))
    got = pb.jit(f, backend=backend)(*args)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# -- helpers that update their argument ------------------------------------------------------

def put(a, x):
    a[1] = x


def put_ret(a, x):
    a[1] = x
    return a


def put_rec(a, x, i):
    if i == 0:
        return a
    a[i] = x * i
    return put_rec(a, x, i - 1)


def bump(a, x):
    a[0] += x
    a[...] = a * 2.0


def twice(a, x):
    bump(a, x)
    bump(a, x * x)


def g_put(x):
    a = np.zeros(3)
    put(a, x)
    return np.sum(a * a) + a[1]


def g_put_ret(x):
    a = np.zeros(3)
    put_ret(a, x)  # the result is ignored: the update alone must be seen
    return np.sum(a)


def g_rec(x, n):
    a = np.zeros(4)
    put_rec(a, x, n)
    return np.sum(a * a)


def g_nested(x):
    a = np.ones(2)
    twice(a, x)
    return a[0] * a[1]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("f,args", [(g_put, (0.5,)), (g_put_ret, (0.5,)), (g_rec, (0.5, np.int64(3))),
                                    (g_nested, (0.7,))], ids=["put", "put_ret", "recursive", "nested"])
def test_update_in_helper_is_seen(f, args, backend):
    _agree(f, *args, backend=backend)


def test_repro_values_and_grad():
    assert pb.jit(g_put_ret, backend="interp")(0.5) == 0.5
    assert pb.grad(g_put_ret, backend="interp")(0.5) == 1.0
    assert pb.grad(g_put, backend="pysource")(0.5) == pytest.approx(2.0)


@pytest.mark.parametrize("mode", ["fwd", "rev"])
@pytest.mark.parametrize("f,args", [(g_put, (0.3,)), (g_rec, (0.5, np.int64(3))), (g_nested, (0.7,))],
                         ids=["put", "recursive", "nested"])
def test_derivatives(f, args, mode):
    check_grads(f, args, modes=(mode,), order=1, argnums=(0,), backend="interp")


def test_derivatives_pysource_order2():
    check_grads(g_nested, (0.7,), order=2, backend="pysource")


# -- aliases in the caller -------------------------------------------------------------------

def g_alias(x):
    a = np.zeros(3)
    b = a
    put(a, x)
    return np.sum(b) * 3.0 + a[1]


def g_alias_in_list(x):
    a = np.zeros(3)
    box = [a, 2.0]
    put(a, x)
    return box[0][1] * box[1]


def g_result_is_argument(x):
    a = np.zeros(2)
    b = put_ret(a, x)
    b[0] = x * 3.0  # b is a: this changes a too
    return a[0] + a[1]


def g_copy_is_not_alias(x):
    a = np.zeros(3)
    b = a.copy()
    c = np.array(a)
    put(a, x)
    return np.sum(b) + np.sum(c) + np.sum(a)


def g_same_array_twice(x):
    a = np.zeros(2)

    def both(p, q, x):
        p[0] = x
        return q[0]

    return both(a, a, x)


def two(p, q, x):
    p[0] = x
    return q[0] * 2.0


def g_same_array_twice_ir(x):
    a = np.zeros(2)
    return two(a, a, x) + a[0]


def g_local_alias(x):
    a = np.zeros(3)
    b = a
    b[2] = x
    b += 1.0
    return np.sum(a)


def g_closure(x):
    a = np.zeros(3)

    def set_free(v):
        a[0] = v  # the enclosing function's array

    set_free(x)
    return a[0] * 2.0


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("f", [g_alias, g_alias_in_list, g_result_is_argument, g_copy_is_not_alias,
                               g_same_array_twice, g_same_array_twice_ir, g_local_alias, g_closure])
def test_aliases(f, backend):
    _agree(f, 0.5, backend=backend)


# -- containers holding arrays ---------------------------------------------------------------

def put_first(lst, x):
    lst[0][2] = x * 2.0


def put_dict(d, x):
    d["w"][0] += x


def g_list_arg(x):
    a = np.zeros(3)
    put_first([a, 1.0], x)
    return np.sum(a)


def g_dict_arg(x):
    w = np.ones(2)
    d = {"w": w, "n": 3}
    put_dict(d, x)
    return w[0] + d["w"][0]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("f", [g_list_arg, g_dict_arg])
def test_container_arguments(f, backend):
    _agree(f, 0.5, backend=backend)
    assert pb.grad(f, backend=backend)(0.5) == pytest.approx(2.0)


def replace_first(lst, x):
    lst[0] = lst[0] * x  # replaces the list element: not an update of the array


def g_replace(x):
    a = np.ones(2)
    lst = [a]
    replace_first(lst, x)
    return np.sum(lst[0])


def test_list_element_replaced_in_helper_is_an_error():
    with pytest.raises(pb.PullbackError) as e:
        pb.jit(g_replace, backend="interp")(0.5)
    assert "test_argument_mutation.py" in str(e.value)


# -- control flow ----------------------------------------------------------------------------

def g_loop(x):
    a = np.zeros(3)
    b = a
    for i in range(3):
        put(a, x * i)
        a[0] += a[1]
    return np.sum(b)


def g_loop_traced(x, n):
    a = np.zeros(3)
    b = a
    for i in range(n):
        put(b, x * i)
        a[0] += a[1]
    return np.sum(b) + np.sum(a)


def g_if(x):
    a = np.zeros(3)
    b = a
    if x > 0:
        put(a, x)
    else:
        a[2] = x
    return np.sum(b * b)


def cond_put(a, x):
    if x > 0:
        a[0] = x
    return x * 2.0


def g_if_in_helper(x):
    a = np.ones(2)
    y = cond_put(a, x)
    return y + np.sum(a)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("x", [0.5, -0.5])
def test_control_flow(x, backend):
    for f in (g_loop, g_if, g_if_in_helper):
        _agree(f, x, backend=backend)
    _agree(g_loop_traced, x, np.int64(4), backend=backend)


def g_ambiguous(x):
    a = np.zeros(2)
    c = np.ones(2)
    if x > 0:
        b = a
    else:
        b = c
    b[0] = x  # changes a or c, depending on x
    return np.sum(a) + np.sum(c)


def test_alias_decided_at_run_time_is_an_error():
    with pytest.raises(pb.PullbackError) as e:
        pb.jit(g_ambiguous, backend="interp")(0.5)
    msg = str(e.value)
    assert "test_argument_mutation.py" in msg and "b[0] = x" in msg


W = np.arange(3.0)


def g_global(x):
    w = W
    w[0] = x
    return np.sum(w)


def test_update_of_a_global_array_is_an_error():
    with pytest.raises(pb.PullbackError) as e:
        pb.jit(g_global, backend="interp")(0.5)
    assert "w[0] = x" in str(e.value)
    assert W[0] == 0.0


# -- the user's arrays are never changed -----------------------------------------------------

def scale_in_place(v, s):
    v *= s
    v[0] = s


def f_updates_input(v, s):
    scale_in_place(v, s)
    return np.sum(v * v)


@pytest.mark.parametrize("backend", BACKENDS)
def test_inputs_are_not_mutated(backend):
    v = np.array([1.0, 2.0, 3.0])
    keep = v.copy()
    want = f_updates_input(v.copy(), 0.5)
    assert pb.jit(f_updates_input, backend=backend)(v, 0.5) == pytest.approx(want)
    g = pb.grad(f_updates_input, argnums=(0, 1), backend=backend)(v, 0.5)
    np.testing.assert_array_equal(v, keep)
    eps = 1e-6
    num = (f_updates_input(v.copy(), 0.5 + eps) - f_updates_input(v.copy(), 0.5 - eps)) / (2 * eps)
    assert g[1] == pytest.approx(num, rel=1e-6)


def test_numba():
    pytest.importorskip("numba")
    _agree(g_rec, 0.5, np.int64(3), backend="numba")
    assert pb.grad(g_put, backend="numba")(0.5) == pytest.approx(2.0)
    v = np.array([1.0, 2.0, 3.0])
    assert pb.jit(f_updates_input, backend="numba")(v, 0.5) == pytest.approx(f_updates_input(v.copy(), 0.5))
    np.testing.assert_array_equal(v, [1.0, 2.0, 3.0])


# -- more aliasing cases -----------------------------------------------------------------------

def g_alias_changes_in_loop(x):
    a = np.zeros(3)
    b = np.ones(3)
    s = 0.0
    for i in range(3):  # b is a from the second iteration on: unrolled
        a[i] = x
        s += b[i]
        b = a
    return s


def g_alias_changes_in_traced_loop(x, n):
    a = np.zeros(3)
    b = np.ones(3)
    s = 0.0
    for i in range(n):
        a[i] = x
        s += b[i]
        b = a
    return s


def set_second(c):
    c[1] = 100.0


C = np.arange(3.0)


def g_native_update_in_branch(x):
    c = C.copy()
    if x > 0:
        set_second(c)  # concrete arguments only: runs in Python, on a copy
    else:
        c.fill(2.0)
    return np.sum(c) * x


def g_jacobi(x, n):
    u = np.zeros(5) + x
    un = u.copy()
    for _ in range(n):
        un = u.copy()
        un[1:-1] = 0.5 * (u[:-2] + u[2:]) + x
        u = un
    return np.sum(u * un)


@pytest.mark.parametrize("backend", BACKENDS)
def test_loops_and_branches(backend):
    _agree(g_alias_changes_in_loop, 0.5, backend=backend)
    for x in (0.5, -0.5):
        _agree(g_native_update_in_branch, x, backend=backend)
    _agree(g_jacobi, 0.5, np.int64(3), backend=backend)
    np.testing.assert_array_equal(C, np.arange(3.0))


def test_alias_changing_in_traced_loop_is_an_error():
    with pytest.raises(pb.PullbackError) as e:
        pb.jit(g_alias_changes_in_traced_loop, backend="interp")(0.5, np.int64(3))
    assert "test_argument_mutation.py" in str(e.value) and "b = a.copy()" in str(e.value)
