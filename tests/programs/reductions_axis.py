"""sum / prod / max / min / mean with axis and keepdims."""
import numpy as np


def f(X):
    col_mean = np.mean(X, axis=0, keepdims=True)          # (1, n)
    centered = X - col_mean
    row_max = np.max(X, axis=1)                           # (m,)
    col_min = np.min(X, axis=0, keepdims=True)            # (1, n)
    row_prod = np.prod(1.0 + 0.1 * X, axis=1, keepdims=True)
    s = np.sum(centered ** 2, axis=1)
    return (np.sum(s * row_max) + np.sum(col_min ** 2) + np.sum(row_prod)
            + np.mean(X) * np.max(X) - np.min(X))


def args():
    # distinct entries, so max/min have no ties
    X = np.array([[0.3, -1.2, 0.8, 2.1],
                  [1.5, 0.4, -0.6, 0.05],
                  [-0.9, 1.1, 0.25, -1.7]])
    return (X,)


ARGNUMS = (0,)
ORDER = 2
TAGS = {"reduction", "axis", "keepdims", "max", "min", "prod", "mean"}
