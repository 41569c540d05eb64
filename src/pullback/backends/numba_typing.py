"""A memo of numba's call-type resolution while pullback's modules compile
(note [compile-time], "Call types").

numba types a call of a function value (``operator.mul``, ``np.exp``,
``np.empty``, ...) by trying that function's typing templates in order until
one accepts the argument types, every time it meets the call, in every pass
of its type inference over a function. A template that declines formats an
error message listing its registered cases, and most calls are declined by
several templates before one accepts: about 10 templates tried per call in
lstm's gradient, 60-70% of numba's typing time in pullback's generated
modules, which repeat the same operators on the same types hundreds of times.

Contract:
- `install()` / `uninstall()`: called by `numba_opt.numba_opt` on entering and
  leaving its outermost context, under numba's global compiler lock (so no
  other thread's numba compile, user code included, sees the memo). While
  installed, `BaseFunction.get_call_type` answers a call it resolved before, with the
  same typing context, function type (its templates included) and argument
  types (literal values included), from `_MEMO`: the same signature, and the
  same implementation key recorded again for lowering (`_impl_keys`), as the
  template search gives, since the search depends on nothing else. Failed
  resolutions are not remembered (they raise numba's error as before).
- `STATS`: hits and misses, for tests and benchmarks.
- `wrap_method(cls, name, make)` / `unwrap_method(cls, name)`: install a
  wrapper of a numba method (marked by its `__wrapped__`) once, and restore
  numba's; `numba_inlining` uses them too.
"""
from __future__ import annotations

_MEMO: dict = {}
STATS = {"hits": 0, "misses": 0}


def _memoised(orig):
    def get_call_type(self, context, args, kws):
        try:
            key = (context, self, tuple(args), tuple(sorted(kws.items())))
            hit = _MEMO.get(key)
        except TypeError:   # an unhashable argument type: resolve as numba does
            return orig(self, context, args, kws)
        if hit is not None:
            sig, impl = hit
            self._impl_keys[sig.args] = impl
            STATS["hits"] += 1
            return sig
        sig = orig(self, context, args, kws)
        STATS["misses"] += 1
        if sig is not None:
            _MEMO[key] = (sig, self._impl_keys[sig.args])
        return sig

    get_call_type.__wrapped__ = orig
    return get_call_type


def wrap_method(cls, name: str, make) -> None:
    """`cls.name` becomes `make(numba's method)` (which sets `__wrapped__`), unless it is wrapped
    already (call with numba's global compiler lock held)."""
    orig = cls.__dict__[name]
    if getattr(orig, "__wrapped__", None) is None:
        setattr(cls, name, make(orig))


def unwrap_method(cls, name: str) -> None:
    """numba's own `cls.name` again, where `wrap_method` replaced it."""
    orig = getattr(cls.__dict__[name], "__wrapped__", None)
    if orig is not None:
        setattr(cls, name, orig)


def method_patch(module: str, cls: str, name: str, make):
    """The (install, uninstall) pair of one `wrap_method` of numba's `module.cls.name`
    (call both with numba's global compiler lock held; `module` is imported then)."""
    import importlib

    def install() -> None:
        wrap_method(getattr(importlib.import_module(module), cls), name, make)

    def uninstall() -> None:
        unwrap_method(getattr(importlib.import_module(module), cls), name)

    return install, uninstall


def install() -> None:
    """Answer call types from `_MEMO` (call with numba's global compiler lock held)."""
    from numba.core.types.functions import BaseFunction

    wrap_method(BaseFunction, "get_call_type", _memoised)


def uninstall() -> None:
    """numba's own resolution again."""
    from numba.core.types.functions import BaseFunction

    unwrap_method(BaseFunction, "get_call_type")
