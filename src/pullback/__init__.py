"""pullback: a differentiating compiler for numeric Python.

Public API only; see `pullback.api`.
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
)
from .combinators import map, vmap  # noqa: A004
from .reducers import add, associative_scan, hist, max, min, mul, reduce, scatter  # noqa: A004
from .checkpointing import Binomial, Bisection, Budget, Joint, Online, Store, StripMine
from .custom import ShapeDtypeStruct, checkpoint, custom_jvp, custom_vjp, pure_callback
from .lax import stop_gradient
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
