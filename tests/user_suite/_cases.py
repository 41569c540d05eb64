"""The case registry of the user suite.

Contract: `case(*args, ...)` is a decorator that records the decorated plain
NumPy function with example arguments in the calling module's `CASES` list
(created on first use) and returns the function unchanged. Options:

- `argnums`: positions differentiated (default: every argument holding a float);
- `hess`: also check `pb.hessian` (argument `argnums[0]`, scalar output);
- `rtol`/`atol`: tolerances against finite differences (defaults 1e-5 / 1e-6,
  scaled by the largest derivative entry);
- `grad`: the exact expected gradient (edge points where finite differences
  are meaningless, e.g. sqrt at 0) -- then the FD comparison is skipped;
- `fd_eps`: finite-difference step;
- `slow`: the case is slow; `xfail`: reason a construct is unsupported
  (strict xfail).

Arguments are deep-copied for every call, so functions may not rely on
mutating them (and a function that mutates its inputs is caught by the primal
check).
"""
from __future__ import annotations

import copy
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class Case:
    name: str
    fn: Callable
    args: tuple
    argnums: tuple | None = None
    hess: bool = False
    rtol: float = 1e-5
    atol: float = 1e-6
    grad: Any = None
    fd_eps: float = 1e-6
    slow: bool = False
    xfail: str | None = None
    module: str = ""

    def fresh(self) -> tuple:
        return copy.deepcopy(self.args)


def case(*args, argnums=None, hess=False, rtol=1e-5, atol=1e-6, grad=None, fd_eps=1e-6,
         slow=False, xfail=None):
    frame = inspect.currentframe().f_back
    reg = frame.f_globals.setdefault("CASES", [])
    modname = frame.f_globals.get("__name__", "").split(".")[-1]

    def deco(fn):
        if isinstance(argnums, int):
            nums = (argnums,)
        else:
            nums = argnums
        reg.append(Case(fn.__name__, fn, tuple(args), nums, hess, rtol, atol, grad, fd_eps,
                        slow, xfail, modname))
        return fn

    return deco
