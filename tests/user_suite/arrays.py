"""Array manipulation: sorting, scans, windows, masks, where, clip, stacking."""
import numpy as np

from ._cases import case

_r = np.random.default_rng(7)
V = _r.standard_normal(8)
M = _r.standard_normal((4, 5))


@case(V, hess=True)
def sort_weighted(x):
    return np.sum(np.sort(x) * np.arange(8.0))


@case(V)
def argsort_gather(x):
    idx = np.argsort(x)
    return np.sum(x[idx][:3] ** 2)


@case(V)
def top_k_mean(x):
    return np.mean(np.sort(x)[-3:])


@case(V, hess=True)
def trimmed_mean(x):
    s = np.sort(x)
    return np.mean(s[1:-1] ** 2)


@case(V, hess=True)
def cumsum_loss(x):
    return np.sum(np.cumsum(x) ** 2)


@case(np.abs(V) + 0.5, hess=True)
def cumprod_sum(x):
    return np.sum(np.cumprod(x))


@case(V, hess=True)
def diff_penalty(x):
    return np.sum(np.diff(x) ** 2) + np.sum(np.diff(x, n=2) ** 2)


@case(V, hess=True)
def gradient_np(x):
    return np.sum(np.gradient(x) ** 2)


@case(V, _r.standard_normal(3))
def np_convolve_valid(x, k):
    return np.sum(np.convolve(x, k, mode="valid") ** 2)


@case(V, _r.standard_normal(3))
def np_convolve_full(x, k):
    return np.sum(np.tanh(np.convolve(x, k)))


@case(V, hess=True)
def moving_average_window(x):
    k = 3
    out = []
    for i in range(len(x) - k + 1):
        out.append(np.mean(x[i:i + k]))
    return np.sum(np.array(out) ** 2)


@case(V, hess=True)
def moving_average_cumsum(x):
    c = np.cumsum(np.concatenate([np.zeros(1), x]))
    m = (c[3:] - c[:-3]) / 3
    return np.sum(m ** 3)


@case(V, hess=True)
def sliding_window_max_smooth(x):
    s = 0.0
    for i in range(len(x) - 2):
        w = x[i:i + 3]
        s += np.log(np.sum(np.exp(w)))
    return s


@case(V)
def mask_positive_sum(x):
    return np.sum(x[x > 0] ** 2)


@case(V)
def mask_assign_zero(x):
    y = x.copy()
    y[y < 0] = 0.0
    return np.sum(y ** 3)


@case(V)
def where_relu(x):
    return np.sum(np.where(x > 0, x, 0.0) ** 2)


@case(V, hess=True)
def where_two_branches(x):
    return np.sum(np.where(x > 0.1, np.sin(x), x ** 3))


@case(V)
def clip_loss(x):
    return np.sum(np.clip(x, -0.5, 0.5) ** 2 * np.arange(8))


@case(V)
def clip_method(x):
    return np.sum(x.clip(-1.0, 1.0) * x)


@case(V, V[::-1] + 0.05)
def maximum_minimum(x, y):
    return np.sum(np.maximum(x, y) ** 2 + np.minimum(x, y))


@case(M, hess=True)
def stack_concat(M):
    a = np.concatenate([M[:, :2], M[:, 3:]], axis=1)
    b = np.stack([M[0], M[-1]])
    return np.sum(a ** 2) + np.sum(np.vstack([b, M[1:2]]) ** 3)


@case(M, hess=True)
def hstack_column_stack(M):
    return np.sum(np.hstack([M[:, 0], M[:, 1]]) ** 2) + np.sum(np.column_stack([M[:, 2], M[:, 3]]))


@case(M, hess=True)
def transpose_reshape(M):
    return np.sum(M.T.reshape(-1) * np.arange(20.0)) + np.sum(M.reshape(2, 10) ** 2)


@case(M, hess=True)
def flip_roll(M):
    return np.sum(np.flip(M, axis=0) * M) + np.sum(np.roll(M, 2, axis=1) * M)


@case(M, hess=True)
def tril_triu(M):
    S = M[:, :4]
    return np.sum(np.tril(S) ** 2) - np.sum(np.triu(S, 1))


@case(M, hess=True)
def pad_edge(M):
    P = np.pad(M, 1, mode="edge")
    return np.sum(P ** 2)


@case(M, hess=True)
def tile_repeat(M):
    return np.sum(np.tile(M[0], 2) ** 2) + np.sum(np.repeat(M[1], 3) * np.arange(15))


@case(M, hess=True)
def axis_reductions(M):
    return np.sum(M.mean(axis=0) ** 2) + np.sum(M.sum(axis=1) ** 2) + M.prod(axis=0).sum()


@case(M)
def max_min_axis(M):
    return np.sum(M.max(axis=1)) - np.sum(np.min(M, axis=0))


@case(M)
def argmax_gather(M):
    i = np.argmax(M[:, 0])
    return np.sum(M[i] ** 2)


@case(M, hess=True)
def fancy_index_rows(M):
    return np.sum(M[[0, 2, 3]][:, [1, 4]] ** 2)


@case(M, hess=True)
def strided_slices(M):
    return np.sum(M[::2, 1::2] ** 2) + np.sum(M[-1, ::-1] * np.arange(5))


@case(M, hess=True)
def newaxis_broadcast(M):
    v = M[:, 0]
    return np.sum((v[:, None] - v[None, :]) ** 2)


@case(V, hess=True)
def outer_via_broadcast(x):
    return np.sum(np.exp(-(x[:, np.newaxis] - x) ** 2))


@case(V)
def inplace_slice_update(x):
    y = np.zeros(10)
    y[1:9] = x
    y[0] = y[1] * 2
    y[2:5] += x[:3] ** 2
    return np.sum(y ** 2)


@case(V)
def list_to_array(x):
    parts = [x[0] * x[1], np.sin(x[2]), 3.0, x[3] ** 2]
    return np.sum(np.array(parts) ** 2)


@case(V, hess=True)
def linspace_weights(x):
    return np.dot(np.linspace(0, 1, 8), x ** 2)


@case(V, hess=True)
def median_np(x):
    return np.median(x ** 2)


@case(M, hess=True)
def einsum_rowwise_dot(M):
    return np.sum(np.einsum("ij,ij->i", M, M) ** 2)


@case(_r.standard_normal((2, 3, 4)), _r.standard_normal((2, 4, 2)))
def einsum_batched(A, B):
    return np.sum(np.einsum("bij,bjk->bik", A, B) ** 2)


@case(_r.standard_normal((3, 3)), hess=True)
def einsum_trace(A):
    return np.einsum("ii->", A @ A)


@case(V, hess=True)
def mean_of_squares_keepdims(x):
    X = x.reshape(2, 4)
    return np.sum((X - X.mean(axis=1, keepdims=True)) ** 2)


@case(M, hess=True)
def swapaxes_moveaxis(M):
    T3 = M.reshape(2, 2, 5)
    return np.sum(np.moveaxis(T3, 0, -1) * np.swapaxes(T3, 1, 2) ** 2)


@case(V)
def sorted_python_builtin(x):
    return sum(sorted([x[0], x[1] * 2, x[2] - 1]))


@case(V)
def partition_smallest(x):
    return np.sum(np.partition(x, 2)[:3] ** 2)


@case(V + np.sign(V) * 0.3, hess=True)
def nan_to_num_logs(x):
    return np.sum(np.nan_to_num(np.log(x ** 2)))
