"""User-defined derivative rules: `custom_jvp`, `custom_vjp` (JAX's names and semantics).

Contract (note [custom-rules] in docs/design.md):
- `f = custom_jvp(fun, nondiff_argnums=())`, `f.defjvp(rule)` with
  ``rule(*nondiff, primals, tangents) -> (primal_out, tangent_out)``, or `f.defjvps(*jvps)`
  with ``jvp_i(g_i, ans, *primals)`` (summed). Forward mode calls the rule; reverse mode
  transposes it (it is linear in the tangents, `passes.vjp.custom`).
- `f = custom_vjp(fun, nondiff_argnums=())`, `f.defvjp(fwd, bwd)` with
  ``fwd(*args) -> (out, residuals)`` and ``bwd(*nondiff, residuals, ct) -> tuple`` of one
  cotangent per differentiable argument (None means zero). Reverse mode calls fwd then bwd;
  forward mode through it is a located error, as in JAX.
- Called outside staging, `f(*args)` is `fun(*args)`. Inside staged code a call stages
  `fun` as an IR function of its own whose `Func.rules` names the rule, staged too as an
  ordinary IR function with the derivative pass's contract (memoised per program and
  argument signature), and emits a call of it; the primal runs `fun`'s body.
- Arguments at `nondiff_argnums` are static when concrete (any Python value) and
  parameters without derivatives when traced; function values that read traced values
  of the caller (nested defs) are closure-converted (note [closures]): their values are
  extra trailing parameters without derivatives.
- Rule output of the wrong structure, shape or count is a located `PullbackError`.
Tangents passed to a jvp rule for integer or boolean arguments are float zeros (JAX
passes float0 zeros); cotangents passed to bwd for integer results are float zeros.

`pure_callback(fn, result_shape_dtypes, *args, **kwargs)` (JAX's name; shapes and dtypes
as `ShapeDtypeStruct`s, JAX's, or arrays) calls `fn` from staged and compiled code through
the `callback` primitive (`ir/prims/callback.py`, note [callbacks]); outside staging it
calls `fn` and converts its results. `leaves_for` matches a pytree holding None against a
treedef (also used by `vjp_fn` for None cotangents).
"""
from __future__ import annotations

import dataclasses
import functools
import inspect

from .errors import PullbackError
from .pytree import flatten, unflatten

_JVP_HINT = "define the rule with f.defjvp(rule), rule(primals, tangents) -> (primal_out, tangent_out)"
_VJP_HINT = "define the rules with f.defvjp(fwd, bwd)"


class _Custom:
    """What `custom_jvp` and `custom_vjp` share: wrapping, argument binding, staging."""

    kind = ""
    __pullback_cacheable__ = True  # api._cached keeps one transformed object per custom function

    def __init__(self, fun, nondiff_argnums=()):
        if not callable(fun):
            raise PullbackError(f"{type(self).__name__} needs a function, got {type(fun).__name__}",
                                hint=f"decorate a function: @pb.{type(self).__name__}")
        if isinstance(nondiff_argnums, int):
            nondiff_argnums = (nondiff_argnums,)
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in nondiff_argnums):
            raise PullbackError(f"nondiff_argnums must be ints, got {nondiff_argnums!r}",
                                hint="nondiff_argnums=(0,) marks the first argument as not differentiated")
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self._origin = self
        functools.update_wrapper(self, fun, updated=())

    def __call__(self, *args, **kwargs):
        return self.fun(*args, **kwargs)

    def __get__(self, obj, objtype=None):  # a custom function as a method
        return self if obj is None else functools.partial(self, obj)

    def _rules(self) -> tuple:
        raise NotImplementedError

    def __pullback_funs__(self):
        """The function values it holds (closure conversion walks them, note [closures])."""
        return [self.fun] + list(self._rules())

    def __pullback_with_funs__(self, funs):
        """A copy holding `funs` (`__pullback_funs__` with captured values substituted; None:
        set later by `__pullback_set_funs__`). It stages as the same IR function (`_origin`
        keys the memo)."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._origin = self._origin
        if funs is not None:
            new.__pullback_set_funs__(funs)
        return new

    def __pullback_set_funs__(self, funs):
        self.fun = funs[0]
        self._set_rules(funs[1:])

    def __pullback_stage__(self, ctx, args, kwargs):
        if not self._has_rule():
            raise PullbackError(f"the {type(self).__name__} function '{_name(self.fun)}' has no rule yet",
                                loc=ctx.loc, hint=_JVP_HINT if self.kind == "jvp" else _VJP_HINT)
        args = _positional(self.fun, args, kwargs, ctx.loc)
        return _stage_call(ctx, self, args)


class custom_jvp(_Custom):
    """`f = pb.custom_jvp(fun)`: `fun` with a user-given forward-mode rule (`defjvp`)."""

    kind = "jvp"

    def __init__(self, fun, nondiff_argnums=()):
        super().__init__(fun, nondiff_argnums)
        self.jvp = None
        self.jvps = None

    def defjvp(self, jvp):
        """Set the rule ``jvp(*nondiff, primals, tangents) -> (primal_out, tangent_out)``; returns it."""
        self.jvp, self.jvps = jvp, None
        return jvp

    def defjvps(self, *jvps):
        """One rule per argument, ``jvp_i(tangent_i, ans, *primals)``, None for no dependence."""
        if self.nondiff_argnums:
            raise PullbackError("defjvps cannot be used with nondiff_argnums", hint="use defjvp")
        self.jvps, self.jvp = tuple(jvps), None

    def _has_rule(self):
        return self.jvp is not None or self.jvps is not None

    def _rules(self):
        return (self.jvp,) if self.jvp is not None else tuple(j for j in self.jvps or () if j is not None)

    def _set_rules(self, rules):
        if self.jvp is not None:
            (self.jvp,) = rules
        elif self.jvps is not None:
            it = iter(rules)
            self.jvps = tuple(None if j is None else next(it) for j in self.jvps)


class custom_vjp(_Custom):
    """`f = pb.custom_vjp(fun)`: `fun` with user-given reverse-mode rules (`defvjp`)."""

    kind = "vjp"

    def __init__(self, fun, nondiff_argnums=()):
        super().__init__(fun, nondiff_argnums)
        self.fwd = self.bwd = None

    def defvjp(self, fwd, bwd):
        """Set ``fwd(*args) -> (out, residuals)`` and ``bwd(*nondiff, residuals, ct) -> cotangents``."""
        if not callable(fwd) or not callable(bwd):
            raise PullbackError("defvjp needs two functions, fwd and bwd", hint=_VJP_HINT)
        self.fwd, self.bwd = fwd, bwd

    def _has_rule(self):
        return self.fwd is not None

    def _rules(self):
        return (self.fwd, self.bwd) if self.fwd is not None else ()

    def _set_rules(self, rules):
        if rules:
            self.fwd, self.bwd = rules


class checkpoint(_Custom):
    """`f = pb.checkpoint(fun)` (JAX's `jax.checkpoint` / `remat`): reverse mode
    recomputes `fun` in the return sweep instead of storing what its derivative
    needs. `fun` stages as a function of its own that is never inlined and whose
    call is always reversed by re-executing it (`pb.Joint()` for this call, even
    on a path to a recursion, where "store" would keep its residuals on the
    tape); its loops save only while its own return sweep runs. Forward mode
    differentiates its body as usual. Outside staged code `f(*args)` is
    `fun(*args)`."""

    kind = "remat"

    def __init__(self, fun, nondiff_argnums=()):
        super().__init__(fun, nondiff_argnums)

    def _has_rule(self):
        return True

    def _rules(self):
        return ()

    def _set_rules(self, rules):
        pass


def _name(fn) -> str:
    n = getattr(fn, "__name__", None) or type(fn).__name__
    return n if n.isidentifier() else "f"


def _def_loc(fn, default):
    """Where `fn` is defined (for errors about what a rule returned), else `default`."""
    from .ir.core import SrcLoc

    code = getattr(getattr(fn, "func", fn), "__code__", None)
    if code is None:
        return default
    import linecache

    line = code.co_firstlineno
    return SrcLoc(code.co_filename, line, linecache.getline(code.co_filename, line).rstrip("\n"))


def _positional(fun, args, kwargs, loc) -> tuple:
    if not kwargs:
        return tuple(args)
    try:
        ba = inspect.signature(fun).bind(*args, **kwargs)
    except (TypeError, ValueError) as e:
        raise PullbackError(f"{_name(fun)}(): {e}", loc=loc, hint="pass the arguments its signature declares") from None
    ba.apply_defaults()
    if ba.kwargs:
        raise PullbackError(f"{_name(fun)}(): keyword-only arguments {sorted(ba.kwargs)} are not supported by "
                            "custom derivative rules", loc=loc, hint="make them positional parameters")
    return tuple(ba.args)


# -- staging -----------------------------------------------------------------------------

@dataclasses.dataclass
class _Staged:
    name: str           # the custom function's IR name (its Func carries the rule)
    out_tree: object
    ret_types: tuple


def _stage_call(ctx, obj: _Custom, args: tuple):
    """Emit a call of `obj`'s IR function on `args` (staging it and its rule on first use)."""
    from .frontend.funcs import captured_values, signature_of
    from .frontend.values import Traced

    n = len(args)
    nondiff = set()
    for k in obj.nondiff_argnums:
        if not -n <= k < n:
            raise PullbackError(f"nondiff_argnums={obj.nondiff_argnums} but '{_name(obj.fun)}' got {n} arguments",
                                loc=ctx.loc, hint="nondiff_argnums are positions of the arguments passed")
        nondiff.add(k % n)
    static = {k: args[k] for k in sorted(nondiff) if not any(isinstance(x, Traced) for x in flatten(args[k])[0])}
    dyn_pos = [k for k in range(n) if k not in static]
    caps, _ = captured_values((obj,) + tuple(static.values()))
    dyn = tuple(args[k] for k in dyn_pos) + ((tuple(caps),) if caps else ())
    leaves, in_tree = ctx.to_atoms(dyn)
    key = ("custom", obj._origin, in_tree, tuple(a.type for a in leaves), tuple(dyn_pos),
           signature_of(tuple(static.values())), len(caps))
    memo = ctx.memo.setdefault("custom", {})
    hit = memo.get(key)
    if hit is None or hit.name not in ctx.state.funcs:  # (a restaged recursion may have dropped it)
        hit = _stage(ctx, obj, key, in_tree, [a.type for a in leaves], static, dyn_pos, nondiff, caps)
        memo[key] = hit
    outs = ctx.apply(hit.name, leaves, hit.ret_types)
    return ctx.from_atoms(list(outs), hit.out_tree)


class _Layout:
    """How the IR functions' parameter values map back to the user's arguments."""

    def __init__(self, obj, in_tree, types, static, dyn_pos, nondiff, caps):
        self.obj, self.in_tree, self.types = obj, in_tree, types
        self.static, self.dyn_pos, self.nondiff, self.caps = static, dyn_pos, nondiff, caps
        self.n = len(dyn_pos) + len(static)
        # the leaves that get derivatives: those of differentiable (not nondiff) arguments
        self.diff_leaf = []
        for j, c in enumerate(in_tree.children):
            d = j < len(dyn_pos) and dyn_pos[j] not in nondiff
            self.diff_leaf += [d] * c.num_leaves

    def placeholders(self, prefix="a"):
        from .frontend.values import Traced
        from .ir.core import Var

        return [Traced(Var(f"{prefix}{i}", t)) for i, t in enumerate(self.types)]

    def user_args(self, pvals):
        """(full positional args, function values with captured values substituted) from the
        parameter values `pvals` (the dyn tuple's elements)."""
        from .frontend.funcs import _subst

        m = {}
        if self.caps:
            m = {id(o): v for o, v in zip(self.caps, pvals[len(self.dyn_pos)])}
        memo: dict = {}
        args, it = [], iter(pvals[:len(self.dyn_pos)])
        for k in range(self.n):
            args.append(_subst(self.static[k], m, memo) if k in self.static else next(it))
        obj = _subst(self.obj, m, memo) if m else self.obj
        return args, [obj.fun] + list(obj._rules())

    def diff_args(self, args):
        return [args[k] for k in range(self.n) if k not in self.nondiff]

    def nondiff_args(self, args):
        return [args[k] for k in sorted(self.nondiff)]


def _stage(ctx, obj, key, in_tree, types, static, dyn_pos, nondiff, caps) -> _Staged:
    from .frontend.calls import call
    from .frontend.funcs import stage_func

    state = ctx.state
    lay = _Layout(obj, in_tree, types, static, dyn_pos, nondiff, caps)
    names = [f"arg{k}" for k in dyn_pos] + (["captured"] if caps else [])
    vals = list(unflatten(in_tree, lay.placeholders()))

    def primal(st, pvals):
        args, fns = lay.user_args(pvals)
        return call(st, fns[0], args, {})

    base = _name(obj.fun)
    entry = stage_func(state, obj.fun, names, vals, key + ("primal",), runner=primal, loc=ctx.loc,
                       force_atoms=True, fname=base)
    hit = _Staged(entry.name, entry.out_tree, tuple(entry.ret_types))
    ctx.memo.setdefault("custom", {})[key] = hit  # a rule that calls the function itself finds it
    func = state.funcs[entry.name]
    if obj.kind == "remat":  # pb.checkpoint: a marker, no rule function (note [loop-checkpointing])
        state.funcs[entry.name] = dataclasses.replace(func, rules=(("remat", entry.name),))
        return hit
    fparams = list(func.params)
    ret_types = list(func.ret_types)
    float_res = [i for i, t in enumerate(ret_types) if t.is_float]
    float_par = [i for i, p in enumerate(fparams) if p.type.is_float]
    rule_names = names + ["extra"]
    if obj.kind == "jvp":
        def runner(st, pvals):
            return _run_jvp(st, lay, entry, pvals[:-1], pvals[-1], float_par, float_res, ret_types)
        extra = tuple(lay.placeholders("t")[i] for i in float_par)
        suffix = "jvp_rule"
    else:
        def runner(st, pvals):
            return _run_vjp(st, lay, entry, pvals[:-1], pvals[-1], float_par, ret_types)
        from .frontend.values import Traced
        from .ir.core import Var

        extra = tuple(Traced(Var(f"ct{i}", ret_types[i])) for i in float_res)
        suffix = "vjp_rule"
    rule = stage_func(state, obj._rules()[0] if obj._rules() else obj.fun, rule_names, vals + [extra],
                      key + ("rule",), runner=runner, loc=ctx.loc, force_atoms=True, fname=f"{base}_{suffix}")
    want = tuple(ret_types) + (tuple(ret_types[i] for i in float_res) if obj.kind == "jvp"
                               else tuple(fparams[i].type for i in float_par))
    got = tuple(state.funcs[rule.name].ret_types)
    if got != want:  # pragma: no cover - _run_* cast every output
        raise PullbackError(f"internal: the {obj.kind} rule of '{base}' has result types {got}, expected {want}")
    state.funcs[entry.name] = dataclasses.replace(func, rules=((obj.kind, rule.name),))
    return hit


def _out_atoms(st, vals, tree, types, what, loc, allow_none=False):
    """The leaves of `vals` (structure `tree`) as atoms of `types`, cast to their dtypes; shapes
    must agree. With `allow_none`, None stands for zeros (of a leaf or a whole subtree). A None
    in `types` skips that leaf (its entry is None)."""
    from .frontend.values import to_atom

    leaves = leaves_for(vals, tree, allow_none)
    if leaves is None:
        got = flatten(vals, is_leaf=(lambda v: v is None) if allow_none else None)[1]
        raise PullbackError(f"{what} has structure {got}, expected {tree}", loc=loc,
                            hint="return values with the structure of the function's output"
                            + ("; None means zeros" if allow_none else ""))
    out = []
    for x, t in zip(leaves, types):
        if t is None:
            out.append(None)
            continue
        if x is None:
            out.append(st.b.zeros(t))
            continue
        try:
            a = to_atom(st.b, x, t.dtype)
        except PullbackError as e:
            raise PullbackError(f"{what}: {e.msg}", loc=loc, hint=e.hint) from None
        if tuple(a.type.shape) != tuple(t.shape):
            raise PullbackError(f"{what} has shape {tuple(a.type.shape)} where {tuple(t.shape)} is expected",
                                loc=loc, hint="each output, tangent or cotangent has the shape of its primal")
        out.append(a)
    return out


def leaves_for(vals, tree, allow_none):
    """The leaves of `vals` in the order of `tree`, None for each leaf of a None subtree when
    `allow_none`; None when the structures differ."""
    if vals is None and allow_none:
        return [None] * tree.num_leaves
    if tree.kind == "leaf":
        return None if isinstance(vals, (tuple, list, dict)) else [vals]
    if tree.kind == "none":
        return [] if vals is None else None
    if tree.kind == "dict":
        if not isinstance(vals, dict) or sorted(vals, key=repr) != sorted(tree.keys, key=repr):
            return None
        items = [vals[k] for k in tree.keys]
    else:
        if not isinstance(vals, (tuple, list)) or len(vals) != len(tree.children):
            return None
        items = list(vals)
    out = []
    for v, c in zip(items, tree.children):
        sub = leaves_for(v, c, allow_none)
        if sub is None:
            return None
        out += sub
    return out


def _pair(r, what, loc):
    if not isinstance(r, (tuple, list)) or len(r) != 2:
        raise PullbackError(f"{what} must return a pair, got {_describe(r)}", loc=loc,
                            hint="return (primal_out, tangent_out) from a jvp rule, (out, residuals) from fwd")
    return r


def _describe(r):
    if isinstance(r, (tuple, list)):
        return f"a {type(r).__name__} of {len(r)} values"
    return type(r).__name__


def _run_jvp(st, lay, entry, pvals, tans, float_par, float_res, ret_types):
    """The jvp rule's body: the user's rule on (primals, tangents); results, then float tangents."""
    from .frontend.calls import call
    from .frontend.values import Traced

    obj = lay.obj
    args, fns = lay.user_args(pvals)
    # tangent leaves for the user's arguments (float zeros for integer/boolean ones)
    leaves, _ = flatten(tuple(pvals))
    tmap = dict(zip(float_par, tans))
    tleaves = [tmap[i] if i in tmap else Traced(st.b.zeros(leaves[i].type.with_dtype("f64")))
               for i in range(len(leaves))]
    targs, start = [], 0
    for j, c in enumerate(lay.in_tree.children[:len(lay.dyn_pos)]):
        targs.append(unflatten(c, tleaves[start:start + c.num_leaves]))
        start += c.num_leaves
    tfull = dict(zip(lay.dyn_pos, targs))
    primals = tuple(lay.diff_args(args))
    tangents = tuple(tfull[k] for k in range(lay.n) if k not in lay.nondiff)
    rule = fns[1] if len(fns) > 1 else None
    loc = _def_loc(obj.jvp or rule, st.loc)
    if obj.jvp is not None:
        r = _pair(call(st, rule, lay.nondiff_args(args) + [primals, tangents], {}), "the jvp rule", loc)
        pout, tout = r
    else:  # defjvps: ans = f(*primals), tangent = sum of jvp_i(t_i, ans, *primals)
        pout = call(st, fns[0], list(primals), {})
        tout, it = None, iter(fns[1:])
        for j, jv in enumerate(obj.jvps):
            if jv is None:
                continue
            part = call(st, next(it), [tangents[j], pout] + list(primals), {})
            tout = part if tout is None else _tree_add(st, tout, part)
        loc = _def_loc(obj.fun, st.loc)
    res = _out_atoms(st, pout, entry.out_tree, ret_types, "the jvp rule's primal output", loc)
    tall = _out_atoms(st, tout, entry.out_tree, [t if t.is_float else None for t in ret_types],
                      "the jvp rule's tangent output", loc, allow_none=True)
    touts = [tall[i] for i in float_res]
    return tuple(Traced(a) for a in list(res) + touts)


def _tree_add(st, a, b):
    import ast

    la, ta = flatten(a)
    lb, _ = flatten(b)
    return unflatten(ta, [st.binop(ast.Add, x, y) for x, y in zip(la, lb)])


def _run_vjp(st, lay, entry, pvals, cts, float_par, ret_types):
    """The vjp rule's body: fwd, then bwd on its residuals; results, then float cotangents."""
    from .frontend.calls import call
    from .frontend.values import Traced

    obj = lay.obj
    args, fns = lay.user_args(pvals)
    fwd, bwd = fns[1], fns[2]
    floc = _def_loc(obj.fwd, st.loc)
    out, res = _pair(call(st, fwd, args, {}), "the fwd rule", floc)
    outs = _out_atoms(st, out, entry.out_tree, ret_types, "the fwd rule's output", floc)
    it = iter(cts)
    ct_leaves = [next(it) if t.is_float else Traced(st.b.zeros(t.with_dtype("f64"))) for t in ret_types]
    ct = unflatten(entry.out_tree, ct_leaves)
    bloc = _def_loc(obj.bwd, st.loc)
    g = call(st, bwd, lay.nondiff_args(args) + [res, ct], {})
    diff = [k for k in range(lay.n) if k not in lay.nondiff]
    if not isinstance(g, (tuple, list)) or len(g) != len(diff):
        raise PullbackError(f"the bwd rule must return a tuple of {len(diff)} cotangent(s), one per differentiable "
                            f"argument, got {_describe(g)}", loc=bloc,
                            hint="return a tuple, e.g. (g_x,) for one argument; None means a zero cotangent")
    # cotangents of the parameters: the differentiable arguments' from bwd, zeros for the rest
    leaves, _ = flatten(tuple(pvals))
    per_param = [None] * len(leaves)
    gk = dict(zip(diff, g))
    start = 0
    for j, c in enumerate(lay.in_tree.children):
        stop = start + c.num_leaves
        if j < len(lay.dyn_pos) and lay.dyn_pos[j] in gk:
            types = [x.type if x.type.is_float else None for x in leaves[start:stop]]
            atoms = _out_atoms(st, gk[lay.dyn_pos[j]], c, types,
                               f"the bwd rule's cotangent for argument {lay.dyn_pos[j]}", bloc, allow_none=True)
            per_param[start:stop] = atoms
        start = stop
    grads = [per_param[i] if per_param[i] is not None else st.b.zeros(leaves[i].type) for i in float_par]
    return tuple(Traced(a) for a in list(outs) + grads)


# -- pure_callback ------------------------------------------------------------------------

class ShapeDtypeStruct:
    """The shape and dtype of a result of `pure_callback` (as `jax.ShapeDtypeStruct`)."""

    def __init__(self, shape, dtype):
        import numpy as np

        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)

    def __repr__(self):
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name})"

    def __eq__(self, other):
        return isinstance(other, ShapeDtypeStruct) and (self.shape, self.dtype) == (other.shape, other.dtype)

    def __hash__(self):
        return hash((self.shape, self.dtype))


def _result_types(spec, loc):
    """(IR types, treedef) of `result_shape_dtypes`: a pytree of objects with .shape and
    .dtype (ShapeDtypeStruct, jax.ShapeDtypeStruct, arrays)."""
    from .ir.types import TensorType, dtype_of_np

    def is_leaf(v):
        return hasattr(v, "shape") and hasattr(v, "dtype")

    leaves, tree = flatten(spec, is_leaf=is_leaf)
    out = []
    for v in leaves:
        if not is_leaf(v):
            raise PullbackError(f"pure_callback: result_shape_dtypes holds {type(v).__name__}, not a shape and dtype",
                                loc=loc, hint="pass pb.ShapeDtypeStruct(shape, dtype) (or an array) per result")
        try:
            out.append(TensorType(dtype_of_np(v.dtype), tuple(int(d) for d in v.shape)))
        except TypeError as e:
            raise PullbackError(f"pure_callback: {e}", loc=loc, hint="results are float, int or bool arrays") from None
    if not out:
        raise PullbackError("pure_callback needs at least one result", loc=loc,
                            hint="a pure callback is only called for its results")
    return out, tree


class _PureCallback:
    """`pb.pure_callback(fn, result_shape_dtypes, *args, **kwargs)`: call the Python (or C
    extension) function `fn` from staged and compiled code, with results of the declared
    shapes and dtypes. It has no derivative; give one with `pb.custom_vjp`."""

    _IGNORED = ("vmap_method", "vectorized", "sharding")  # JAX's batching/sharding options

    def __call__(self, callback, result_shape_dtypes, *args, **kwargs):
        from .ir.prims.callback import convert
        from .ir.types import np_dtype

        for k in self._IGNORED:
            kwargs.pop(k, None)
        types, tree = _result_types(result_shape_dtypes, None)
        leaves, got = flatten(callback(*args, **kwargs))
        if got != tree:
            raise PullbackError(f"pure_callback: '{_name(callback)}' returned {got}, but result_shape_dtypes says "
                                f"{tree}", hint="return values with the structure of result_shape_dtypes")
        return unflatten(tree, [convert(0, v, np_dtype(t.dtype), t.shape) for v, t in zip(leaves, types)])

    def __pullback_stage__(self, ctx, args, kwargs):
        from .frontend.staging import StagedClosure
        from .ir.prims.callback import register

        if len(args) < 2:
            raise PullbackError("pure_callback(callback, result_shape_dtypes, *args) needs a callback and "
                                "result_shape_dtypes", loc=ctx.loc, hint="e.g. pb.pure_callback(f, "
                                "pb.ShapeDtypeStruct(x.shape, x.dtype), x)")
        fn, spec, *rest = args
        kwargs = {k: v for k, v in kwargs.items() if k not in self._IGNORED}
        if isinstance(fn, StagedClosure) or not callable(fn):
            what = "a function defined inside staged code" if isinstance(fn, StagedClosure) else type(fn).__name__
            raise PullbackError(f"pure_callback needs a Python callable it can run, got {what}", loc=ctx.loc,
                                hint="pass a function defined at module level, a builtin or a C-extension function")
        types, out_tree = _result_types(spec, ctx.loc)
        atoms, in_tree = ctx.to_atoms((tuple(rest), dict(kwargs)))
        key = register(fn, in_tree, out_tree)
        outs = ctx.builder.emit_multi("callback", *atoms, name="cb", key=key, outs=tuple(types))
        return ctx.from_atoms(list(outs), out_tree)


pure_callback = _PureCallback()


__all__ = ["custom_jvp", "custom_vjp", "pure_callback", "ShapeDtypeStruct"]
