"""User functions as IR functions: one `Func` per (function, argument signature), recursion,
and in-place updates of arguments carried back to the caller.

Contract:
- `call_function(st, fn, args, kwargs)` stages a call of the Python function `fn`
  with (some) traced arguments as an `Apply` of its `Func`, staged by
  `stage_func` once per (function, argument structure, leaf types, static values,
  aliasing among the argument arrays) and cached in the `ProgramState`. Concrete
  leaves of its result stay concrete at the call site.
- A call to a function whose identical signature is being staged is IR
  recursion: its result types come from the first `return` staged in that
  function (or a later re-staging, until the types agree).
- Argument arrays the function updates in place (`a[i] = v`, `a += v`, also
  through nested calls and recursion) are extra hidden results; the call site
  rebinds the caller's array objects to them (`alias.replace`), and a result
  that is an argument array is the caller's own object (Note [argument-mutation]).
- `ProgramState` holds the functions of the program under construction.
"""
from __future__ import annotations

import ast
import functools
import inspect
from dataclasses import dataclass, field

import numpy as np

from ..backends.runtime import deep_recursion
from ..errors import PullbackError, StagingError
from ..ir.builder import Builder
from ..ir.core import Apply, Body, Func, Prog
from ..ir.names import NameSupply
from ..ir.types import TensorType
from ..pytree import TreeDef, flatten, unflatten
from . import alias, views
from .numpy_api import describe
from .source import function_ast
from .staging import _MISSING_RET, Frame, Interp, StagedClosure
from .values import Traced, leaf_type, to_atom

# -- program state ---------------------------------------------------------------------

@dataclass
class FuncEntry:
    name: str
    out_tree: TreeDef
    template: list  # result leaves, then hidden ones: None = next traced result, else the concrete value
    ret_types: tuple
    hidden: tuple = ()  # argument leaves updated in place (indices into the flattened arguments),
    #                     whose final values are the last len(hidden) leaves of `template`
    ret_alias: dict = field(default_factory=dict)  # result leaf -> argument leaf it is (the same array)
    ambiguous: tuple = ()  # argument leaves whose aliasing with the results is only known at run time
    param_leaves: tuple = ()  # the callee's parameter placeholders (the flattened arguments)


@dataclass
class InProgress:
    name: str
    first_return: object = _MISSING_RET
    first_hidden: tuple | None = None  # the argument arrays at that first return
    recursive: bool = False
    template: tuple | None = None  # (treedef, [TensorType]) used by recursive calls
    slots: list = field(default_factory=list)  # argument leaves tracked for in-place updates
    slot_types: list = field(default_factory=list)
    assumed: tuple = ()  # slots that recursive calls treat as updated in place (hidden results)
    ret_alias: dict | None = None  # result leaf -> argument leaf, assumed by recursive calls


@dataclass
class ProgramState:
    funcs: dict = field(default_factory=dict)  # name -> Func (completed)
    extra: list = field(default_factory=list)  # names added with add_func
    cache: dict = field(default_factory=dict)  # key -> FuncEntry
    in_progress: dict = field(default_factory=dict)  # key -> InProgress
    names: NameSupply = field(default_factory=NameSupply)
    memo: dict = field(default_factory=dict)  # for hooks: e.g. derived functions made so far

    def add(self, func: Func, extra=False):
        self.names.reserve(func.name)
        self.funcs[func.name] = func
        if extra:
            self.extra.append(func.name)

    def program(self, entry: str) -> Prog:
        keep, todo = [], [entry] + list(self.extra)
        seen = set()
        while todo:
            n = todo.pop(0)
            if n in seen or n not in self.funcs:
                continue
            seen.add(n)
            keep.append(self.funcs[n])
            todo.extend(_called(self.funcs[n].body))
            todo.extend(g for _, g in self.funcs[n].rules)  # user-given derivative rules
        return Prog(tuple(keep), entry)


def _called(obj, out=None):
    """Names of functions applied anywhere inside `obj` (walks dataclass fields generically)."""
    out = [] if out is None else out
    if isinstance(obj, Apply):
        out.append(obj.func)
    if isinstance(obj, (tuple, list)):
        for x in obj:
            _called(x, out)
    elif hasattr(obj, "__dataclass_fields__"):
        for f in obj.__dataclass_fields__:
            if f in ("loc", "type"):
                continue
            v = getattr(obj, f)
            if isinstance(v, (tuple, list)) or hasattr(v, "__dataclass_fields__"):
                _called(v, out)
    return out


# -- keys --------------------------------------------------------------------------------

def _static_key(v):
    if isinstance(v, Traced):
        return ("T", v.type)
    if isinstance(v, np.ndarray):
        return ("A", v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, (bool, int, float, complex, str, bytes, type(None), np.generic)):
        return ("C", type(v).__name__, v)
    try:
        hash(v)
        return ("H", v)
    except TypeError:
        return ("I", id(v))


def signature_of(argvals) -> tuple:
    leaves, tree = flatten(argvals)
    return (tree, tuple(_static_key(x) for x in leaves), alias.alias_pattern(leaves))


def _bind(fn, args, kwargs):
    try:
        sig = inspect.signature(fn, follow_wrapped=False)
        ba = sig.bind(*args, **kwargs)
    except TypeError as e:
        raise StagingError(f"{getattr(fn, '__name__', fn)}(): {e}",
                           hint="call it with the arguments its signature declares") from None
    except ValueError as e:  # no signature (some builtins)
        raise StagingError(f"cannot stage '{describe(fn)}': {e}",
                           hint="pass a function defined with def") from None
    ba.apply_defaults()
    names = list(ba.arguments)
    vals = []
    for n in names:
        v = ba.arguments[n]
        vals.append(tuple(v) if sig.parameters[n].kind == inspect.Parameter.VAR_POSITIONAL else v)
    return names, vals


def call_function(st, fn, args, kwargs):
    """Call a user Python function with (some) traced arguments: an `Apply` of its `Func`."""
    names, vals = _bind(fn, args, kwargs)
    caps = function_captures(vals)
    if caps:  # closures among the arguments read traced values: pass those too (note [closures])
        names, vals = names + [CAPTURED], vals + [tuple(caps)]
    # arguments that are views of each other stay so in the callee (Note [view-mutation])
    vpat, related = views.arg_pattern(st, flatten(tuple(vals))[0])
    key = (fn, signature_of(tuple(vals))) + ((views.pattern_key(vpat),) if vpat else ())
    state = st.state
    entry = state.cache.get(key)
    if entry is None:
        info = state.in_progress.get(key)
        if info is not None:
            return _recursive_call(st, fn, info, vals)
        entry = stage_func(state, fn, names, vals, key, runner=None, loc=st.loc, track=True, view_pat=vpat)
    if related and entry.hidden:
        raise StagingError(f"'{_func_hint(fn)}' updates an argument in place, and some of its array arguments are "
                           "views of the same array in a way pullback cannot follow inside it (views with traced "
                           "indices, or two views of an array that is not an argument)",
                           hint="pass the base array and the indices instead, or copy the views (.copy())")
    return _apply_entry(st, entry, vals)


def _traced_atoms(vals):
    """The call's IR arguments: one per traced array object (an array passed twice is one parameter)."""
    leaves, _ = flatten(tuple(vals))
    seen, out = set(), []
    for x in leaves:
        if isinstance(x, Traced) and id(x) not in seen:
            seen.add(id(x))
            out.append(x.atom)
    return out


def _apply_entry(st, entry, vals):
    atoms = _traced_atoms(vals)
    outs = st.b.apply(entry.name, atoms, entry.ret_types) if entry.ret_types else ()
    it = iter(outs)
    leaves = [Traced(next(it)) if t is None else _at_call_site(t, entry, vals) for t in entry.template]
    n = len(leaves) - len(entry.hidden)
    return _finish_call(st, vals, entry.out_tree, leaves[:n], entry.hidden, leaves[n:], entry.ret_alias,
                        entry.ambiguous)


def _at_call_site(v, entry, vals):
    """A concrete result (a function value returned by the callee) that reads the callee's
    parameters reads this call's arguments instead (note [closures])."""
    if isinstance(v, (int, float, bool, complex, str, bytes, np.ndarray, np.generic, type(None))):
        return v
    found, _ = captured_values(v)
    if not found:
        return v
    m = {id(p): a for p, a in zip(entry.param_leaves, flatten(tuple(vals))[0]) if isinstance(p, Traced)}
    return _subst(v, m, {}) if m else v


def _finish_call(st, vals, out_tree, ret_leaves, hidden, hidden_vals, ret_alias, ambiguous=()):
    """Make the caller see the callee's in-place updates of its arguments (Note [argument-mutation]):
    rebind the caller's argument arrays `hidden` to their final values, and return the caller's own
    array objects for result leaves that are argument arrays."""
    if not (hidden or ret_alias or ambiguous):
        return unflatten(out_tree, ret_leaves)
    arg_leaves, _ = flatten(tuple(vals))
    cur = list(arg_leaves)
    for k, v in zip(hidden, hidden_vals):
        alias.replace(st, arg_leaves[k], v)
        cur[k] = v
    ret_leaves = list(ret_leaves)
    for r, k in ret_alias.items():
        ret_leaves[r] = cur[k]
    if ambiguous:
        alias.mark_ambiguous(st, [cur[k] for k in ambiguous] + ret_leaves, st.loc.line if st.loc else "?")
    return unflatten(out_tree, ret_leaves)


def _recursive_call(st, fn, info, vals):
    if info.template is None:
        if info.first_return is _MISSING_RET:
            raise StagingError(
                f"recursive call to '{fn.__name__}' with traced data before any `return` of it was staged, "
                "so its result type is unknown",
                hint="put the base case (the branch that returns without recursing) first")
        leaves, tree = flatten(info.first_return)
        info.template = (tree, [_ret_type(x) for x in leaves])
        if info.ret_alias is None:
            info.ret_alias = _ret_alias(leaves, info.first_hidden, info.slots)
    info.recursive = True
    tree, tys = info.template
    hid_tys = [info.slot_types[j] for j in info.assumed]
    outs = st.b.apply(info.name, _traced_atoms(vals), tuple(tys) + tuple(hid_tys))
    leaves = [Traced(o) for o in outs]
    return _finish_call(st, vals, tree, leaves[:len(tys)], [info.slots[j] for j in info.assumed],
                        leaves[len(tys):], info.ret_alias or {})


def _ret_alias(ret_leaves, finals, slots):
    """{result leaf: argument leaf} for the result leaves that are (traced) argument arrays."""
    out = {}
    if not finals:
        return out
    for r, x in enumerate(ret_leaves):
        if isinstance(x, Traced):
            for j, f in enumerate(finals):
                if x is f:
                    out[r] = slots[j]
                    break
    return out


def _ret_type(x):
    try:
        return leaf_type(x)
    except PullbackError:
        raise StagingError(f"a recursive function returns the Python value {x!r}, which has no IR type",
                           hint="return only numbers and arrays (or tuples/lists/dicts of them) from recursive functions") from None


def _cells(fn):
    code = fn.__code__
    out = {}
    for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            out[name] = cell.cell_contents
        except ValueError:
            pass
    return out


def stage_func(state, fn, names, vals, key, runner=None, loc=None, force_atoms=False, fname=None,
               track=False, view_pat=()) -> FuncEntry:
    """Stage `fn` (bound to `names`=`vals`) as a complete IR `Func`; cache it under `key`.
    `track`: return the final values of the argument arrays it updates in place as hidden
    results (`FuncEntry.hidden`, Note [argument-mutation]); without it only a recursive
    function has them, behind a wrapper that drops them."""
    src = _source(fn) if runner is None else None
    name = state.names.fresh(fname or _func_hint(fn))
    info = InProgress(name)
    arg_leaves, _ = flatten(tuple(vals))
    if runner is None:
        pat = alias.alias_pattern(arg_leaves)
        info.slots = [k for k, x in enumerate(arg_leaves) if alias.is_mutable_leaf(x) and pat[k] == k]
        info.slot_types = [leaf_type(arg_leaves[k]) for k in info.slots]
    state.in_progress[key] = info
    cache0, funcs0 = set(state.cache), set(state.funcs)
    dropped: set = set()
    deep = deep_recursion()  # shared with the runners: no thread lowers the limit under another
    deep.__enter__()
    try:
        for attempt in range(6 + 2 * len(info.slots)):
            if attempt:  # forget what was staged under the previous attempt's assumptions
                for k in set(state.cache) - cache0:
                    del state.cache[k]
                for n in set(state.funcs) - funcs0:
                    del state.funcs[n]
                state.extra[:] = [n for n in state.extra if n in state.funcs]
            supply = NameSupply()
            b = Builder(supply)
            params, pvals, made = [], [], {}
            for pname, v in zip(names, vals):
                leaves, tree = flatten(v)
                new = []
                for leaf in leaves:
                    if isinstance(leaf, Traced):
                        if id(leaf) not in made:  # the same array passed twice is one parameter
                            p = b.fresh(pname, leaf.type)
                            params.append(p)
                            made[id(leaf)] = Traced(p)
                        new.append(made[id(leaf)])
                    else:
                        new.append(leaf)
                pvals.append(unflatten(tree, new))
            if CAPTURED in names:  # closures passed as arguments read the parameters instead
                memo: dict = {}
                pvals = [_subst(v, made, memo) for v in pvals]
            pleaves, ptree = flatten(tuple(pvals))
            hidden = [alias.hidden_name(j) for j in range(len(info.slots))]
            if runner is None:
                frame = Frame(dict(zip(names, pvals)), fn.__globals__, _cells(fn))
                frame.vars.update({h: pleaves[k] for h, k in zip(hidden, info.slots)})
                st = Interp(state, b, src, frame, info)
                st.hidden = tuple(hidden)
                views.enter_call(st, pleaves, view_pat)
                ret = st.run(src.body)
                if hidden:
                    ret, finals = ret if ret is not None else (None, tuple(frame.vars[h] for h in hidden))
                else:
                    finals = ()
            else:
                frame = Frame(dict(zip(names, pvals)), {})
                st = Interp(state, b, None, frame, info)
                st.loc = loc
                b.loc = loc
                ret = runner(st, pvals)
                finals = ()
            if runner is None:
                _check_containers(fn, pvals, pleaves, ptree, finals, info.slots)
            leaves, out_tree = flatten(ret)
            mutated = [j for j, k in enumerate(info.slots) if finals[j] is not pleaves[k]]
            ret_alias = _ret_alias(leaves, finals, info.slots)
            if info.recursive:
                tys = [_ret_type(x) for x in leaves]
                ttree, ttys = info.template
                if ttree != out_tree:
                    raise StagingError(f"the recursive function '{name}' returns values of different structure "
                                       f"({ttree} vs {out_tree})", loc=src.loc(src.node) if src else loc)
                joined = [t if t == u else _join_types(t, u, name, src, loc) for t, u in zip(ttys, tys)]
                if joined != list(ttys):
                    info.template = (ttree, joined)
                    info.first_return = _MISSING_RET
                    continue
                if not set(mutated) <= set(info.assumed):
                    info.assumed = tuple(sorted(set(info.assumed) | set(mutated)))
                    continue
                if ret_alias != info.ret_alias:
                    dropped |= {r for r in (info.ret_alias or {}) if ret_alias.get(r) != info.ret_alias[r]}
                    info.ret_alias = {r: k for r, k in ret_alias.items() if r not in dropped}
                    continue
                hid_js = info.assumed
                atoms = [to_atom(b, x, t.dtype) for x, t in zip(leaves, ttys)]
                atoms += [to_atom(b, finals[j], info.slot_types[j].dtype) for j in hid_js]
                template = [None] * len(atoms)
            else:
                hid_js = tuple(mutated) if track else ()
                atoms, template = [], []
                for x in list(leaves) + [finals[j] for j in hid_js]:
                    if isinstance(x, Traced) or force_atoms:
                        if not isinstance(x, Traced):
                            _check_returnable(x, name, src, loc)
                        atoms.append(to_atom(b, x))
                        template.append(None)
                    else:
                        template.append(x)
            break
        else:
            raise StagingError(f"the result types of the recursive function '{name}' do not stabilise",
                               loc=src.loc(src.node) if src else loc)
        ret_types = tuple(a.type for a in atoms)
        floc = src.loc(src.node) if src is not None else loc
        func = Func(name, tuple(params), Body(tuple(b.stmts), tuple(atoms)), ret_types, loc=floc)
        state.add(func)
        # arrays whose aliasing is decided at run time inside the callee stay ambiguous in the caller
        amb = track and any(st.ambiguous.get(id(x), (None,))[0] is x for x in list(finals) + list(leaves))
        ambiguous = tuple(info.slots) if amb else ()
        entry = FuncEntry(name, out_tree, template, ret_types, tuple(info.slots[j] for j in hid_js),
                          ret_alias if track or info.recursive else {}, ambiguous, tuple(pleaves))
        if hid_js and not track:
            entry = _without_hidden(state, entry, func)
        state.cache[key] = entry
        return entry
    finally:
        state.in_progress.pop(key, None)
        deep.__exit__(None, None, None)


def _source(fn):
    """`fn`'s checked AST; a function without readable source (made by exec, compiled, or its
    file gone) gets a hint pointing to pb.pure_callback and pb.custom_vjp as well."""
    try:
        return function_ast(fn)
    except StagingError as e:
        if e.msg.startswith("cannot read the source code"):
            e.hint = ((e.hint + "; ") if e.hint else "") + (
                "or, to call it as opaque code, use pb.pure_callback inside a function wrapped in pb.custom_vjp "
                "(or pb.custom_jvp) whose rule gives its derivative")
            e.args = (e._render(),)
        raise


def _check_containers(fn, pvals, pleaves, ptree, finals, slots):
    """A list or dict argument whose elements the function replaced, added or removed: the caller
    would not see that, so it is an error (in-place updates of the arrays in it are fine)."""
    if not any(isinstance(v, (list, dict)) or isinstance(v, tuple) and _has_container(v) for v in pvals):
        return
    now, tree = flatten(tuple(pvals))
    final_of = {k: finals[j] for j, k in enumerate(slots)}
    same = tree == ptree and all(x is pleaves[k] or x is final_of.get(k, pleaves[k])
                                            for k, x in enumerate(now))
    if not same:
        raise StagingError(f"'{_func_hint(fn)}' replaces, adds or removes elements of a list or dict argument; "
                           "the caller would not see that change",
                           hint="return the new list/dict and assign it in the caller (lst = f(lst, x)), "
                                "or build a new one inside the function")


def _has_container(v):
    return any(isinstance(x, (list, dict)) or isinstance(x, tuple) and _has_container(x) for x in v)


def _without_hidden(state, entry, func) -> FuncEntry:
    """A Func calling `func` and returning its results without the hidden ones (for a recursive
    top-level function that updates its own arguments in place)."""
    n = len(entry.template) - len(entry.hidden)
    b = Builder(NameSupply())
    params = [b.fresh(p.name, p.type) for p in func.params]
    outs = b.apply(func.name, params, func.ret_types)
    name = state.names.fresh(func.name)
    state.add(Func(name, tuple(params), Body(tuple(b.stmts), tuple(outs[:n])), func.ret_types[:n], loc=func.loc))
    return FuncEntry(name, entry.out_tree, entry.template[:n], func.ret_types[:n], param_leaves=entry.param_leaves)


def _check_returnable(x, name, src, loc):
    try:
        leaf_type(x)
    except PullbackError:
        raise StagingError(f"'{name}' returns the Python value {x!r}, which cannot be a result of compiled code",
                           loc=src.loc(src.node) if src else loc,
                           hint="return numbers and arrays (or tuples/lists/dicts of them)") from None


def _join_types(t, u, name, src, loc):
    from ..ir.types import promote
    if t.shape != u.shape and (t.shape == () or u.shape == ()):
        return TensorType(promote(t.dtype, u.dtype), t.shape or u.shape)
    if t.shape != u.shape:
        raise StagingError(f"the recursive function '{name}' returns shape {t.shape} in its base case and "
                           f"{u.shape} elsewhere", loc=src.loc(src.node) if src else loc)
    return TensorType(promote(t.dtype, u.dtype), t.shape)


def _func_hint(fn):
    n = getattr(fn, "__name__", None) or type(fn).__name__
    return n if n.isidentifier() else "f"


# -- closure conversion (note [closures]) ---------------------------------------------------

CAPTURED = "__pb_captured__"  # the extra parameter of a function passed closures that read traced values


def _names_in(node):
    """Every name a nested function's code mentions (a superset of its free variables)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _walk_fun(v, found, seen):
    """Visit the traced values the function value `v` can read: its own (a partial's bound
    arguments, a closure's defaults), and those of the enclosing staged frames under the names
    a nested function mentions. Returns whether `v` involves a function defined in staged code."""
    if id(v) in seen:
        return False
    if isinstance(v, Traced):
        seen.add(id(v))
        found.append(v)
        return False
    if isinstance(v, StagedClosure):
        seen.add(id(v))
        for d in list(v.defaults) + list(v.kw_defaults):
            _walk_fun(d, found, seen)
        names, f = _names_in(v.node), v.frame
        while f is not None:
            for d in (f.vars, f.closure):  # closure: also the frames `_subst_frame` made
                for n in [k for k in d if k in names]:   # the frame's order: a set's would vary by hash seed
                    _walk_fun(d[n], found, seen)
            f = f.parent
        return True
    if isinstance(v, (tuple, list)):
        seen.add(id(v))
        return any([_walk_fun(x, found, seen) for x in v])  # noqa: C419 (walk them all)
    if isinstance(v, dict):
        seen.add(id(v))
        return any([_walk_fun(x, found, seen) for x in v.values()])  # noqa: C419
    if isinstance(v, functools.partial):
        seen.add(id(v))
        return any([_walk_fun(x, found, seen) for x in (v.func, v.args, v.keywords)])  # noqa: C419
    if hasattr(type(v), "__pullback_with_funs__"):  # several function values (pb.custom_vjp: fun, fwd, bwd)
        seen.add(id(v))
        return any([_walk_fun(x, found, seen) for x in v.__pullback_funs__()])  # noqa: C419
    if hasattr(type(v), "__pullback_with_fun__"):  # a transformation of a function value
        seen.add(id(v))
        return _walk_fun(v.fun, found, seen)
    if hasattr(type(v), "__pullback_traced__"):  # holds staged values (a vjp_fn)
        seen.add(id(v))
        for x in v.__pullback_traced__():
            _walk_fun(x, found, seen)
        return True
    return False


def captured_values(fn):
    """(traced values `fn` may read, whether it involves a function defined in staged code)."""
    found: list = []
    staged = _walk_fun(fn, found, set())
    return found, staged


def _subst(v, m, memo):
    """`v` with the traced values whose ids `m` maps replaced, through closures' frames,
    partials, transformations and containers; unchanged objects are kept."""
    if isinstance(v, Traced):
        return m.get(id(v), v)
    if id(v) in memo:
        return memo[id(v)]
    if isinstance(v, StagedClosure):
        new = StagedClosure(v.node, None, v.src, None, None, v.__name__)
        memo[id(v)] = new
        new.frame = _subst_frame(v.frame, m, memo)
        new.defaults = [_subst(d, m, memo) for d in v.defaults]
        new.kw_defaults = [_subst(d, m, memo) for d in v.kw_defaults]
        return new
    if isinstance(v, (tuple, list, dict)):
        memo[id(v)] = v  # (a container that holds itself keeps that reference)
        items = list(v.items()) if isinstance(v, dict) else list(enumerate(v))
        kids = [(k, _subst(x, m, memo)) for k, x in items]
        if all(a is b for (_, a), (_, b) in zip(kids, items)):
            return v
        vals = [x for _, x in kids]
        if isinstance(v, dict):
            r = dict(kids)
        elif hasattr(v, "_fields"):  # a namedtuple
            r = type(v)(*vals)
        else:
            r = tuple(vals) if isinstance(v, tuple) else vals
        memo[id(v)] = r
        return r
    if isinstance(v, functools.partial):
        memo[id(v)] = v
        r = functools.partial(_subst(v.func, m, memo), *_subst(v.args, m, memo), **_subst(v.keywords, m, memo))
        memo[id(v)] = r
        return r
    if hasattr(type(v), "__pullback_with_funs__"):
        # made before its functions are visited: they may refer back to it (a rule calling it)
        r = memo[id(v)] = v.__pullback_with_funs__(None)
        r.__pullback_set_funs__([_subst(x, m, memo) for x in v.__pullback_funs__()])
        return r
    if hasattr(type(v), "__pullback_with_fun__"):
        memo[id(v)] = v
        r = memo[id(v)] = v.__pullback_with_fun__(_subst(v.fun, m, memo))
        return r
    if hasattr(type(v), "__pullback_traced__"):
        old = v.__pullback_traced__()
        new = [_subst(x, m, memo) for x in old]
        r = memo[id(v)] = v if all(a is b for a, b in zip(old, new)) else v.__pullback_with_traced__(new)
        return r
    return v


def _subst_frame(f, m, memo):
    if f is None:
        return None
    if id(f) in memo:
        return memo[id(f)]
    new = Frame({}, f.globals)
    memo[id(f)] = new
    # the enclosing function's variables become closure cells: read as before, but an in-place
    # update of one is refused (`alias`), as the enclosing function would not see it
    new.closure = {k: _subst(x, m, memo) for k, x in {**f.closure, **f.vars}.items()}
    new.parent = _subst_frame(f.parent, m, memo)
    return new


def function_captures(vals):
    """The traced values that the function values among the argument values `vals` read."""
    found, seen = [], set()
    for x in flatten(tuple(vals))[0]:
        if not isinstance(x, Traced):
            _walk_fun(x, found, seen)
    return found


__all__ = ["call_function", "stage_func", "ProgramState", "FuncEntry", "InProgress", "signature_of"]
