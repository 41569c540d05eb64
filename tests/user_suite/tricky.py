"""Semantics where a compiler can silently get a different number than NumPy:
aliasing and views, repeated fancy indices, in-place updates in loops, dtype
promotion, integer arithmetic, float32, axis keywords."""
import numpy as np

import pullback as pb

from ._cases import case

_r = np.random.default_rng(9)
V = _r.standard_normal(6)
M = _r.standard_normal((3, 4))


@case(V)
def fancy_setitem_repeated_index(x):
    # NumPy: y[[0, 0, 1]] += x[:3] does NOT accumulate the repeated index (last write wins)
    y = np.zeros(4)
    y[[0, 0, 1]] += x[:3]
    return np.sum(y * np.array([1.0, 2.0, 3.0, 4.0]))


@case(V)
def fancy_getitem_repeated_index(x):
    return np.sum(x[[0, 0, 1, 5]] ** 2)


@case(V)
def add_at_accumulates(x):
    y = np.zeros(3)
    np.add.at(y, [0, 0, 2], x[:3])
    return np.sum(y ** 2)


@case(M)
def view_mutation_transpose(M):
    A = M.copy()
    B = A.T
    B[0, :] = 0.0          # writes column 0 of A
    return np.sum(A ** 2) + np.sum(B)


@case(V)
def slice_view_mutation(x):
    y = x.copy()
    v = y[1:4]
    v *= 2.0
    return np.sum(y ** 2)


@case(V)
def reshape_view_mutation(x):
    y = x.copy()
    z = y.reshape(2, 3)
    z[1] = z[0] * z[1]
    return np.sum(y)


@case(V)
def aliasing_assignment_not_copy(x):
    y = x.copy()
    z = y           # the same array
    z[0] = 5.0 * y[1]
    return y[0] * x[2]


@case(V)
def inplace_loop_prefix(x):
    y = x.copy()
    for i in range(1, len(y)):
        y[i] += y[i - 1] * 0.5
    return np.sum(y ** 2)


@case(V)
def inplace_reverse_loop(x):
    y = x.copy()
    for i in range(len(y) - 2, -1, -1):
        y[i] = y[i] * y[i + 1]
    return y[0]


@case(V)
def swap_elements(x):
    y = x.copy()
    y[0], y[1] = y[1], y[0]
    return np.sum(y * np.arange(6.0))


@case(V)
def swap_rows_fancy(x):
    A = x.reshape(2, 3).copy()
    A[[0, 1]] = A[[1, 0]]
    return np.sum(A * np.arange(6.0).reshape(2, 3))


@case(V)
def integer_division_and_mod(x):
    n = len(x)
    half = n // 2
    return np.sum(x[:half]) * (7 % 3) + x[n - 1] / (n // 4)


@case(V)
def float_mod(x):
    return np.sum(np.mod(x * 3.0, 1.7))


@case(V.astype(np.float32), rtol=1e-3, atol=1e-4, fd_eps=1e-3)
def float32_mlp(x):
    W = np.ones((6, 2), dtype=np.float32) * np.float32(0.3)
    return np.sum(np.tanh(x @ W))


@case(M, hess=True)
def axis_tuple_mean(M):
    T = M.reshape(3, 2, 2)
    return np.sum(T.mean(axis=(1, 2)) ** 2) + np.sum(np.sum(T, axis=(0, 2), keepdims=True) ** 2)


@case(M, hess=True)
def var_ddof_axis(M):
    return np.sum(M.var(axis=0, ddof=1)) + np.sum(np.std(M, axis=1, ddof=1))


@case(M)
def norms_with_ord(M):
    return (np.linalg.norm(M, ord=1) + np.linalg.norm(M, ord=np.inf) + np.linalg.norm(M, "fro")
            + np.sum(np.linalg.norm(M, axis=1)) + np.linalg.norm(M[0], ord=1) + np.linalg.norm(M[1], 3))


@case(M, hess=True)
def cumsum_axis(M):
    return np.sum(np.cumsum(M, axis=1) ** 2) + np.sum(np.cumsum(M, axis=0)[-1])


@case(M)
def sort_axis0(M):
    return np.sum(np.sort(M, axis=0) * np.arange(12.0).reshape(3, 4))


@case(M, hess=True)
def trace_offset_triu_k(M):
    S = M[:, :3]
    return np.trace(S, offset=1) ** 2 + np.sum(np.triu(S, k=1) ** 2) + np.sum(np.diag(S, k=-1) ** 2)


@case(M, hess=True)
def rot90_fliplr(M):
    return np.sum(np.rot90(M) * np.fliplr(M).T) + np.sum(np.flipud(M)[0])


@case(M, hess=True)
def split_family(M):
    a, b = np.split(M, 2, axis=1)
    c, d, e = np.array_split(M[0], 3)
    return np.sum(a * b) + np.sum(c) * np.sum(e) + np.sum(d ** 2)


@case(V, hess=True)
def expand_squeeze_ravel(x):
    y = np.expand_dims(x, 0)
    z = np.atleast_2d(x).T
    return np.sum(np.squeeze(y) * np.ravel(z)) + np.sum(y @ z)


@case(np.array([[2.0, 0.5], [0.3, 1.5]]), hess=True)
def det_stack(A):
    S = np.stack([A, A.T @ A, A + np.eye(2)])
    return np.sum(np.linalg.det(S))


@case(np.array([[2.0, 0.5], [0.3, 1.5]]), hess=True)
def inv_stack_solve(A):
    S = np.stack([A, A @ A])
    b = np.ones((2, 2, 1))
    return np.sum(np.linalg.solve(S, b)) + np.sum(np.linalg.inv(S))


@case(V)
def quantile_median_axis(x):
    X = x.reshape(2, 3)
    return np.sum(np.quantile(X, 0.3, axis=1)) + np.sum(np.median(X, axis=0) ** 2)


@case(V, hess=True)
def int_array_times_traced(x):
    w = np.arange(6)
    return np.sum(w * x ** 2) + np.sum((w // 2) * x) + np.sum(x / (w + 1))


@case(V, hess=True)
def bool_mask_arith(x):
    m = x > 0
    return np.sum(m * x ** 2) + np.sum(x * (~m)) + np.mean(m)


@case(V)
def argmax_onehot(x):
    oh = np.zeros(6)
    oh[np.argmax(x)] = 1.0
    return np.sum(oh * x ** 2)


@case(V, hess=True)
def jvp_inside_forward(x):
    f = lambda y: np.sin(y) * y
    _, t = pb.jvp(f, (x,), (np.ones(6),))
    return np.sum(t ** 2)


@case(V, hess=True)
def vjp_inside(x):
    f = lambda y: np.exp(y * 0.3) * y
    out, back = pb.vjp(f, x)
    (g,) = back(np.ones(6))
    return np.sum(g * out)


@case(V)
def jacobian_inside(x):
    J = pb.jacobian(lambda y: np.tanh(y[:3] * y[3:]))(x)
    return np.sum(J ** 2)


@case(V[:3], hess=True)
def hessian_inside(x):
    H = pb.hessian(lambda y: np.sum(y ** 3) * np.sum(y))(x)
    return np.trace(H)


@case(1.5, hess=True)
def perturbation_confusion_jvp(x):
    inner = lambda y: pb.jvp(lambda z: x * z, (y,), (1.0,))[1]
    return pb.jvp(lambda w: w * inner(1.0), (x,), (1.0,))[1] + inner(2.0)


@case(V)
def while_with_array_state(x):
    y = x.copy()
    it = 0
    while np.max(np.abs(y)) > 0.1 and it < 50:
        y = y * 0.7
        it += 1
    return np.sum(y) * it


@case(V, hess=True)
def scalar_loop_accumulate_index(x):
    s = 0.0
    for i in range(len(x)):
        for j in range(i):
            s += x[i] * x[j] / (1 + i + j)
    return s


@case(V)
def np_max_and_where_chain(x):
    m = np.max(x)
    e = np.exp(x - m)
    p = e / e.sum()
    return np.sum(np.where(p > 0.1, p * np.log(p), 0.0))


@case(V, hess=True)
def outer_loop_matrix_build(x):
    n = 3
    K = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            K[i, j] = np.exp(-(x[i] - x[j + 3]) ** 2)
    return np.sum(K @ K)


@case(V, hess=True)
def power_operator_variants(x):
    return np.sum(x ** 2) + np.sum(np.abs(x) ** 1.5) + np.sum(2.0 ** x) + np.sum(np.power(x, 3)) + \
        np.sum(x ** -2) + np.sum(np.square(x)) + pow(x[0], 4)
