"""More of Python's and NumPy's semantics that a staged copy must keep: late
binding, list aliasing, dtype promotion, negative axes, views of views."""
import numpy as np

from ._cases import case

_r = np.random.default_rng(10)
V = _r.standard_normal(6)
M = _r.standard_normal((3, 4))


@case(V)
def late_binding_lambdas(x):
    fs = [lambda t: t * i for i in range(3)]   # every lambda sees i == 2
    return sum(f(x[0]) for f in fs)


@case(V)
def default_arg_binding(x):
    fs = [lambda t, i=i: t * i for i in range(3)]
    return sum(f(x[1]) for f in fs)


@case(V)
def list_holds_alias(x):
    h = x.copy()
    hs = [h]
    h[0] = 10.0 * x[1]      # the list's element is the same array
    return np.sum(hs[0] * x)


@case(V)
def list_copy_not_alias(x):
    h = x.copy()
    hs = [h.copy()]
    h[0] = 10.0 * x[1]
    return np.sum(hs[0] * x) + np.sum(h)


@case(V)
def rebinding_not_mutation(x):
    h = x.copy()
    hs = [h]
    h = h * 3.0
    h[0] = 0.0
    return np.sum(hs[0] ** 2) + np.sum(h)


@case(V)
def view_of_view(x):
    y = x.copy()
    a = y[1:]
    b = a[::2]
    b[1] = -x[0] * 3
    return np.sum(y * np.arange(6))


@case(V)
def ravel_is_view(x):
    A = x.reshape(2, 3).copy()
    r = A.ravel()
    r[4] = 7.0 * x[0]
    return np.sum(A ** 2)


@case(V.astype(np.float32), rtol=1e-3, atol=1e-3, fd_eps=1e-2)
def float32_with_python_float(x):
    return np.sum(x * 0.1 + 2.5) * np.float32(2.0)


@case(V)
def int_true_division(x):
    n = np.arange(6)
    return np.sum(x * (n / 4)) + np.sum(x * (n // 4))


@case(M, hess=True)
def negative_axes(M):
    return np.sum(np.sum(M, axis=-1) ** 2) + np.sum(np.mean(M, axis=-2) ** 3) + np.sum(np.max(M, axis=-1))


@case(M, hess=True)
def norm_keepdims_normalize(M):
    n = np.linalg.norm(M, axis=1, keepdims=True)
    U = M / n
    return np.sum(U @ U.T)


@case(M, hess=True)
def dot_method_mixed(M):
    v = M[0]
    return M.dot(v).sum() + np.dot(v, M.T).sum() + v.dot(v)


@case(V)
def float_of_size1(x):
    a = float(x[2:3] * 2.0) if False else float(x[2] * 2.0)
    return a * x[0]


@case(V, hess=True)
def chained_comparisons_branch(x):
    if 0.0 < x[0] < 2.0:
        return np.sum(x ** 2)
    return np.sum(x ** 3)


@case(V)
def bool_and_or_branches(x):
    s = 0.0
    for i in range(6):
        if x[i] > 0 and x[i] < 1.0 or x[i] < -1.0:
            s += x[i] ** 2
        elif not x[i] > -0.2:
            s -= x[i]
    return s


@case(V)
def floor_round_piecewise(x):
    return np.sum(np.floor(x * 3) * x) + round(float(x[0]) * 10) * x[1]


@case(V, hess=True)
def where_scalar_broadcast(x):
    return np.sum(np.where(x > 0, 1.0, x ** 2)) + np.sum(np.where(x < 0.5, x, 2.0) * x)


@case(V, hess=True)
def mean_of_bool_times(x):
    frac = np.mean(x > 0)
    return frac * np.sum(x ** 2)


@case(M, hess=True)
def dict_params_update_loop(M):
    p = {"a": M[0], "b": M[1]}
    for _ in range(3):
        p = {k: v * 0.9 + 0.1 * np.tanh(v) for k, v in p.items()}
    return np.sum(p["a"] * p["b"])


@case(M, hess=True)
def tuple_params_list_comprehension(M):
    params = [(M[i], M[i, 0]) for i in range(3)]
    x = np.ones(4)
    for w, b in params:
        x = np.tanh(w * x + b)
    return np.sum(x)


@case(V, hess=True)
def global_constant_array(x):
    return np.sum(_COEF * x ** 2) + _COEF[0]


_COEF = np.linspace(1.0, 2.0, 6)


@case(V, hess=True)
def nested_function_defaults(x):
    def poly(t, a=1.0, b=-0.5, *, c=0.25):
        return a * t + b * t ** 2 + c * t ** 3
    return np.sum(poly(x)) + np.sum(poly(x, 2.0, c=1.0))


@case(V, hess=True)
def star_args_kwargs(x):
    def f(*ts, **kw):
        return sum(t * kw["w"] for t in ts)
    return f(x[0], x[1], x[2] ** 2, w=x[3])


@case(V)
def min_max_scalars_python(x):
    a = max(x[0], 0.0)
    b = min(x[1], x[2], x[3])
    return a * b + abs(x[4])
