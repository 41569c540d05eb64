"""`np.linalg` called with traced arguments, registered in `numpy_api.FUNCS`."""
from __future__ import annotations
