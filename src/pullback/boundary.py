"""The public API's boundary: what enters is checked, what leaves is a result
of the declared dtype or a located error (notes [api-errors], [output-dtypes]).

Contract:
- Argument checks for the transformations (`_prepare`, `_check_callable`,
  `_argnums`, `_static_argnums`, `_check_backend`, `_check_parallel`,
  `_tuple_arg`, `_positional`) raise `PullbackError`s with a hint; they import
  nothing heavy (`_check_callable` looks for `StagedClosure` only when the
  frontend is already loaded, `_check_parallel(None)` imports nothing).
- `default_backend()`: ``$PULLBACK_BACKEND`` or `DEFAULT_BACKEND`, one of
  `BACKENDS`.
- `_fast_key(args, static, statics=None)`: a cheap signature key and the leaves
  for calls with arrays and numbers, flat tuples, lists or string-keyed dicts
  of them, and static ints, strings or tuples of them (keyed by a
  `StaticTokens`' stand-ins when given); or None.
- `_out_dtypes(prog)` and `_to_output(v, dt)`: a backend's results converted
  to the entry's declared result dtypes.
- `_Boundary` (callables with `_call(args, kwargs)`; a call of arrays, floats
  and bools alone first looks its key up in `_hot`, the direct callers, where
  a callable has set it: note [call-overhead]) and `_api` (functions):
  any exception leaving becomes `_boundary_error(e)`, the located
  `PullbackError` of `errors.user_error`, its traceback through pullback
  dropped unless ``$PULLBACK_DEBUG`` is set (then internal exceptions pass
  unchanged).
- No module state; a `StaticTokens` (one per jit) and a `_hot` dict are
  per-callable state that threads share safely (dict reads, `setdefault`).
  Safe from any thread.
"""
from __future__ import annotations

import os
import sys

import numpy as np

from .errors import PullbackError, debugging, short_repr, user_error

DEFAULT_BACKEND = "numba"
BACKENDS = ("numba", "pysource", "interp")


def default_backend() -> str:
    """The backend transformations use when none is given: ``$PULLBACK_BACKEND``
    if set (``numba``, ``pysource`` or ``interp``), else ``"numba"``."""
    name = os.environ.get("PULLBACK_BACKEND") or DEFAULT_BACKEND
    if name not in BACKENDS:
        raise PullbackError(f"PULLBACK_BACKEND={name!r} is not a backend",
                            hint="set PULLBACK_BACKEND to 'numba', 'pysource' or 'interp', or unset it")
    return name


_SIMPLE = (float, int, bool)
_ND = np.ndarray
# the scalars the hot lookup keys as `_leaf_key` does (by type; an int also needs its range checked)
_HOT_SCALARS = {float: float, bool: bool}


# NumPy's array flags that numba's argument type depends on: NPY_ARRAY_C_CONTIGUOUS,
# _F_CONTIGUOUS, _ALIGNED, _WRITEABLE (a read-only array is copied at the boundary)
_LAYOUT_FLAGS = 0x1 | 0x2 | 0x100 | 0x400


def _leaf_key(a):
    """`_fast_key`'s key of one array or number, or None (anything else). An array's
    key holds its dtype, shape and the layout flags numba's type of it depends on, so
    that a key fixes the compiled function an argument calls (note [call-overhead])."""
    t = type(a)
    if t is np.ndarray:   # the common case first: one type test
        dt = a.dtype
        return (dt, a.shape, a.flags.num & _LAYOUT_FLAGS) if dt.kind in "fib" else None
    if isinstance(a, (np.ndarray, np.generic)):
        if a.dtype.kind not in "fib" or not isinstance(a, np.generic):
            return None  # uint64, other dtypes and ndarray subclasses take the checked path
        return (a.dtype, a.shape)
    if t in _SIMPLE:
        if t is int and not -_I64 <= a < _I64:
            return None   # staging says it does not fit in 64 bits
        return t
    return None


_I64 = 2 ** 63
_STATIC_ATOMS = frozenset((int, bool, str, type(None)))   # no floats: a NaN never equals itself: no hit


def _static_key(v):
    """`_fast_key`'s key of a static argument: an int, bool, str or None, or a
    tuple of them (exact types, so that (1, 2) and (1.0, 2) or (True,) and (1,)
    differ as staging would see them); None for anything else."""
    t = type(v)
    if t in _STATIC_ATOMS:
        return ("s", t, v)
    if t is tuple:
        types = tuple(map(type, v))
        if _STATIC_ATOMS.issuperset(types):
            return ("s", types, v)
    return None


class StaticTokens:
    """Stand-ins for static arguments in one callable's fast keys: a unique object per
    distinct `_static_key`, so that a key holding it hashes and compares in constant time
    (a static tuple of 22 ints hashed and compared element by element was a quarter of a
    warm call). The last value seen at each position is remembered by identity: a static
    value `_static_key` takes is an atom or a tuple of atoms, immutable, so the same object
    has the same key. Safe from any thread: `dict.setdefault` gives every thread the same
    object for a key (note [call-overhead])."""

    def __init__(self):
        self._tokens = {}
        self._last = {}   # position -> (value, token); the value held, so its identity stays its own

    def token(self, i, v):
        last = self._last.get(i)
        if last is not None and last[0] is v:
            return last[1]
        k = _static_key(v)
        if k is None:
            return None
        tok = self._tokens.get(k)
        if tok is None:
            tok = self._tokens.setdefault(k, object())
        self._last[i] = (v, tok)
        return tok


def _leaves_key(seq):
    """`tuple(map(_leaf_key, seq))`, with plain arrays keyed in place (no call per array)."""
    return tuple([(a.dtype, a.shape, a.flags.num & _LAYOUT_FLAGS) if type(a) is _ND and a.dtype.kind in "fib"
                  else _leaf_key(a) for a in seq])


def _fast_key(args, static=(), statics=None):
    """(key, leaves) for a call whose arguments are arrays, numbers, tuples or
    lists of arrays and numbers, or dicts of them with string keys (one level),
    and static arguments (positions
    `static`) that `_static_key` takes (keyed by `statics`' tokens when given);
    None otherwise, and the general signature key is used. `leaves`: the
    non-static arguments flattened as `pytree.flatten` does. uint64 values and
    ints outside int64 always take the checked path."""
    if not static:   # the common case: arrays and numbers only, which are their own leaves
        key = _leaves_key(args)
        if None not in key:
            return key, args
    key, leaves = [], []
    for i, a in enumerate(args):
        if i in static:
            k = statics.token(i, a) if statics is not None else _static_key(a)
        elif type(a) in (tuple, list):
            k = (type(a), _leaves_key(a))
            if None in k[1]:
                return None
            leaves.extend(a)
        elif type(a) is dict:   # string keys: `pytree.flatten`'s order is the sorted keys
            names = sorted(a) if all(type(n) is str for n in a) else None
            if names is None:
                return None
            vals = [a[n] for n in names]
            k = (dict, tuple(names), _leaves_key(vals))
            if None in k[2]:
                return None
            leaves.extend(vals)
        else:
            k = _leaf_key(a)
            leaves.append(a)
        if k is None:
            return None
        key.append(k)
    return tuple(key), leaves


def _out_dtypes(prog):
    """NumPy dtypes of the entry's results: outputs are converted to these (note [output-dtypes])."""
    from .ir.types import TensorType, np_dtype

    return tuple(np.dtype(np_dtype(t.dtype)) if isinstance(t, TensorType) else None
                 for t in prog.func(prog.entry).ret_types)


_PY_KIND = {float: "f", int: "i", bool: "b"}


def _to_output(v, dt):
    """A backend's result as the IR result type `dt` says: arrays of that dtype (no
    copy when they already have it), 0-d arrays as NumPy scalars, Python scalars kept
    when their kind is right."""
    if isinstance(v, np.ndarray):
        if dt is not None and v.dtype != dt:
            v = v.astype(dt)
        return v if v.ndim else v[()]
    if dt is None:
        return v
    if isinstance(v, np.generic):
        return v if v.dtype == dt else dt.type(v)
    if _PY_KIND.get(type(v)) == dt.kind and dt.itemsize == 8 or type(v) is bool and dt.kind == "b":
        return v
    return dt.type(v)


def _positional(fun, args, kwargs) -> tuple:
    """Keyword arguments bound to `fun`'s positional parameters (as Python would)."""
    import inspect

    target = getattr(fun, "fun", fun)
    try:
        bound = inspect.signature(target, follow_wrapped=False).bind(*args, **kwargs)
        bound.apply_defaults()
    except (TypeError, ValueError) as e:
        raise PullbackError(f"cannot pass these arguments to {getattr(target, '__name__', 'the function')}: {e}",
                            hint="pass the arguments its signature declares") from None
    if bound.kwargs:
        raise PullbackError(f"keyword-only arguments {sorted(bound.kwargs)} are not supported by transformations",
                            hint="make them positional parameters")
    return tuple(bound.args)


def _check_callable(fun, what):
    staging = sys.modules.get("pullback.frontend.staging")  # not imported: fun cannot be a StagedClosure
    if staging is not None and isinstance(fun, staging.StagedClosure):  # a nested def or lambda in staged code
        return                                                           # (note [closures])
    if not callable(fun):
        raise PullbackError(f"{what} needs a function, got {short_repr(fun)} of type {type(fun).__name__}",
                            hint=f"pass the function itself: pb.{what}(f), then call the result with the arguments")
    if isinstance(fun, type):
        raise PullbackError(f"{what} needs a function, got the class {fun.__name__}",
                            hint="pass a function (or a method of an instance) that computes with NumPy")


def _argnums(argnums, what, single=False):
    """`argnums` validated: an int, or (unless `single`) a non-empty tuple/list of distinct ints."""
    def bad(msg):
        return PullbackError(f"{what}: {msg}",
                             hint="argnums is the position of the argument to differentiate (an int), "
                                  + ("" if single else "or a tuple of distinct positions, ") + "e.g. argnums=0")

    if isinstance(argnums, (int, np.integer)) and not isinstance(argnums, (bool, np.bool_)):
        return int(argnums)
    if single:
        raise bad(f"argnums must be an int, got {short_repr(argnums)}")
    if not isinstance(argnums, (tuple, list)):
        raise bad(f"argnums must be an int or a tuple of ints, got {short_repr(argnums)}")
    if not argnums:
        raise bad("argnums is empty")
    out = []
    for n in argnums:
        if not isinstance(n, (int, np.integer)) or isinstance(n, (bool, np.bool_)):
            raise bad(f"argnums must contain ints, got {short_repr(n)}")
        out.append(int(n))
    if len(set(out)) != len(out):
        raise bad(f"argnums {tuple(out)} repeats a position")
    return tuple(out)


def _static_argnums(static_argnums):
    if isinstance(static_argnums, (int, np.integer)) and not isinstance(static_argnums, (bool, np.bool_)):
        return (int(static_argnums),)
    if isinstance(static_argnums, (tuple, list)) and all(
            isinstance(n, (int, np.integer)) and not isinstance(n, (bool, np.bool_)) for n in static_argnums):
        return tuple(int(n) for n in static_argnums)
    raise PullbackError(f"static_argnums must be an int or a tuple of ints, got {short_repr(static_argnums)}",
                        hint="static_argnums lists the positions of arguments whose values are fixed when staging")


def _check_backend(backend):
    if backend is not None and backend not in BACKENDS:
        raise PullbackError(f"unknown backend {short_repr(backend)}", hint="use backend='numba', 'pysource' or 'interp'")
    return backend


def _name(fun, what):
    return f"{what}({getattr(fun, '__name__', 'f')})"


def _check_parallel(parallel, what):
    if parallel is None:
        return None
    from .backends.numba_parallel import check_parallel

    return check_parallel(parallel, what)


def _prepare(fun, what, backend, argnums=None, single=False, parallel=None):
    _check_callable(fun, what)
    _check_backend(backend)
    _check_parallel(parallel, what)
    return None if argnums is None else _argnums(argnums, what, single)


def _tuple_arg(v, what, name):
    if not isinstance(v, (tuple, list)):
        raise PullbackError(f"{what}: {name} must be a tuple (or list) with one entry per argument, "
                            f"got {type(v).__name__}", hint=f"write pb.{what}(f, (x,), (t,)) for one argument")
    return tuple(v)


class _Boundary:
    """Public callables: turn anything leaving `_call` into a located PullbackError.
    `_hot`: None, or a dict of direct callers keyed as `_fast_key` keys plain arrays,
    floats and bools (note [call-overhead]), looked up first for calls of those alone."""

    _hot = None

    def __call__(self, *args, **kwargs):
        try:
            hot = self._hot
            if hot is not None and not kwargs:
                # `_fast_key`'s key where every argument is a plain ndarray, a float or a bool;
                # any other argument gives the key a None, which no key in `hot` has. Spelt
                # out for one and two arguments: a comprehension's frame costs as much as the rest
                n = len(args)
                if n == 1:
                    a = args[0]
                    key = ((a.dtype, a.shape, a.flags.num & _LAYOUT_FLAGS) if type(a) is _ND
                           else _HOT_SCALARS.get(type(a)),)
                elif n == 2:
                    a, b = args
                    key = ((a.dtype, a.shape, a.flags.num & _LAYOUT_FLAGS) if type(a) is _ND
                           else _HOT_SCALARS.get(type(a)),
                           (b.dtype, b.shape, b.flags.num & _LAYOUT_FLAGS) if type(b) is _ND
                           else _HOT_SCALARS.get(type(b)))
                else:
                    key = tuple([(a.dtype, a.shape, a.flags.num & _LAYOUT_FLAGS) if type(a) is _ND
                                 else _HOT_SCALARS.get(type(a)) for a in args])
                direct = hot.get(key)
                if direct:
                    return direct(*args)
            return self._call(args, kwargs)
        except Exception as e:
            if debugging() and not isinstance(e, PullbackError):
                raise
            raise _boundary_error(e) from None


def _boundary_error(e):
    """`e` as the located PullbackError a public entry point raises; its traceback
    through pullback's internals is dropped unless $PULLBACK_DEBUG is set."""
    err = user_error(e)
    if not debugging():
        err.__cause__ = None
        err.__suppress_context__ = True
        err = err.with_traceback(None)
    return err


def _api(fn):
    """Decorator for public functions: the same boundary as `_Boundary`."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            if debugging() and not isinstance(e, PullbackError):
                raise
            raise _boundary_error(e) from None
    return wrapper
