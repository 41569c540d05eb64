"""Control flow: branches on traced scalars, early return, loops, recursion,
closures, lambdas, partial, and nested derivatives (perturbation confusion)."""
import functools
import operator

import numpy as np

import pullback as pb

from ._cases import case

_r = np.random.default_rng(8)


@case(0.7, hess=True)
def if_elif_else(x):
    if x < 0:
        return x ** 2
    elif x < 1:
        return np.sin(x)
    else:
        return np.exp(x) - 2


@case(1.7, hess=True)
def if_elif_else_other_branch(x):
    return if_elif_else(x)


@case(0.4, 2.0, hess=True)
def if_assign_branches(x, y):
    if x * y > 0.5:
        z = x * y
        w = np.log(z)
    else:
        z = x + y
        w = z ** 2
    return z * w


@case(np.array([0.3, 2.0, -1.0]), hess=True)
def early_return_loop(x):
    for i in range(len(x)):
        if x[i] < 0:
            return np.sum(x[:2] ** 2)
    return np.sum(x)


@case(3.0, hess=True)
def ternary_expr(x):
    y = x ** 2 if x > 2 else -x
    return y * np.cos(y)


@case(np.array([0.3, 2.0, -1.0, 0.5]), hess=True)
def for_with_branch(x):
    s = 0.0
    for v in x:
        if v > 0:
            s += v ** 2
        else:
            s -= np.sin(v)
    return s


@case(np.array([0.3, 2.0, -1.0, 0.5]))
def for_continue_break(x):
    s = 0.0
    for i in range(len(x)):
        if x[i] < -0.5:
            break
        if x[i] > 1.0:
            continue
        s = s + x[i] * (i + 1)
    return s * x[0]


@case(1.5, hess=True)
def while_counter_data(x):
    n = 0
    y = x
    while y < 100.0:
        y = y * 1.7 + 1
        n += 1
    return y / n


@case(5, 0.5, argnums=1, hess=True)
def recursion_power(n, x):
    if n == 0:
        return 1.0
    return x * recursion_power(n - 1, x)


def _fib_like(n, a, b):
    if n == 0:
        return a
    return _fib_like(n - 1, b, a + 0.5 * b)


@case(0.3, 0.7, hess=True)
def recursion_three_args(a, b):
    return _fib_like(8, a, b)


def _tree_sum(depth, x):
    if depth == 0:
        return np.tanh(x)
    return _tree_sum(depth - 1, x * 0.9) + _tree_sum(depth - 1, x + 0.1)


@case(0.4, hess=True)
def recursion_tree(x):
    return _tree_sum(3, x)


@case(np.array([1.0, 2.0, 3.0]), hess=True)
def list_accumulation(x):
    out = []
    for i in range(3):
        out.append(x[i] * x[(i + 1) % 3])
    return sum(out)


@case(np.array([1.0, 2.0, 3.0]), hess=True)
def list_comprehension(x):
    sq = [np.sin(v) * v for v in x]
    return sum(sq) + max(x[0], x[1])


@case(np.array([1.0, 2.0, 3.0]), hess=True)
def dict_accumulation(x):
    d = {"a": x[0], "b": x[1] ** 2}
    d["c"] = d["a"] * d["b"]
    return sum(d.values())


@case(np.array([0.5, 1.5]), hess=True)
def closure_helper(p):
    scale = p[1]

    def model(t):
        return scale * np.exp(-p[0] * t)
    ts = np.linspace(0, 1, 5)
    return np.sum(model(ts) ** 2)


@case(np.array([0.5, 1.5]), hess=True)
def lambdas_and_map(p):
    f = lambda t: p[0] * t ** 2 + p[1]
    g = lambda t: np.sin(f(t))
    return sum(map(g, [0.1, 0.2, 0.3]))


@case(np.array([0.5, 1.5]), hess=True)
def partial_application(p):
    def energy(x, k, x0):
        return 0.5 * k * (x - x0) ** 2
    e = functools.partial(energy, k=p[1], x0=1.0)
    return e(p[0]) + e(p[0] * 2)


@case(np.array([0.5, 1.5]))
def operator_reduce(p):
    return functools.reduce(operator.mul, [p[0], p[1], p[0] + p[1]]) + operator.add(p[0], 1.0)


@case(2.0, hess=True)
def nested_grad_perturbation_confusion(x):
    # d/dx [x * d/dy (x + y)] = 1 (Siskind & Pearlmutter)
    return x * pb.grad(lambda y: x + y)(1.0)


@case(2.0, hess=True)
def nested_grad_perturbation_confusion_mul(x):
    # d/dx [x * d/dy (x * y)] at y = 2: x * x -> 2x
    return x * pb.grad(lambda y: x * y)(2.0)


@case(0.8, hess=True)
def nested_grad_of_grad(x):
    f = lambda t: np.sin(t) * t
    return pb.grad(pb.grad(f))(x)


@case(np.array([0.3, -0.2, 0.5]))
def hessian_vector_inside(x):
    def f(y):
        return np.sum(np.sin(y) * y[::-1])
    v = np.array([1.0, 0.5, -0.5])
    return np.sum(pb.jvp(pb.grad(f), (x,), (v,))[1] ** 2)


@case(np.array([0.3, -0.2, 0.5]))
def grad_inside_optimizer(x0):
    def loss(w):
        return np.sum((w - x0) ** 2) + np.sum(w ** 4)
    w = np.zeros(3)
    for _ in range(10):
        w = w - 0.1 * pb.grad(loss)(w)
    return np.sum(w)


@case(1.2, hess=True)
def nested_closure_outer_var(a):
    def outer(x):
        def inner(y):
            return a * x * y
        return pb.grad(inner)(x) * x
    return pb.grad(outer)(a)


@case(0.5, 1.5, hess=True)
def value_and_grad_inside(a, b):
    v, g = pb.value_and_grad(lambda t: np.exp(a * t) * b)(0.3)
    return v + g * b


@case(0.4, hess=True)
def lambda_returning_lambda(a):
    mk = lambda k: (lambda t: k * t ** 2)
    return mk(a)(a + 1) + pb.grad(mk(a))(2.0)


@case(np.array([1.0, 2.0, 3.0]))
def python_max_min_builtins(x):
    return max(x[0] * x[1], x[2]) - min(x[0], x[1] ** 2)


@case(0.3, hess=True)
def math_module(x):
    import math
    return math.exp(x) * math.cos(x) + math.log1p(x) + math.sqrt(x + 1) + math.atan2(x, 2.0)


@case(np.array([0.3, 1.2]), hess=True)
def tuple_unpack_swap(x):
    a, b = x
    for _ in range(3):
        a, b = b, a * b + 0.1
    return a - b


@case(np.array([0.3, 1.2, -0.7]))
def enumerate_zip(x):
    w = [1.0, -2.0, 0.5]
    s = 0.0
    for i, (xi, wi) in enumerate(zip(x, w)):
        s += (i + 1) * xi * wi
    return s ** 2


@case(np.array([0.3, 1.2, -0.7]))
def vector_output_jacobian(x):
    return np.array([x[0] * x[1], np.sin(x[2]), x[0] + x[1] + x[2]])


@case(np.array([0.3, 1.2, -0.7]))
def tuple_output(x):
    return np.sum(x ** 2), x * 2


@case(np.array([0.3, 1.2, -0.7]), 2)
def int_arg_loop(x, n):
    for _ in range(n):
        x = np.sin(x) + x
    return np.sum(x)


@case(0.9)
def while_true_break(x):
    y = x
    while True:
        y = y * 0.5 + 0.25
        if abs(y - 0.5) < 1e-9:
            break
    return y + x ** 2


@case(0.3, 0.8, hess=True)
def custom_class_free_helper(a, b):
    def step(state, dt):
        x, v = state
        return (x + dt * v, v - dt * x * a)
    s = (b, 0.0)
    for _ in range(5):
        s = step(s, 0.1)
    return s[0]
