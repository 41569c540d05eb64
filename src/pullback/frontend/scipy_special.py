"""SciPy functions called with traced arguments (`scipy.special`), registered
in `numpy_api.FUNCS` on first use of a SciPy function (imported lazily by
`numpy_api.lookup`, so that importing pullback does not import SciPy)."""
from __future__ import annotations
