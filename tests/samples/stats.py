"""Sample calls (format: `_spec`) of the statistics: var and std (with `ddof=`,
`axis=`), average (with `weights=`), median, percentile and quantile (the
gradient flows through the selected elements; random points have no ties)."""
import numpy as np

from ._spec import F, S

SAMPLES = [
    S("np.var", lambda x: np.var(x) + np.var(x, axis=0, ddof=1), (F(3, 4),)),
    S("np.std", lambda x: np.std(x, axis=1) * np.std(x, ddof=1), (F(2, 4),)),
    S("np.average", lambda x, w: np.average(x) + np.average(x, axis=1, weights=w * w + 0.5), (F(2, 3), F(3))),
    S("np.median", lambda x: np.median(x) * np.median(x, axis=0), (F(5, 2),)),
    S("np.percentile", lambda x: np.percentile(x, 30.0) * np.percentile(x, [10.0, 75.0], axis=1), (F(2, 6),)),
    S("np.quantile", lambda x: np.quantile(x, 0.4) + np.quantile(x * x, 0.5, axis=0), (F(5, 3),)),
]
