"""Calls: NumPy/builtins dispatch, user helper functions (staged as IR `Func`s by
`funcs`), inlined nested closures, `__pullback_stage__` hooks and the
`StagingContext` those hooks receive.

Contract:
- `call(st, fn, args, kwargs)` evaluates a call during staging. Calls without
  traced arguments run natively in Python, except NumPy creation functions
  (staged as `full`) and hooks. A user function with traced arguments becomes
  an `Apply` of its IR `Func` (`funcs.call_function`: one per signature,
  recursion, in-place updates of its arguments seen by the caller). A NumPy
  function that copies returns a new array object even when the IR value is
  the same (`a.copy()`), so that in-place updates respect aliasing (`alias`).
- Nested `def`s and lambdas are inlined (`call_closure`), in the same frames.
  A `functools.partial` is called as its function with its bound arguments; the
  `operator` module's arithmetic functions are the corresponding operators.
- A function value that a transformation stages as a separate IR function
  (`StagingContext.capture`) and that reads traced values of the function being
  staged (a nested `def`/`lambda` closing over them, a `partial` binding them, a
  transformation of either) is closure-converted: it becomes a `Captured` hook
  whose IR function takes those values as extra trailing parameters (note [closures]).
- `scipy.stats.norm.logpdf` and the other log-densities of `scipy_stats` are staged
  from that module's NumPy source.
- `np.add.at`/`np.subtract.at` update their array in place (accumulating repeated indices).
- `map`, `functools.reduce` and `sorted` with traced items or a staged function are
  staged over the items (`iterables.builtin_*`); a dict view holding traced values
  (`sum(d.values())`) is passed on as a list.
- Any other callable (a NumPy ufunc, `operator.mul`, ...) is staged as a call of it.
- A callable pullback cannot look into (a C extension, a builtin outside the frontend's
  tables, `np.frompyfunc`, a ctypes function) called with traced arguments is a located
  error naming it and pointing to `pb.pure_callback` with `pb.custom_vjp` (`opaque_error`).
- `stage_entry` stages the top-level function.
"""
from __future__ import annotations

import ast
import builtins
import functools
import inspect
import sys
import operator
import types

import numpy as np

from ..errors import PullbackError, StagingError
from ..ir.builder import Builder
from ..ir.core import Func
from ..pytree import flatten, unflatten
from . import alias, control, iterables, views
from .funcs import FuncEntry, ProgramState, _bind, _subst, call_function, captured_values, signature_of
from .funcs import stage_func
from .numpy_api import ALWAYS_STAGED, METHODS, BoundMethod, describe, lookup
from .staging import Frame, Interp, StagedClosure
from .values import Traced, leaf_type, to_atom

MAX_INLINE_DEPTH = 200


# -- calls --------------------------------------------------------------------------------

def _any_traced(args, kwargs, fn=None):
    """Whether a call involves traced values: traced arguments, or function values defined in
    staged code or reading traced values (those cannot run in Python), except as arguments of
    pullback's own functions (`pb.grad(lambda y: x * y)` makes a transformation object)."""
    leaves, _ = flatten((tuple(args), dict(kwargs)))
    if any(isinstance(x, Traced) for x in leaves):
        return True
    mod = getattr(fn, "__module__", None) or ""
    # pullback's API, but not the user code shipped inside the package (the GradBench modules)
    if mod.startswith("pullback.") and not mod.startswith("pullback.gradbench.") and not getattr(
            fn, "__pullback_stages_functions__", False):
        return False
    return any(_is_staged_fun(x) for x in leaves)


def _is_staged_fun(x):
    if isinstance(x, (int, float, complex, str, bytes, np.ndarray, np.generic, type)):
        return False
    found, staged = captured_values(x)
    return staged or bool(found)


_DICT_VIEWS = (type({}.values()), type({}.items()))  # sum(d.values()): its traced items, as a list
# builtins that call a function value or order items, staged over the items (iterables.py)
_HIGHER_ORDER = {builtins.map: lambda st, *a: iterables.builtin_map(st, call, *a),
                 functools.reduce: lambda st, *a: iterables.builtin_reduce(st, call, *a),
                 builtins.sorted: lambda st, *a, **k: iterables.builtin_sorted(st, *a, **k),
                 np.add.at: lambda st, *a: _ufunc_at(st, "add", *a),
                 np.subtract.at: lambda st, *a: _ufunc_at(st, "sub", *a)}


def _ufunc_at(st, op, a, idx, b=None):
    """`np.add.at(a, idx, b)` / `np.subtract.at`: an unbuffered increment of `a` in place, every
    occurrence of a repeated index counted (the accumulating `take_add`)."""
    from . import ops
    if b is None:
        raise StagingError(f"np.{'add' if op == 'add' else 'subtract'}.at needs the values to add")
    if not isinstance(a, (Traced, np.ndarray)):
        raise StagingError("np.add.at updates an array in place; its first argument must be an array")
    v = b if op == "add" else ops.unary(st, "neg", b if isinstance(b, Traced) else ops.as_traced(st, b))
    new = ops.setitem(st, a, idx, v, mode="add")
    alias.replace(st, a, new)
    return None


def call(st, fn, args, kwargs):
    if fn is builtins.super and not args and not kwargs:
        return _zero_arg_super(st)
    if isinstance(fn, functools.partial):
        return call(st, fn.func, list(fn.args) + list(args), {**fn.keywords, **kwargs})
    if fn is functools.partial:  # binding traced values: a Python object holding them
        return functools.partial(*args, **kwargs)
    if isinstance(fn, BoundMethod):
        r = _fresh(fn.name, METHODS[fn.name](st, fn.obj, *args, **kwargs), (fn.obj,) + tuple(args))
        return views.note_call(st, fn.name, fn.obj, r, _redo_method(st, fn.name, args, kwargs))
    if isinstance(fn, StagedClosure):
        return call_closure(st, fn, args, kwargs)
    if not isinstance(fn, type) and hasattr(fn, "__pullback_stage__"):
        return fn.__pullback_stage__(StagingContext(st), tuple(args), dict(kwargs))
    args = [list(a) if isinstance(a, _DICT_VIEWS) and _any_traced((list(a),), {}) else a for a in args]
    traced = _any_traced(args, kwargs, fn) or any(isinstance(a, control.TracedIterable) for a in args)
    try:
        higher = _HIGHER_ORDER.get(fn) if traced else None
    except TypeError:  # an unhashable callable (a ctypes function): not one of them
        higher = None
    if higher is not None:
        return higher(st, *args, **kwargs)
    if traced and "scipy.stats" in sys.modules:   # imported only once the user has imported scipy.stats
        from . import scipy_stats
        stats_fn = scipy_stats.lookup(fn)
        if stats_fn is not None:
            return call_function(st, stats_fn, args, kwargs)
    if fn is builtins.range and traced:
        return control.traced_range(st, args)
    if fn is builtins.enumerate and traced:
        return control.traced_enumerate(st, *args, **kwargs)
    if fn is builtins.zip and traced:
        return control.traced_zip(st, *args)
    if fn is builtins.reversed and len(args) == 1 and (traced or isinstance(args[0], (range, control.TracedIterable))):
        return control.traced_reversed(st, args[0])
    if fn in (builtins.list, builtins.tuple) and args and isinstance(args[0], control.TracedIterable):
        it = args[0]
        if not it.static:
            raise StagingError("cannot build a Python list from a range with a traced length")
        return fn(it.element(k) for k in range(it.n))
    if traced and _transparent(fn, args):
        return fn(*args, **kwargs)
    if traced and not kwargs and _operator(fn) is not None:
        return _operator(fn)(st, *args)
    h = lookup(fn)
    if h is not None and (traced or fn in ALWAYS_STAGED):
        name = getattr(fn, "__name__", "")
        r = _fresh(name, h(st, *args, **kwargs), args)
        return views.note_call(st, name, args[0], r, _redo_func(st, fn, args, kwargs)) if args else r
    if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType) and traced:
        return call_function(st, fn.__func__, (fn.__self__,) + tuple(args), kwargs)
    if isinstance(fn, types.FunctionType) and traced:
        return call_function(st, fn, args, kwargs)
    if not traced:
        return _native(st, fn, args, kwargs)
    if fn in (builtins.list, builtins.tuple) and args and isinstance(args[0], Traced):
        x = args[0]
        if x.ndim == 0:
            raise StagingError("cannot iterate over a traced scalar")
        from . import ops
        return fn(ops.getitem(st, x, k) for k in range(x.shape[0]))
    raise opaque_error(fn)


_OPAQUE_HINT = ("to use it anyway, call it through pb.pure_callback(fn, pb.ShapeDtypeStruct(shape, dtype), x) "
                "inside a function wrapped in pb.custom_vjp (or pb.custom_jvp) whose rule gives its derivative; "
                "or write it in Python, or with the NumPy functions pullback supports (docs/numpy_coverage.md)")


def opaque_name(fn) -> str:
    """A readable name for a callable pullback cannot look into (`scipy.special.i0`)."""
    name = getattr(fn, "__name__", None)
    if isinstance(fn, np.ufunc) and name:
        for modname in ("numpy", "scipy.special"):
            mod = __import__("sys").modules.get(modname)
            if mod is not None and getattr(mod, name, None) is fn:
                return f"{modname}.{name}"
        return name
    text = describe(fn)
    mod = getattr(fn, "__module__", None) or ""
    if mod.startswith("_") and getattr(__import__("sys").modules.get(mod[1:]), str(name), None) is fn:
        text = f"{mod[1:]}.{name}"  # _functools.reduce -> functools.reduce
    return text


def opaque_kind(fn) -> str:
    """What kind of opaque callable `fn` is, for error messages."""
    if isinstance(fn, np.ufunc):
        return "a NumPy ufunc (compiled code, or a Python function wrapped by np.frompyfunc)"
    if type(fn).__name__ in ("_FuncPtr", "CFuncPtr") or "ctypes" in type(fn).__module__:
        return "a ctypes foreign function"
    if isinstance(fn, (types.BuiltinFunctionType, types.BuiltinMethodType)) or type(fn).__name__ in (
            "method-wrapper", "wrapper_descriptor", "method_descriptor", "cython_function_or_method",
            "fused_cython_function"):
        return "a builtin or C-extension function, with no Python source"
    return f"a {type(fn).__name__} object, not a Python function pullback can read"


def opaque_error(fn) -> StagingError:
    """The located error for a call with traced arguments of a function pullback cannot stage."""
    return StagingError(f"'{opaque_name(fn)}' is {opaque_kind(fn)}; pullback cannot stage or differentiate "
                        "a call of it with traced arguments", hint=_OPAQUE_HINT)


# NumPy functions and methods whose result may be the argument array itself (a view of it, or
# the same object: `np.asarray(a) is a`); any other result that is a traced argument becomes a new
# object, since in NumPy it is a new array (`a.copy()`, `a.astype(a.dtype)`, `np.array(a)`): an
# in-place update of one must not change the other (see `alias`).
_MAY_ALIAS = {"asarray", "asanyarray", "reshape", "ravel", "transpose", "squeeze", "broadcast_to",
              "atleast_1d", "atleast_2d", "atleast_3d", "expand_dims", "swapaxes", "moveaxis", "view"}


def _fresh(name, result, args):
    if isinstance(result, Traced) and name not in _MAY_ALIAS and any(result is a for a in args):
        return Traced(result.atom)
    return result


_MUTATING_METHODS = {"fill", "sort", "put", "partition", "resize", "itemset", "byteswap", "setfield"}
_MUTATING_NP = {np.copyto, np.put, np.place, np.putmask, np.fill_diagonal, np.put_along_axis}


def _native(st, fn, args, kwargs):
    """Run a call on concrete values in Python. A user function, an in-place NumPy function or
    array method, or an `out=` argument may change concrete arrays passed to it: those run on
    copies, and each changed array is rebound functionally (`alias.replace`), so that the change
    stays inside the traced `if` or loop body being staged, as the frontend's other updates do."""
    owner = getattr(fn, "__self__", None)
    try:
        mutating = ((isinstance(fn, types.FunctionType) and not (fn.__module__ or "").startswith("numpy"))
                    or (isinstance(owner, np.ndarray) and getattr(fn, "__name__", "") in _MUTATING_METHODS)
                    or fn in _MUTATING_NP or (isinstance(owner, np.ufunc) and fn.__name__ == "at")
                    or "out" in kwargs)
    except TypeError:  # unhashable callable
        mutating = False
    if not mutating:
        r = fn(*args, **kwargs)
        if isinstance(r, np.ndarray):
            name = getattr(fn, "__name__", "")
            if isinstance(owner, np.ndarray):
                return views.note_call(st, name, owner, r, _redo_method(st, name, args, kwargs))
            if args and isinstance(args[0], np.ndarray):
                return views.note_call(st, name, args[0], r, _redo_func(st, fn, args, kwargs))
        return r
    copies: dict = {}

    def cp(v):
        if isinstance(v, np.ndarray):
            return copies.setdefault(id(v), (v, v.copy()))[1]
        return v

    if isinstance(owner, np.ndarray):
        fn = getattr(cp(owner), fn.__name__)
    args = [cp(a) for a in args]
    kwargs = {k: cp(v) for k, v in kwargs.items()}
    r = fn(*args, **kwargs)
    for orig, new in copies.values():
        if orig.shape != new.shape or not np.array_equal(orig, new, equal_nan=orig.dtype.kind in "fc"):
            alias.replace(st, orig, new)
    return r


def _redo_method(st, name, args, kwargs):
    """The same method call on another array (views.note_call)."""
    return lambda b: call(st, getattr(b, name) if isinstance(b, np.ndarray) else BoundMethod(name, b), args, kwargs)


def _redo_func(st, fn, args, kwargs):
    """The same function call with another first argument (views.note_call)."""
    return lambda b: call(st, fn, [b] + list(args[1:]), kwargs)


def _zero_arg_super(st):
    """`super()` in a staged method: its class cell and first argument, as Python finds them."""
    f, cls = st.frame, None
    while f is not None and cls is None:
        cls = f.closure.get("__class__")
        f = f.parent
    a = getattr(st.src.node, "args", None)
    params = list(getattr(a, "posonlyargs", [])) + list(getattr(a, "args", [])) if a is not None else []
    if cls is None or not params or params[0].arg not in st.frame.vars:
        raise StagingError("super() without arguments is only supported directly in a method",
                           hint="write super(Class, self)")
    return super(cls, st.frame.vars[params[0].arg])


_BIN_OPERATORS = {operator.add: ast.Add, operator.sub: ast.Sub, operator.mul: ast.Mult,
                  operator.truediv: ast.Div, operator.floordiv: ast.FloorDiv, operator.mod: ast.Mod,
                  operator.pow: ast.Pow, operator.matmul: ast.MatMult}
_CMP_OPERATORS = {operator.lt: "lt", operator.le: "le", operator.gt: "gt", operator.ge: "ge",
                  operator.eq: "eq", operator.ne: "ne"}


def _operator(fn):
    """The staging of an `operator` module function (`operator.mul(a, b)` is `a * b`), or None."""
    try:
        if fn in _BIN_OPERATORS:
            return lambda st, a, b: st.binop(_BIN_OPERATORS[fn], a, b)
        if fn in _CMP_OPERATORS:
            from . import ops
            return lambda st, a, b: ops.binary(st, _CMP_OPERATORS[fn], a, b)
        if fn in (operator.neg, operator.pos):
            return lambda st, a: st.unop(ast.USub if fn is operator.neg else ast.UAdd, a)
    except TypeError:  # unhashable callable
        return None
    return None


_TRANSPARENT = {builtins.isinstance, builtins.type, builtins.id, builtins.callable, builtins.hasattr,
                builtins.getattr, builtins.list, builtins.tuple, builtins.dict, builtins.repr}


def _transparent(fn, args):
    """Python-level functions that only store/inspect traced values (list.append, isinstance, ...)."""
    if isinstance(fn, types.BuiltinMethodType) and isinstance(getattr(fn, "__self__", None), (list, dict)):
        return True
    try:
        if fn in _TRANSPARENT:
            return not (args and isinstance(args[0], Traced) and fn in (builtins.list, builtins.tuple, builtins.dict))
    except TypeError:
        return False
    return False


def call_closure(st, clo: StagedClosure, args, kwargs):
    if st.inline_depth > MAX_INLINE_DEPTH:
        raise StagingError(f"recursion through the nested function '{clo.__name__}' is too deep",
                           hint="define recursive functions at module level so they become IR functions")
    sig = _closure_signature(clo)
    try:
        ba = sig.bind(*args, **kwargs)
    except TypeError as e:
        raise StagingError(f"{clo.__name__}(): {e}",
                           hint="call it with the arguments its signature declares") from None
    ba.apply_defaults()
    frame = Frame(dict(ba.arguments), clo.frame.globals, parent=clo.frame)
    saved = (st.frame, st.src, st.top_frame)
    st.frame, st.src = frame, clo.src
    st.inline_depth += 1
    try:
        r = st.exec_block(clo.src.body)
    finally:
        st.frame, st.src, _ = saved
        st.inline_depth -= 1
    return None if r is None else r[1]


def _closure_signature(clo):
    a = clo.node.args
    P = inspect.Parameter
    params = []
    pos = list(getattr(a, "posonlyargs", [])) + list(a.args)
    nd = len(clo.defaults)
    for i, arg in enumerate(pos):
        kind = P.POSITIONAL_ONLY if i < len(getattr(a, "posonlyargs", [])) else P.POSITIONAL_OR_KEYWORD
        d = clo.defaults[i - (len(pos) - nd)] if i >= len(pos) - nd else P.empty
        params.append(P(arg.arg, kind, default=d))
    if a.vararg:
        params.append(P(a.vararg.arg, P.VAR_POSITIONAL))
    for arg, d in zip(a.kwonlyargs, clo.kw_defaults):
        params.append(P(arg.arg, P.KEYWORD_ONLY, default=P.empty if d is None else d))
    if a.kwarg:
        params.append(P(a.kwarg.arg, P.VAR_KEYWORD))
    return inspect.Signature(params)


# -- closure conversion (note [closures]) ---------------------------------------------------

class Captured:
    """A closure-converted function value: staged as a function of the original arguments plus
    one trailing tuple of the traced values it captured, which replace the captured ones in
    its closures' frames, so the IR function reads only its own parameters. The derivative of
    a transformation of it is with respect to its own arguments; an enclosing transformation
    sees the captured values as arguments of the call and differentiates through them."""

    def __init__(self, fn, captured):
        self.fn, self.captured = fn, list(captured)
        self.__name__ = getattr(fn, "__name__", "f")

    def __pullback_stage__(self, ctx, args, kwargs):
        *user, caps = args
        m = {id(o): n for o, n in zip(self.captured, caps)}
        return call(ctx._st, _subst(self.fn, m, {}), list(user), dict(kwargs))

    def __repr__(self):
        return f"<closure-converted {self.fn!r}>"


# -- the top level and the hook context ---------------------------------------------------

def stage_callable(state, fn, names, vals, key, loc=None, force_atoms=True, fname=None, kwargs=None) -> FuncEntry:
    """Stage a Python function, a `__pullback_stage__` object or another callable (called
    with `names`=`vals` positionally, plus the concrete `kwargs`) as a Func."""
    hit = state.cache.get(key)
    if hit is not None:
        return hit
    if not isinstance(fn, type) and hasattr(fn, "__pullback_stage__") and not isinstance(fn, types.FunctionType):
        def runner(st, pvals):
            return fn.__pullback_stage__(StagingContext(st), tuple(pvals), {})
        return stage_func(state, fn, names, vals, key, runner=runner, loc=loc, force_atoms=force_atoms, fname=fname)
    if isinstance(fn, types.MethodType):
        return stage_callable(state, fn.__func__, ["self"] + names, [fn.__self__] + list(vals), key, loc,
                              force_atoms, fname, kwargs)
    if not isinstance(fn, types.FunctionType):
        if not callable(fn) and not isinstance(fn, StagedClosure):
            raise StagingError(f"cannot stage '{describe(fn)}': it is not a function",
                               hint="pass a function defined with def (or an object with __pullback_stage__)")

        def call_it(st, pvals):  # a NumPy ufunc, operator.mul, a nested def: staged as a call of it
            return call(st, fn, list(pvals), dict(kwargs or {}))
        return stage_func(state, fn, names, vals, key, runner=call_it, loc=loc, force_atoms=force_atoms,
                          fname=fname)
    return stage_func(state, fn, names, vals, key, loc=loc, force_atoms=force_atoms, fname=fname)


def _names_vals(fn, args, kwargs=None):
    """Parameter names and values for a positional call (defaults and *args as in Python)."""
    if isinstance(fn, (types.FunctionType, types.MethodType)):
        return _bind(fn, list(args), dict(kwargs or {}))
    return [f"arg{i}" for i in range(len(args))], list(args)


def _extra_kwargs(fn, kwargs):
    """Keyword arguments (of a `partial`) that `_names_vals` did not bind: those of a callable
    that is not a Python function."""
    return None if isinstance(fn, (types.FunctionType, types.MethodType)) else kwargs


def unwrap_callable(fn, args):
    """(function, args, kwargs) for calling `fn` on `args`: a `functools.partial`
    contributes its bound arguments (as concrete values), an instance with a
    Python `__call__` becomes that bound method; anything else is returned as is."""
    kwargs: dict = {}
    for _ in range(100):
        if isinstance(fn, functools.partial):
            args = tuple(fn.args) + tuple(args)
            kwargs = {**fn.keywords, **kwargs}
            fn = fn.func
        elif (not isinstance(fn, (type, types.FunctionType, types.MethodType, types.BuiltinFunctionType,
                                  StagedClosure))
              and not hasattr(fn, "__pullback_stage__")
              and isinstance(getattr(type(fn), "__call__", None), types.FunctionType)):
            fn = types.MethodType(type(fn).__call__, fn)
        else:
            break
    return fn, tuple(args), kwargs


def _hook_loc(fn):
    """A location for a top-level `__pullback_stage__` object: the definition of the user
    function it wraps (attribute __wrapped__/fun/fn/func/f), else None."""
    import linecache

    from ..ir.core import SrcLoc

    for attr in ("__wrapped__", "fun", "fn", "func", "f"):
        inner = getattr(fn, attr, None)
        code = getattr(inner, "__code__", None)
        if code is not None:
            line = code.co_firstlineno
            return SrcLoc(code.co_filename, line, linecache.getline(code.co_filename, line).rstrip("\n"))
    return None


class StagingContext:
    """What a `__pullback_stage__(ctx, args, kwargs)` hook may use (see module docstring)."""

    def __init__(self, st: Interp):
        self._st = st

    @property
    def builder(self) -> Builder:
        return self._st.b

    @property
    def loc(self):
        return self._st.loc

    @property
    def memo(self) -> dict:
        """A dict that lives as long as the program being staged (hooks memoise derived functions here)."""
        return self._st.state.memo

    @property
    def state(self) -> ProgramState:
        return self._st.state

    def to_atoms(self, tree):
        leaves, td = flatten(tree)
        return [to_atom(self._st.b, x) for x in leaves], td

    def from_atoms(self, atoms, treedef):
        return unflatten(treedef, [Traced(a) for a in atoms])

    def stage_function(self, fn, arg_types, in_tree, static=None):
        """Stage `fn` as a Func taking the leaves `arg_types` of the positional-argument tuple
        described by `in_tree` (plus `static`: a dict {position: Python value} or a tuple of
        (position, value) pairs inserted as static arguments). Returns (name, out_tree, ret_types)."""
        from ..ir.core import Var

        placeholders = [Traced(Var(f"a{i}", t)) for i, t in enumerate(arg_types)]
        args = unflatten(in_tree, placeholders)
        args = list(args) if isinstance(args, (tuple, list)) else [args]
        static = dict(static or {})
        for pos in sorted(static):
            args.insert(pos, static[pos])
        fn, args, kwargs = unwrap_callable(fn, args)
        names, vals = _names_vals(fn, args, kwargs)
        extra = _extra_kwargs(fn, kwargs)
        key = ("ctx", fn, signature_of(tuple(vals))) + ((signature_of(extra),) if extra else ())
        entry = stage_callable(self._st.state, fn, names, vals, key, loc=self._st.loc or _hook_loc(fn),
                               force_atoms=True, kwargs=extra)
        return entry.name, entry.out_tree, entry.ret_types

    def capture(self, fn):
        """(fn', captured): `fn` closure-converted when it is (or wraps) a function defined in
        staged code or reads traced values of the function being staged; `captured` is the list
        of those values, which `fn'` takes as one extra trailing argument (a tuple). Otherwise
        (fn, None). See `Captured`."""
        caps, staged = captured_values(fn)
        if not caps and not staged:
            return fn, None
        return Captured(fn, caps), caps

    def funcs(self):
        return list(self._st.state.funcs.values())

    def add_func(self, func: Func):
        self._st.state.add(func, extra=True)

    def fresh_func_name(self, hint: str) -> str:
        return self._st.state.names.fresh(hint)

    def apply(self, func_name, atoms, ret_types):
        return tuple(self._st.b.apply(func_name, list(atoms), tuple(ret_types)))


def stage_entry(fn, args, static_argnums=()):
    """Stage the top-level function; returns (prog, in_tree, out_tree, in_types)."""
    static = set(i % len(args) if args else i for i in static_argnums)
    nonstatic = tuple(a for i, a in enumerate(args) if i not in static)
    leaves, in_tree = flatten(nonstatic)
    in_types = []
    for x in leaves:
        try:
            in_types.append(leaf_type(x))
        except PullbackError:
            raise StagingError(f"argument leaf {x!r} of type {type(x).__name__} cannot be traced",
                               hint="pass it as a static argument (static_argnums)") from None
    it = iter(leaves)
    from ..ir.core import Var

    vals = []
    for i, a in enumerate(args):
        if i in static:
            vals.append(a)
        else:
            la, ta = flatten(a)
            vals.append(unflatten(ta, [Traced(Var("arg", leaf_type(next(it)))) for _ in la]))
    state = ProgramState()
    fn, vals, kwargs = unwrap_callable(fn, vals)
    names, vals = _names_vals(fn, vals, kwargs)
    extra = _extra_kwargs(fn, kwargs)
    key = (fn, signature_of(tuple(vals))) + ((signature_of(extra),) if extra else ())
    entry = stage_callable(state, fn, names, vals, key, loc=_hook_loc(fn), force_atoms=True, kwargs=extra)
    prog = state.program(entry.name)
    return prog, in_tree, entry.out_tree, in_types


__all__ = ["call", "stage_entry", "StagingContext", "ProgramState", "signature_of"]
