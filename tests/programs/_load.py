"""Load the test-program corpus.

``load_all()`` imports every ``*.py`` module in this directory (sorted by
file name), skipping files whose names start with ``_``.  Modules are loaded
by file path (so this works whether or not ``tests`` is importable as a
package) and registered in ``sys.modules`` under ``pullback_programs.<name>``
so that ``inspect.getsource`` works on the functions they define.
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys
import types

HERE = pathlib.Path(__file__).resolve().parent
PACKAGE = "pullback_programs"


def program_names() -> list[str]:
    """Names (file stems) of all program modules, sorted."""
    return sorted(
        p.stem
        for p in HERE.glob("*.py")
        if not p.name.startswith("_")
    )


def load(name: str) -> types.ModuleType:
    """Import (or return the already imported) program module ``name``."""
    modname = f"{PACKAGE}.{name}"
    mod = sys.modules.get(modname)
    if mod is not None:
        return mod
    if PACKAGE not in sys.modules:
        pkg = types.ModuleType(PACKAGE)
        pkg.__path__ = [str(HERE)]
        sys.modules[PACKAGE] = pkg
    path = HERE / f"{name}.py"
    spec = importlib.util.spec_from_file_location(modname, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load program {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[modname] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[modname]
        raise
    return mod


def load_all() -> list[types.ModuleType]:
    """Import every program module in this directory, sorted by name."""
    return [load(name) for name in program_names()]


__all__ = ["load", "load_all", "program_names"]
