"""One module per GradBench benchmark (see `pullback.gradbench`)."""
import importlib

NAMES = ("lse", "llsq", "ode", "det", "kmeans", "gmm", "lstm")


def load(name):
    """The benchmark module called `name`, or raise LookupError if not implemented."""
    if not isinstance(name, str) or name not in NAMES:
        raise LookupError(f"module {name!r} is not implemented (available: {', '.join(NAMES)})")
    return importlib.import_module(f"{__name__}.{name}")


def backend():
    """The pullback backend the modules use: $PULLBACK_GRADBENCH_BACKEND, else pullback's default."""
    import os
    return os.environ.get("PULLBACK_GRADBENCH_BACKEND") or None
