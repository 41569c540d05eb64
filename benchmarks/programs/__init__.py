"""One module per benchmark program.

Each module provides

- ``DESCRIPTION``: one line saying what the program computes and what "derivative" means;
- ``SIZES``: named sizes, ``{name: {parameter: int}}``, with at least ``small`` and ``default``;
  ``GRADBENCH``: the names run by ``--sizes gradbench`` (GradBench's own sizes where the program is
  a GradBench eval); ``BUMP``: ``(parameter, delta)``, the change that makes the second input shape
  (same ranks) of the per-shape compile probe;
- ``make_input(params, rng) -> dict`` for a ``SIZES`` entry (JSON-like input, the same shape of
  dict the GradBench modules' ``prepare`` takes);
- ``tool_pullback(inp, backend)``, ``tool_jax(inp)``, ``tool_torch(inp)``, ``tool_numba(inp)``
  (hand-derived derivative in plain Numba loops, ``manual/``) and, where a hand-written
  gradient is easy, ``tool_numpy(inp)``; each returns ``(primal, derivative, args)``: two
  callables and the argument tuple to call them with (input conversion happens here, untimed).
  Results are NumPy-convertible scalars/arrays or tuples of them, in the same order for every
  tool. ``tool_pullback``'s callables are generic in the input's sizes: the per-shape probe calls
  them with the arguments of a second ``tool_pullback`` call on the bumped input.

JAX, PyTorch and Numba are imported inside ``tool_jax`` / ``tool_torch`` / ``tool_numba`` only,
so that the runner can set thread-pinning environment variables first and so that a missing
framework only skips that tool.
"""
import importlib

class NotRun(Exception):
    """Raised by a ``tool_*`` that does not run at this size (the message says why): the runner
    shows "not run" in its row instead of timings, and does not count it as a failure."""


NAMES = ("lse", "llsq", "ode", "det", "det_lu", "gmm", "lstm", "kmeans")
SIZE_SETS = ("small", "default", "gradbench")


def load(name):
    if name not in NAMES:
        raise LookupError(f"unknown benchmark program {name!r} (available: {', '.join(NAMES)})")
    return importlib.import_module(f"{__name__}.{name}")


def sizes_of(mod, spec):
    """The size names of program `mod` that `spec` selects: a comma-separated list of set names
    (small, default, gradbench) and size names (a program without that size skips it); a name
    prefixed with ``-`` is left out (``gradbench,-gb-k1000``)."""
    out, drop = [], set()
    for tok in (t.strip() for t in spec.split(",")):
        if tok.startswith("-"):
            drop.add(tok[1:])
            continue
        names = {"small": ["small"], "default": ["default"], "gradbench": list(mod.GRADBENCH)}.get(tok)
        for n in names if names is not None else ([tok] if tok in mod.SIZES else []):
            if n not in out:
                out.append(n)
    return [n for n in out if n not in drop]


def all_size_names():
    return sorted({n for p in NAMES for n in load(p).SIZES} | set(SIZE_SETS))


def params(mod, size, bump=False):
    """The parameters of size `size` of `mod`; with `bump`, those of the per-shape probe's input."""
    p = dict(mod.SIZES[size])
    if bump:
        key, delta = mod.BUMP
        p[key] += delta
    return p


def label(p):
    return ", ".join(f"{k} = {v}" for k, v in p.items())
