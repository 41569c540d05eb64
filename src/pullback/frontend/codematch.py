"""Does the source pullback read match the code that is running?

Contract: `matches(node, fn) -> bool` compiles the AST `node` (a `FunctionDef`
or `Lambda` parsed from `fn`'s file) in a synthetic scope that reproduces
`fn`'s own (its free variables as cells of an enclosing function, its class
for name mangling and `__class__`, its module's `__future__` flags) and
compares the result with `fn.__code__`: instruction streams, constants
(nested functions recursively), names, argument counts and flags. Line
numbers, file names and qualified names are not compared, so a function that
only moved in its file matches, and so may one whose comments or blank lines
changed. Decorators and default values are evaluated outside the function's
code and are not compared (staging uses the function's real defaults). See
note [source-edits] in docs/design.md.
"""
from __future__ import annotations

import __future__ as _future
import ast
import copy
import functools
import operator
import types

_FUTURE_FLAGS = functools.reduce(operator.or_, (getattr(_future, n).compiler_flag
                                                for n in _future.all_feature_names), 0)
_CO_NESTED = 0x10
_OUTER = "__pb_outer__"


class FileContext:
    """What compiling a function depends on beyond its own text: the module-level
    imports of its file (the compiler treats attributes of imported names
    differently: no method-call optimisation), the file's text and docstring
    (for pytest's assertion rewriting)."""

    def __init__(self, tree, text: str):
        self.text = text
        self.imports = module_imports(tree)
        doc = ast.get_docstring(tree) if isinstance(tree, ast.Module) else None
        self.pytest_off = bool(doc and "PYTEST_DONT_REWRITE" in doc)


def matches(node, fn, ctx: FileContext | None = None) -> bool:
    """True when `node` compiles to `fn.__code__` (up to line numbers)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return True
    try:
        mine = _compile_like(node, fn, code, ctx)
    except (SyntaxError, ValueError, TypeError):
        return False
    return mine is not None and same_code(mine, code)


def module_imports(tree) -> list:
    """The import statements (not `from __future__`) at module scope of `tree`,
    including those under module-level if/try/with, excluding function and class bodies."""
    out, todo = [], list(getattr(tree, "body", ()))
    while todo:
        n = todo.pop(0)
        if isinstance(n, ast.Import) or (isinstance(n, ast.ImportFrom) and n.module != "__future__"):
            out.append(n)
        elif not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            todo.extend(c for c in ast.iter_child_nodes(n)
                        if isinstance(c, (ast.stmt, ast.excepthandler, ast.match_case)))
    return out


def class_of(fn):
    """The innermost class `fn` was defined in, from its qualified name (a part not
    followed by `<locals>` is a class), or None. Private names are mangled with it."""
    parts = str(getattr(fn, "__qualname__", "")).split(".")
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] != "<locals>" and parts[i + 1] != "<locals>":
            return parts[i] if parts[i].isidentifier() else None
    return None


def _compile_like(node, fn, code, ctx):
    node = copy.deepcopy(node)
    if isinstance(node, ast.Lambda):
        stmt = ast.Assign(targets=[ast.Name("__pb_lambda__", ast.Store())], value=node)
    else:
        node.decorator_list = []
        stmt = node
    free = [n for n in code.co_freevars if n != "__class__"]
    cls = class_of(fn)
    if cls is None and "__class__" in code.co_freevars:
        cls = "__pb_class__"
    # Free variables are cells of an enclosing function; without any, the
    # definition stays at module level (an enclosing function would turn the
    # function's references to its own global name into a free variable).
    ind = "    " if free else ""
    lines = [f"def {_OUTER}():", "    " + " = ".join(free) + " = None"] if free else []
    lines += [ind + f"class {cls}:", ind + "    pass"] if cls is not None else [ind + "pass"]
    mod = ast.parse("\n".join(lines) + "\n")
    holder = mod.body[0].body if free else mod.body
    if cls is not None:
        holder[-1].body = [stmt]
    else:
        holder[-1] = stmt
    mod.body[:0] = [copy.copy(i) for i in (ctx.imports if ctx else ())]
    ast.fix_missing_locations(mod)
    if ctx is not None and not ctx.pytest_off:
        _rewrite_like_loader(mod, fn, ctx.text)
    top = compile(mod, code.co_filename, "exec", flags=code.co_flags & _FUTURE_FLAGS, dont_inherit=True)
    return _find(top, code.co_name)


def _rewrite_like_loader(mod, fn, text):
    """Apply the AST rewrite of an import hook that rewrote `fn`'s module, if we know it
    (pytest rewrites `assert` statements in test modules)."""
    loader = getattr(fn, "__globals__", {}).get("__loader__")
    if type(loader).__name__ != "AssertionRewritingHook":
        return
    try:
        from _pytest.assertion.rewrite import rewrite_asserts
    except ImportError:  # pragma: no cover
        return
    rewrite_asserts(mod, text.encode("utf-8", "surrogateescape"), getattr(fn.__code__, "co_filename", None), getattr(loader, "config", None))


def _find(top, name):
    """The shallowest code object named `name` below the synthetic outer function."""
    level = [c for c in top.co_consts if isinstance(c, types.CodeType)]
    while level:
        nxt = []
        for c in level:
            if c.co_name == name and c.co_name != _OUTER:
                return c
            nxt.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
        level = nxt
    return None


_FIELDS = ("co_code", "co_argcount", "co_posonlyargcount", "co_kwonlyargcount", "co_names",
           "co_varnames", "co_freevars", "co_cellvars", "co_exceptiontable", "co_name")


def same_code(a: types.CodeType, b: types.CodeType) -> bool:
    """Code objects equal up to line tables, file and qualified names, and nesting."""
    for f in _FIELDS:
        if getattr(a, f, None) != getattr(b, f, None):
            return False
    if (a.co_flags & ~_CO_NESTED) != (b.co_flags & ~_CO_NESTED):
        return False
    if len(a.co_consts) != len(b.co_consts):
        return False
    qa, qb = getattr(a, "co_qualname", None), getattr(b, "co_qualname", None)
    # a class body stores its own __qualname__ as a constant, which depends on where it was compiled
    return all(_same_const(x, y) or (qa is not None and x == qa and y == qb)
               for x, y in zip(a.co_consts, b.co_consts))


def _same_const(x, y) -> bool:
    if type(x) is not type(y):
        return False
    if isinstance(x, types.CodeType):
        return same_code(x, y)
    if isinstance(x, tuple):
        return len(x) == len(y) and all(_same_const(p, q) for p, q in zip(x, y))
    if isinstance(x, frozenset):
        return x == y
    return repr(x) == repr(y)  # distinguishes 0.0 / -0.0, equal for NaN


__all__ = ["FileContext", "matches", "same_code", "module_imports"]
