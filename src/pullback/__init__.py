"""pullback: a differentiating compiler for numeric Python.

Public API only; see `pullback.api`. Importing pullback is cheap: the frontend,
the passes and the backends are imported when first needed, and `map`, `vmap`,
`stop_gradient` and the reducers (their modules register them with the
frontend) on first access (note [warm-start]).
"""
from .api import (
    DEFAULT_BACKEND,
    MemoryReport,
    derivative_source,
    grad,
    hessian,
    jacfwd,
    jacobian,
    jacrev,
    jit,
    jvp,
    memory_report,
    value_and_grad,
    vjp,
    wait_for_compiles,
)
from .checkpointing import Binomial, Bisection, Budget, Joint, Online, Store, StripMine
from .custom import ShapeDtypeStruct, checkpoint, custom_jvp, custom_vjp, pure_callback
from .machine import Capsule, interrupt, primops, resume
from .errors import (
    DuplicateIndexError,
    IndexOutOfBoundsError,
    IntegerDivisionError,
    IntegerPowerError,
    InternalError,
    MissingRuleError,
    NonDifferentiableError,
    PullbackError,
    RecursionDepthError,
    ShapeError,
    StagingError,
    UnsupportedSyntaxError,
)

__version__ = "0.1.0"


_LAZY = {"map": ".combinators", "vmap": ".combinators", "stop_gradient": ".lax",
         **{n: ".reducers" for n in ("add", "associative_scan", "hist", "max", "min", "mul", "reduce", "scatter")}}


def __getattr__(name):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'pullback' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(mod, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
