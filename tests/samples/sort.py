"""Sample calls (format: `_spec`) of the reorderings by value: sort and partition
(the derivative follows the permutation; random points have no ties)."""
import numpy as np

from ._spec import F, S

SAMPLES = [
    S("np.sort", lambda x: np.sort(x) * x, (F(5),)),
    S("np.sort", lambda x: np.sort(x, axis=0) + np.sort(x * x), (F(3, 4),), id="np.sort(axis)"),
    S("np.partition", lambda x: np.partition(x, 2)[2] * x + np.partition(x, 1)[:1], (F(5),)),
]
