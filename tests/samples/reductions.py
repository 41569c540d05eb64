"""Sample calls (format: `_spec`) of the reductions and scans: sum, prod, max/min
(and amax/amin), mean, trace, cumsum, cumprod, diff and gradient, with and
without `axis=`/`keepdims=`. Random points have no ties, so max/min are smooth
there and order 2 is checked."""
import numpy as np

from ._spec import F, S


def _gradient(x, y):
    return np.gradient(x * x), np.gradient(y, axis=1) + np.gradient(y, 0.5, axis=0)


SAMPLES = [
    S("np.sum", lambda x: np.sum(x * x, axis=1) + np.sum(x), (F(2, 3),)),
    S("np.sum", lambda x: np.sum(x, axis=(0, 2), keepdims=True) * x, (F(2, 3, 2),), id="np.sum(axis=tuple)"),
    S("np.prod", lambda x: np.prod(x, axis=0) + np.prod(x), (F(3, 2, lo=0.5, hi=1.5),)),
    S("np.max", lambda x: np.max(x, axis=1) * np.max(x), (F(2, 4),)),
    S("np.min", lambda x: np.min(x, axis=0, keepdims=True) * x, (F(3, 2),)),
    S("np.amax", lambda x: np.amax(x) * x, (F(4),)),
    S("np.amin", lambda x: np.amin(x, axis=1) ** 2, (F(2, 3),)),
    S("np.mean", lambda x: np.mean(x, axis=1) * np.mean(x * x), (F(2, 3),)),
    S("np.trace", lambda x: np.trace(x) * x[0, 0] + np.trace(x, offset=1), (F(3, 3),)),
    S("np.cumsum", lambda x: np.cumsum(x * x), (F(5),)),
    S("np.cumsum", lambda x: np.cumsum(x, axis=1) * x, (F(2, 3),), id="np.cumsum(axis=1)"),
    S("np.cumprod", lambda x: np.cumprod(x), (F(5, lo=0.5, hi=1.5),)),
    S("np.cumprod", lambda x: np.cumprod(x, axis=0), (F(3, 2, lo=-1.5, hi=1.5),), id="np.cumprod(axis=0)"),
    S("np.diff", lambda x: np.sum(np.diff(x * x)) + np.diff(x, n=2, axis=0), (F(3, 4),)),
    S("np.gradient", _gradient, (F(5), F(3, 4))),
]
