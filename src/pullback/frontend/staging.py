"""The statement/expression interpreter (an abstract interpreter over the Python AST).

Contract: an `Interp` stages one IR function body. `run(stmts)` executes a
(rewritten, see `rewrite`) statement list in the current `Frame` and returns the
value of the `return` that ends it. Concrete values are computed in Python;
traced ones emit IR through `self.b` (the current `Builder`). Every statement
sets `self.loc` (and `self.b.loc`); errors leaving a statement carry its
location. Control flow lives in `control`, calls in `calls`, NumPy in
`numpy_api`/`ops`.
"""
from __future__ import annotations

import ast
import builtins
import importlib
import operator
import os
from contextlib import contextmanager

import numpy as np

from ..pytree import flatten
from ..errors import PullbackError, StagingError, UnsupportedSyntaxError
from . import control, indexing, ops, views
from .numpy_api import BoundMethod, attribute
from .assign import Assignments, _has_traced, _hint, _is_array  # noqa: F401  (_hint: control)
from .iterables import static_items
from .rewrite import UNSET_NAME
from .values import UNSET, ConcreteNeeded, NeedUnroll, Poisoned, Traced

_MISSING = object()

BINOPS = {ast.Add: ("add", operator.add), ast.Sub: ("sub", operator.sub), ast.Mult: ("mul", operator.mul),
          ast.Div: ("div", operator.truediv), ast.FloorDiv: ("floordiv", operator.floordiv),
          ast.Mod: ("mod", operator.mod), ast.Pow: ("pow", operator.pow),
          ast.MatMult: ("matmul", operator.matmul), ast.BitAnd: ("and", operator.and_),
          ast.BitOr: ("or", operator.or_), ast.BitXor: ("xor", operator.xor),
          ast.LShift: (None, operator.lshift), ast.RShift: (None, operator.rshift)}
CMPOPS = {ast.Lt: ("lt", operator.lt), ast.LtE: ("le", operator.le), ast.Gt: ("gt", operator.gt),
          ast.GtE: ("ge", operator.ge), ast.Eq: ("eq", operator.eq), ast.NotEq: ("ne", operator.ne),
          ast.Is: (None, operator.is_), ast.IsNot: (None, operator.is_not),
          ast.In: (None, lambda a, b: a in b), ast.NotIn: (None, lambda a, b: a not in b)}

_UNSUPPORTED_STMT = {
    "ClassDef": "class definitions", "Try": "try/except", "TryStar": "try/except*", "With": "with statements",
    "AsyncWith": "async with", "AsyncFor": "async for", "AsyncFunctionDef": "async functions",
    "Global": "global declarations", "Nonlocal": "nonlocal declarations", "Delete": "del statements",
    "Match": "match statements",
}
_UNSUPPORTED_EXPR = {
    "Yield": "generators (yield)", "YieldFrom": "generators (yield from)", "Await": "await",
    "SetComp": "set comprehensions", "Set": "sets",
}


_DEFAULT_HINTS = {
    "ShapeError": "check the shapes and dtypes of the operands on this line (print x.shape while staging)",
    "StagingError": "values computed from traced arguments are only known at run time; "
                    "pass such values as static arguments (static_argnums)",
    "UnsupportedSyntaxError": "rewrite this with supported constructs (if/for/while, functions, NumPy calls)",
}


class Frame:
    """Variables of one function activation; `parent` is the defining frame of a nested def."""

    __slots__ = ("vars", "parent", "globals", "closure")

    def __init__(self, vars, globals, closure=None, parent=None):
        self.vars, self.globals, self.closure, self.parent = vars, globals, closure or {}, parent


class StagedClosure:
    """A `def`/`lambda` evaluated during staging; calls to it are inlined. Passed to a
    transformation, it is closure-converted (`calls.Captured`, note [closures])."""

    def __init__(self, node, frame, src, defaults, kw_defaults, name):
        self.node, self.frame, self.src = node, frame, src
        self.defaults, self.kw_defaults, self.__name__ = defaults, kw_defaults, name

    def _pb_same(self, other):
        return isinstance(other, StagedClosure) and other.node is self.node and other.frame is self.frame

    def __call__(self, *args, **kwargs):  # staged code calls it through `calls.call_closure`
        raise StagingError(f"the function '{self.__name__}' was defined in staged code and cannot be called "
                           "outside it", hint="call it, or a transformation of it, inside the staged function")

    def __repr__(self):
        return f"<staged function {self.__name__}>"


class Interp(Assignments):
    def __init__(self, state, builder, src, frame, info=None):
        self.state = state  # calls.ProgramState
        self.b = builder
        self.src = src
        self.frame = frame
        self.top_frame = frame
        self.info = info  # calls.InProgress of the function being staged (recursion templates)
        self.loc = src.loc(src.node) if src is not None else None
        self.traced_depth = 0
        self.inline_depth = 0
        self.callers = []  # frames of the callers of the inlined closures being staged
        self.regions = []  # (frame, len(callers)) at the entry of each traced if/loop being staged
        self.ambiguous = {}  # id -> (array object, line): aliasing decided at run time (alias.mark_ambiguous)
        self.updated = []  # array objects updated in place so far (alias.replace), read by IR loops
        self.hidden = ()  # names of the frame variables that follow the argument arrays (alias.hidden_name)
        self.views = {}  # id -> views.View: the array objects that are views of another (Note [view-mutation])
        self.view_kids = {}  # id of a base -> [views.View] made of it
        self.replaced = {}  # id -> (array object, the object alias.replace rebound it to)

    # -- plumbing -------------------------------------------------------------
    @contextmanager
    def using(self, builder=None, vars=None):
        ob, ov = self.b, self.frame.vars
        if builder is not None:
            self.b = builder
        if vars is not None:
            self.frame.vars = vars
        try:
            yield
        finally:
            self.b, self.frame.vars = ob, ov

    @contextmanager
    def traced_region(self):
        self.traced_depth += 1
        self.regions.append((self.frame, len(self.callers)))
        try:
            yield
        finally:
            self.traced_depth -= 1
            self.regions.pop()

    def run(self, stmts):
        r = self.exec_block(stmts)
        if r is None:
            return None
        return r[1]

    def exec_block(self, stmts):
        for s in stmts:
            r = self.exec_stmt(s)
            if r is not None:
                return r
        return None

    def exec_stmt(self, s):
        loc = self.src.loc(s)
        self.loc = loc
        self.b.loc = loc
        try:
            fn = getattr(self, "s_" + type(s).__name__, None)
            if fn is None:
                what = _UNSUPPORTED_STMT.get(type(s).__name__, type(s).__name__)
                raise UnsupportedSyntaxError(f"{what} are not supported in staged code",
                                             hint="move this code out of the staged function, or rewrite it with if/for/while and plain functions")
            return fn(s)
        except PullbackError as e:
            if not e.hint:
                e.hint = _DEFAULT_HINTS.get(type(e).__name__, "see the message above")
                e.args = (e._render(),)
            raise e.with_loc(loc)
        except (NeedUnroll, control.LoopExit):
            raise
        except RecursionError:
            raise StagingError("recursion too deep while staging", loc=loc,
                               hint="recursion on a static value must terminate; recursion on traced data needs its base case first") from None
        except Exception as e:  # an error in the user's Python-level code, or an internal one
            if os.environ.get("PULLBACK_DEBUG"):
                raise
            hint = "this statement failed while staging (set PULLBACK_DEBUG=1 for the internal traceback)"
            if isinstance(e, TypeError) and ("'list'" in str(e) or "'tuple'" in str(e) or "sequence" in str(e)):
                # a list argument stays a container of separate values (a pytree), as in JAX
                hint = ("a Python list or tuple stays a container of separate values in staged code, not an "
                        "array: pass np.asarray(...) (or build the array with np.array(...)) for array arithmetic")
            err = StagingError(f"{type(e).__name__}: {e}", loc=loc, hint=hint)
            err.__cause__ = None
            raise err from None
        finally:
            self.loc = loc
            self.b.loc = loc

    # -- statements ----------------------------------------------------------------
    def s_Expr(self, s):
        self.eval(s.value)

    def s_Pass(self, s):
        pass

    def s_Return(self, s):
        v = None if s.value is None else self.eval(s.value)
        top = self.frame is self.top_frame
        # the argument arrays as they are at this return (calls.stage_func splits the pair)
        hid = tuple(self.frame.vars[h] for h in self.hidden) if self.hidden and top else None
        if self.info is not None and top and self.info.first_return is _MISSING_RET:
            self.info.first_return = v
            self.info.first_hidden = hid
        return ("return", v if hid is None else (v, hid))

    def s_If(self, s):
        return control.stage_if(self, s)

    def s_For(self, s):
        return control.stage_for(self, s)

    def s_While(self, s):
        return control.stage_while(self, s)

    def s_Break(self, s):
        raise UnsupportedSyntaxError("'break' outside a loop")

    s_Continue = s_Break

    def s_Assert(self, s):
        if not __debug__:  # python -O: asserts are not run, as in Python
            return
        v = self.eval(s.test)
        if isinstance(v, Traced):
            raise StagingError(
                "assert on a traced value: its truth is only known when the compiled code runs, "
                "and pullback does not check it there",
                hint="check the condition on the concrete arguments before calling the transformed function, "
                     "assert only on values known while staging (shapes, static arguments), or use np.where")
        if isinstance(v, Poisoned):
            raise v.error()
        if not ops.to_bool(self, v):
            msg = self.eval(s.msg) if s.msg is not None else ""
            if self.traced_depth:
                raise UnsupportedSyntaxError(
                    "an assert that fails while staging, inside a branch or loop that depends on traced data "
                    "(pullback cannot tell whether this code runs)",
                    hint="assert only under conditions known at staging time (shapes, static arguments)")
            raise StagingError(f"assertion failed while staging{': ' + str(msg) if msg else ''}",
                               hint="the condition is false for these arguments (it depends only on shapes or "
                                    "static values, so pullback checked it while staging)")

    def s_Raise(self, s):
        if self.traced_depth:
            raise UnsupportedSyntaxError("'raise' inside a branch or loop that depends on traced data",
                                         hint="raise only under conditions known at staging time (shapes, static arguments)")
        exc = self.eval(s.exc) if s.exc is not None else None
        raise StagingError(f"the staged function raised {exc!r}")

    def s_FunctionDef(self, s):
        if s.decorator_list:
            raise UnsupportedSyntaxError("decorators on functions defined inside a staged function",
                                         hint="define the decorated function at module level")
        self.frame.vars[s.name] = self.make_closure(s, s.name)

    def s_Import(self, s):
        for a in s.names:
            mod = importlib.import_module(a.name)
            if a.asname:
                self.frame.vars[a.asname] = mod
            else:
                self.frame.vars[a.name.split(".")[0]] = importlib.import_module(a.name.split(".")[0])

    def s_ImportFrom(self, s):
        mod = importlib.import_module(s.module)
        for a in s.names:
            self.frame.vars[a.asname or a.name] = getattr(mod, a.name)

    def make_closure(self, node, name):
        from .source import nested_source

        args = node.args
        defaults = [self.eval(d) for d in args.defaults]
        kw_defaults = [None if d is None else self.eval(d) for d in args.kw_defaults]
        return StagedClosure(node, self.frame, nested_source(node, self.src), defaults, kw_defaults, name)

    # -- names ----------------------------------------------------------------------
    def lookup(self, name):
        f = self.frame
        while f is not None:
            if name in f.vars:
                v = f.vars[name]
                if isinstance(v, Poisoned):
                    raise v.error()
                return v
            if name in f.closure:
                return f.closure[name]
            if f.parent is None and name in f.globals:
                return f.globals[name]
            f = f.parent
        if name == UNSET_NAME:
            return UNSET
        g = self.frame.globals
        if name in g:
            return g[name]
        b = g.get("__builtins__", builtins)
        b = b if isinstance(b, dict) else vars(b)
        if name in b:
            return b[name]
        raise StagingError(f"name '{name}' is not defined",
                           hint="define it before use (staged code resolves names like Python: locals, closure, module globals, builtins)")

    # -- expressions -------------------------------------------------------------------
    def eval(self, e):
        fn = getattr(self, "e_" + type(e).__name__, None)
        if fn is None:
            what = _UNSUPPORTED_EXPR.get(type(e).__name__, type(e).__name__ + " expressions")
            raise UnsupportedSyntaxError(f"{what} are not supported in staged code",
                                         hint="rewrite it with lists/tuples, functions and for/while loops, "
                                              "or compute it outside the staged function")
        return fn(e)

    def e_Constant(self, e):
        return e.value

    def e_Name(self, e):
        return self.lookup(e.id)

    def e_Tuple(self, e):
        return tuple(self._elts(e.elts))

    def e_List(self, e):
        return list(self._elts(e.elts))

    def _elts(self, elts):
        out = []
        for x in elts:
            if isinstance(x, ast.Starred):
                v = self.eval(x.value)
                if isinstance(v, Traced):
                    raise UnsupportedSyntaxError("star-unpacking a traced array",
                                                 hint="index the array explicitly")
                out.extend(v)
            else:
                out.append(self.eval(x))
        return out

    def e_Dict(self, e):
        out = {}
        for k, v in zip(e.keys, e.values):
            if k is None:
                out.update(self.eval(v))
            else:
                key = self.eval(k)
                if isinstance(key, Traced):
                    raise ConcreteNeeded("a traced value cannot be a dict key")
                out[key] = self.eval(v)
        return out

    def e_BinOp(self, e):
        return self.binop(type(e.op), self.eval(e.left), self.eval(e.right))

    def binop(self, optype, a, b):
        opname, pyop = BINOPS[optype]
        if isinstance(a, Traced) or isinstance(b, Traced):
            if opname is None:
                raise UnsupportedSyntaxError("shift operators on traced values are not supported")
            r = ops.binary(self, opname, a, b)
            return Traced(r.atom) if r is a or r is b else r  # `a ** 1` is a new array (see alias)
        return pyop(a, b)

    def e_UnaryOp(self, e):
        return self.unop(type(e.op), self.eval(e.operand))

    def unop(self, optype, v):
        if optype is ast.Not:
            return ops.logical_not(self, v)
        if not isinstance(v, Traced):
            return {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}[optype](v)
        if optype is ast.USub:
            return ops.unary(self, "neg", v)
        if optype is ast.UAdd:
            return Traced(v.atom)  # +a is a new array in NumPy (see alias)
        if v.type.dtype == "bool":
            return ops.emit(self, "not", v.atom)
        raise UnsupportedSyntaxError("'~' on a non-boolean traced value is not supported")

    def e_BoolOp(self, e):
        is_and = isinstance(e.op, ast.And)
        v = self.eval(e.values[0])
        for nxt in e.values[1:]:
            if not isinstance(v, Traced):
                if bool(v) != is_and:  # short-circuit, Python semantics
                    return v
                v = self.eval(nxt)
                continue
            w = self.eval(nxt)
            bv, bw = ops.to_bool(self, v), ops.to_bool(self, w)
            if not isinstance(bw, Traced):
                v = (bv if bw else False) if is_and else (True if bw else bv)
            else:
                v = ops.emit(self, "and" if is_and else "or", bv.atom, bw.atom)
        return v

    def e_Compare(self, e):
        left = self.eval(e.left)
        result = True
        for op, right_node in zip(e.ops, e.comparators):
            right = self.eval(right_node)
            name, pyop = CMPOPS[type(op)]
            if isinstance(left, Traced) or isinstance(right, Traced):
                if name is None:
                    if isinstance(op, (ast.Is, ast.IsNot)):
                        r = pyop(left, right)
                    else:
                        raise ConcreteNeeded("'in' / 'not in' with a traced value")
                else:
                    r = ops.binary(self, name, left, right)
            else:
                r = pyop(left, right)
            result = r if result is True else self._and(result, r)
            if result is False:
                return False
            left = right
        return result

    def _and(self, a, b):
        if not isinstance(a, Traced) and not isinstance(b, Traced):
            return a and b
        ba, bb = ops.to_bool(self, a), ops.to_bool(self, b)
        if not isinstance(ba, Traced):
            return bb if ba else False
        if not isinstance(bb, Traced):
            return ba if bb else False
        return ops.emit(self, "and", ba.atom, bb.atom)

    def e_IfExp(self, e):
        return control.stage_ifexp(self, e)

    def e_Attribute(self, e):
        v = self.eval(e.value)
        if isinstance(v, Traced):
            return attribute(self, v, e.attr)
        if isinstance(v, Poisoned):
            raise v.error()
        try:
            r = getattr(v, _mangle(e.attr, getattr(self.src, "cls", None)))
        except AttributeError as ex:
            raise StagingError(str(ex)) from None
        if e.attr == "T" and isinstance(v, np.ndarray):
            views.note_call(self, "T", v, r)
        return r

    def e_Subscript(self, e):
        return self.subscript(self.eval(e.value), self.eval(e.slice))

    def subscript(self, v, key):
        if isinstance(v, Traced) or (isinstance(v, np.ndarray) and _has_traced(key)):
            return views.note_index(self, v, key, ops.getitem(self, v, key))
        if _has_traced(key):
            if indexing.is_index_trick(v):  # np.r_[...] / np.c_[...] with traced items
                return indexing.index_trick(self, v, key)
            raise ConcreteNeeded(f"a Python {type(v).__name__} is indexed with a traced value",
                                 hint="make the container an array (np.array / np.stack), or pass the index as a static argument")
        r = v[key]
        return views.note_index(self, v, key, r) if isinstance(v, np.ndarray) else r

    def e_Slice(self, e):
        f = lambda x: None if x is None else self.eval(x)  # noqa: E731
        return slice(f(e.lower), f(e.upper), f(e.step))

    def e_Index(self, e):  # Python < 3.9
        return self.eval(e.value)

    def e_Call(self, e):
        from .calls import call

        fn = self.eval(e.func)
        args = self._elts(e.args)
        kwargs = {}
        for kw in e.keywords:
            if kw.arg is None:
                kwargs.update(self.eval(kw.value))
            else:
                kwargs[kw.arg] = self.eval(kw.value)
        return call(self, fn, args, kwargs)

    def e_Lambda(self, e):
        return self.make_closure(e, "<lambda>")

    def e_NamedExpr(self, e):
        v = self.eval(e.value)
        self.assign(e.target, v)
        return v

    def e_JoinedStr(self, e):
        parts = []
        for p in e.values:
            if isinstance(p, ast.FormattedValue):
                v = self.eval(p.value)
                if isinstance(v, Traced):
                    raise ConcreteNeeded("formatting a traced value into a string",
                                         hint="its value is only known when the compiled code runs")
                spec = self.eval(p.format_spec) if p.format_spec is not None else ""
                conv = {115: str, 114: repr, 97: ascii}.get(p.conversion, lambda x: x)
                parts.append(format(conv(v), spec))
            else:
                parts.append(self.eval(p))
        return "".join(parts)

    def e_ListComp(self, e):
        return self._comprehension(e, lambda: self.eval(e.elt), list)

    def e_GeneratorExp(self, e):
        return self._comprehension(e, lambda: self.eval(e.elt), list)

    def e_DictComp(self, e):
        return self._comprehension(e, lambda: (self.eval(e.key), self.eval(e.value)), dict)

    def _comprehension(self, e, elt, kind):
        out = []
        targets = {n.id for g in e.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        saved = {k: v for k, v in self.frame.vars.items() if k in targets}

        def go(gens):
            if not gens:
                out.append(elt())
                return
            g = gens[0]
            it = self.eval(g.iter)
            if isinstance(it, Traced) or _is_traced_iter(it):
                it = static_items(self, it, "a comprehension")
            for n, item in enumerate(it):
                if n > control.UNROLL_LIMIT:
                    raise StagingError("comprehension too long to unroll")
                self.assign(g.target, item)
                ok = True
                for cond in g.ifs:
                    c = ops.to_bool(self, self.eval(cond))
                    if isinstance(c, Traced):
                        raise UnsupportedSyntaxError("comprehension filters on traced values are not supported",
                                                     hint="use np.where")
                    if not c:
                        ok = False
                        break
                if ok:
                    go(gens[1:])

        try:
            go(e.generators)
        finally:
            # the loop variables are local to the comprehension; in-place updates made by
            # calls inside it stay visible, as in Python
            cur = self.frame.vars
            final = {k: cur[k] for k in targets if k in cur}
            for k in targets:
                cur.pop(k, None)
            cur.update(saved)
        self._comprehension_scope(e, out, final)
        return dict(out) if kind is dict else out

    def _comprehension_scope(self, e, out, final):
        """Functions made in the comprehension (`[lambda t: t * i for i in ...]`) read its
        variables after it ended, as Python's closures over the comprehension's scope do:
        they get a frame holding the variables' last values, nested in the current one."""
        nodes = {id(n) for n in ast.walk(e) if isinstance(n, (ast.Lambda, ast.FunctionDef))}
        made = [v for v in flatten(out)[0] if isinstance(v, StagedClosure) and v.frame is self.frame
                and id(v.node) in nodes]
        if made and final:
            scope = Frame(final, self.frame.globals, parent=self.frame)
            for v in made:
                v.frame = scope


class _MissingRet:
    def __repr__(self):
        return "<no return yet>"


_MISSING_RET = _MissingRet()


def _mangle(name, cls):
    """Python's private name mangling inside class `cls`: `__x` -> `_Cls__x`."""
    if cls is None or not name.startswith("__") or name.endswith("__"):
        return name
    stripped = cls.lstrip("_")
    return f"_{stripped}{name}" if stripped else name


def _is_traced_iter(v):
    return isinstance(v, control.TracedIterable)


__all__ = ["Interp", "Frame", "StagedClosure", "BoundMethod"]
