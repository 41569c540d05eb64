"""Sample calls of the supported NumPy/SciPy functions (format: `_spec`): one
module per area, each owning its `SAMPLES`; `all_samples()` collects them."""
from __future__ import annotations

import importlib
import pkgutil


def all_samples():
    out = []
    for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not m.name.startswith("_"):
            out += importlib.import_module(f"{__name__}.{m.name}").SAMPLES
    return out
