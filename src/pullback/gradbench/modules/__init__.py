"""One module per GradBench benchmark (see `pullback.gradbench`).

Contract: `NAMES` lists every module of this package (each `<name>.py` here
defines SCHEMA, prepare() and FUNCTIONS); `load(name)` imports one of them by
name and raises LookupError for any other name."""
import importlib
import pathlib

NAMES = tuple(sorted(p.stem for p in pathlib.Path(__file__).parent.glob("*.py") if not p.stem.startswith("_")))


def load(name):
    """The benchmark module called `name`, or raise LookupError if not implemented."""
    if not isinstance(name, str) or name not in NAMES:
        raise LookupError(f"module {name!r} is not implemented (available: {', '.join(NAMES)})")
    return importlib.import_module(f"{__name__}.{name}")


def backend():
    """The pullback backend the modules use: $PULLBACK_GRADBENCH_BACKEND, else pullback's default."""
    import os
    return os.environ.get("PULLBACK_GRADBENCH_BACKEND") or None
