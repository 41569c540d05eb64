"""Common NumPy operations as a user writes them: pullback's numba code (`pb.jit`)
against NumPy itself, per call, and the gradient where the result is a scalar.

    python benchmarks/numpy_ops.py [--src OTHER/src] [--only sum_ax1,argmax] [--rounds 9]

Single-threaded, pinned to one core, an empty pullback cache. Each row: the median of
`--rounds` calls of pullback's compiled function and of the NumPy function, interleaved,
on a vector of 10^6 elements (`x`) or a 1000 x 1000 matrix (`X`), and their ratio
(above 1: pullback is slower); `grad`: pullback's gradient, for scalar results. A
finder of slow spots (note [strip-sums], "Row sums"; note [pairwise-sums]), not a
target table. `--src`: another checkout's src/.
"""
import os
import sys

import _one_core  # noqa: E402,F401 - single thread, one core: before NumPy and Numba

import argparse  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402


def f_prod(x):
    return np.prod(x * 0 + 1.0000001)


def f_mean(x):
    return np.mean(x)


def f_var(x):
    return np.var(x)


def f_std(x):
    return np.std(x)


def f_cumsum(x):
    return np.cumsum(x)


def f_argmax(x):
    return np.argmax(x)


def f_dot(x):
    return np.dot(x, x)


def f_norm(x):
    return np.linalg.norm(x)


def f_sum_ax0(X):
    return np.sum(X, axis=0)


def f_sum_ax1(X):
    return np.sum(X, axis=1)


def f_max_ax0(X):
    return np.max(X, axis=0)


def f_max_ax1(X):
    return np.max(X, axis=1)


def f_mean_ax1(X):
    return np.mean(X, axis=1)


def f_abs(x):
    return np.abs(x)


def f_clip(x):
    return np.clip(x, -1.0, 1.0)


def f_where(x):
    return np.where(x > 0, x, 0.1 * x)


def f_maximum(x):
    return np.maximum(x, 0.0)


def f_sqrt(x):
    return np.sqrt(np.abs(x))


def f_exp(x):
    return np.exp(x)


def f_log(x):
    return np.log(np.abs(x) + 1.0)


def f_tanh(x):
    return np.tanh(x)


def f_sin(x):
    return np.sin(x)


def f_sort(x):
    return np.sort(x)


def f_matvec(X):
    return X @ X[0]


def f_transpose_sum(X):
    return np.sum(X.T * X)   # X is square


def f_outer(x):
    return np.outer(x[:1000], x[:1000])


def f_square(x):
    return x ** 2


def f_pow3(x):
    return x ** 3


def f_softmax(x):
    return np.exp(x - np.max(x)) / np.sum(np.exp(x - np.max(x)))


def f_logsumexp1(X):
    return np.log(np.sum(np.exp(X), axis=1))


def f_softmax_rows(X):
    e = np.exp(X - np.max(X, axis=1, keepdims=True))
    return np.sum(np.log(np.sum(e / np.sum(e, axis=1, keepdims=True), axis=1)))


def f_layernorm(X):
    mu = np.mean(X, axis=1, keepdims=True)
    var = np.mean((X - mu) ** 2, axis=1, keepdims=True)
    return np.sum((X - mu) / np.sqrt(var + 1e-5))


def f_center_cols(X):
    return np.sum((X - np.mean(X, axis=0)) ** 2)


def f_mse_rows(X):
    return np.mean(np.sum((X - X[0]) ** 2, axis=1))


def f_logistic(x):
    return np.sum(np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0.0))


def f_argmax_ax1(X):
    return np.argmax(X, axis=1)


CASES = [
    ('prod', f_prod, 'x'),
    ('mean', f_mean, 'x'),
    ('var', f_var, 'x'),
    ('std', f_std, 'x'),
    ('cumsum', f_cumsum, 'x'),
    ('argmax', f_argmax, 'x'),
    ('dot', f_dot, 'x'),
    ('norm', f_norm, 'x'),
    ('sum ax0', f_sum_ax0, 'X'),
    ('sum ax1', f_sum_ax1, 'X'),
    ('max ax0', f_max_ax0, 'X'),
    ('max ax1', f_max_ax1, 'X'),
    ('mean ax1', f_mean_ax1, 'X'),
    ('abs', f_abs, 'x'),
    ('clip', f_clip, 'x'),
    ('where', f_where, 'x'),
    ('maximum', f_maximum, 'x'),
    ('sqrt', f_sqrt, 'x'),
    ('exp', f_exp, 'x'),
    ('log', f_log, 'x'),
    ('tanh', f_tanh, 'x'),
    ('sin', f_sin, 'x'),
    ('sort', f_sort, 'x'),
    ('matvec', f_matvec, 'X'),
    ('transpose sum', f_transpose_sum, 'X'),
    ('outer', f_outer, 'x'),
    ('square', f_square, 'x'),
    ('pow3', f_pow3, 'x'),
    ('softmax', f_softmax, 'x'),
    ('logsumexp1', f_logsumexp1, 'X'),
    ('softmax rows', f_softmax_rows, 'X'),
    ('layernorm', f_layernorm, 'X'),
    ('center cols', f_center_cols, 'X'),
    ('mse rows', f_mse_rows, 'X'),
    ('logistic', f_logistic, 'x'),
    ('argmax ax1', f_argmax_ax1, 'X'),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
    ap.add_argument("--only", default="")
    ap.add_argument("--rounds", type=int, default=9)
    a = ap.parse_args()
    os.environ["PULLBACK_CACHE_DIR"] = tempfile.mkdtemp(prefix="pullback-ops-")
    sys.path.insert(0, os.path.abspath(a.src))
    import pullback as pb

    rng = np.random.default_rng(0)
    data = {"x": rng.standard_normal(1_000_000), "X": rng.standard_normal((1000, 1000))}
    only = {n.strip() for n in a.only.split(",") if n.strip()}
    unknown = only - {name.replace(" ", "_") for name, _, _ in CASES}
    if unknown:
        ap.error(f"unknown operations {sorted(unknown)}; known: "
                 + ", ".join(name.replace(" ", "_") for name, _, _ in CASES))
    print("| operation | pullback | NumPy | pullback / NumPy | pullback gradient |")
    print("|---|---|---|---|---|")
    for name, f, d in CASES:
        if only and name.replace(" ", "_") not in only:
            continue
        x = data[d]
        j = pb.jit(f)
        j(x)
        tj, tn = [], []
        for _ in range(a.rounds):
            s = time.perf_counter()
            j(x)
            tj.append(time.perf_counter() - s)
            s = time.perf_counter()
            f(x)
            tn.append(time.perf_counter() - s)
        grad = "-"
        if np.ndim(f(x)) == 0 and np.issubdtype(np.asarray(f(x)).dtype, np.floating):
            g = pb.grad(f)
            g(x)
            tg = []
            for _ in range(max(3, a.rounds // 2)):
                s = time.perf_counter()
                g(x)
                tg.append(time.perf_counter() - s)
            grad = f"{1e3 * statistics.median(tg):.3f} ms"
        mj, mn = statistics.median(tj), statistics.median(tn)
        print(f"| {name} | {1e3 * mj:.3f} ms | {1e3 * mn:.3f} ms | {mj / mn:.2f} | {grad} |", flush=True)


if __name__ == "__main__":
    main()
