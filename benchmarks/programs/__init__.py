"""One module per benchmark program.

Each module provides

- ``DESCRIPTION``: one line saying what the program computes and what "derivative" means;
- ``make_input(size_name, rng) -> dict`` for ``size_name`` in ``SIZES`` (JSON-like input,
  the same shape of dict the GradBench modules' ``prepare`` takes);
- ``tool_pullback(inp, backend)``, ``tool_jax(inp)``, ``tool_torch(inp)`` and, where a
  hand-written gradient is easy, ``tool_numpy(inp)``; each returns
  ``(primal, derivative, args)``: two callables and the argument tuple to call them with
  (input conversion happens here, untimed). Results are NumPy-convertible scalars/arrays
  or tuples of them, in the same order for every tool.

JAX and PyTorch are imported inside ``tool_jax`` / ``tool_torch`` only, so that the runner
can set thread-pinning environment variables first and so that a missing framework only
skips that tool.
"""
import importlib

NAMES = ("lse", "llsq", "ode", "det", "det_lu", "gmm", "lstm", "kmeans")
SIZES = ("small", "default")


def load(name):
    if name not in NAMES:
        raise LookupError(f"unknown benchmark program {name!r} (available: {', '.join(NAMES)})")
    return importlib.import_module(f"{__name__}.{name}")
