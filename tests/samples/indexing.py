"""Sample calls (format: `_spec`) of reductions over boolean-mask selections
x[m] (lowered to `where`, note [bool-masks]) and of slices with a traced start
(`x[i:i+k]` in a loop, note [dynamic-slices]). Random points are not on a mask's
threshold, so the selections are smooth there and order 2 is checked."""
import numpy as np

from ._spec import F, S


def _windows(x):
    s = 0.0
    for i in range(x.shape[0] - 2):
        s = s + np.sum(x[i:i + 2] * x[i + 1:i + 3])
    return s


def _window_updates(x):
    y = x * 1.0
    for i in range(x.shape[0] - 2):
        y[i:i + 3] += 0.5 * x[i]
    return y


def _mask_assign(x):
    y = x * 1.0
    y[x > 0.5] *= 2.0
    y[x < -0.5] = x[x < -0.5] ** 2
    return y


SAMPLES = [
    S("np.sum", lambda x: np.sum(x[x > 0] ** 2) + x[x < 0.3].sum(), (F(6),), id="np.sum(x[mask])"),
    S("np.mean", lambda x: np.mean(np.exp(x[x > -0.5])), (F(6),), id="np.mean(x[mask])"),
    S("np.max", lambda x: np.max(x[x < 1.0]) * np.min(x[x > -1.0]), (F(6),), id="np.max(x[mask])"),
    S("np.prod", lambda x: np.prod(x[np.abs(x) > 0.5]), (F(5),), id="np.prod(x[mask])"),
    S("np.sum", lambda A: np.sum(A[A[:, 0] > 0] ** 2, axis=0), (F(4, 3),), id="np.sum(A[rows])"),
    S("np.sum", _windows, (F(7),), id="np.sum(x[i:i+2])"),
    S("np.sin", lambda x: np.sin(_window_updates(x)) + _mask_assign(x), (F(6),), id="x[i:i+3] +="),
]
