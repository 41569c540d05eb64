"""Source retrieval: the AST of a Python function, with the user's real line numbers.

Contract: `function_ast(fn) -> FnSource` gives the (rewritten, see `rewrite`)
`ast.FunctionDef`/`ast.Lambda` of `fn`, the file name and the file's lines.
The AST is the one whose compiled code is `fn.__code__` (`codematch`): a
function whose file was edited after it was imported raises a located
`StagingError` instead of staging code that is not running; one that only
moved in its file is found at its new lines. Generator functions, coroutines
(`async def`) and async generators are refused. Results are cached per code
object, so each function is read and checked once. Raises `StagingError` when
the source is unavailable. Callers hold the staging lock
(`frontend.STAGING_LOCK`); note [source-edits] in docs/design.md.
"""
from __future__ import annotations

import ast
import inspect
import linecache
import os
from dataclasses import dataclass

from ..errors import StagingError, UnsupportedSyntaxError
from ..ir.core import SrcLoc
from .codematch import FileContext, class_of, matches


@dataclass
class FnSource:
    node: ast.AST  # FunctionDef / Lambda
    file: str
    lines: list
    body: list  # rewritten statement list (Lambda: [Return(body)])
    cls: str | None = None  # the class the function was defined in (private names are mangled with it)

    def loc(self, node) -> SrcLoc:
        line = getattr(node, "lineno", None) or getattr(self.node, "lineno", 0)
        text = self.lines[line - 1].rstrip("\n") if 0 < line <= len(self.lines) else ""
        return SrcLoc(self.file, line, text)


_CACHE: dict = {}

_CO_GENERATOR, _CO_COROUTINE, _CO_ITERABLE_COROUTINE, _CO_ASYNC_GENERATOR = (
    inspect.CO_GENERATOR, inspect.CO_COROUTINE, inspect.CO_ITERABLE_COROUTINE, inspect.CO_ASYNC_GENERATOR)


def def_loc(code) -> SrcLoc:
    """The location of a code object's `def` line (as the running code knows it)."""
    line = code.co_firstlineno
    return SrcLoc(code.co_filename, line, linecache.getline(code.co_filename, line).rstrip("\n"))


def _refuse_kind(fn, code, fsrc):
    """Generators, coroutines and async generators are not plain functions: refuse them
    (at the first `yield` for a generator, at the `def` otherwise)."""
    flags = code.co_flags
    node = fsrc.node
    if flags & _CO_ASYNC_GENERATOR:
        what = "async generator functions"
    elif flags & (_CO_COROUTINE | _CO_ITERABLE_COROUTINE):
        what = "async functions (async def)"
    elif flags & _CO_GENERATOR:
        what = "generator functions (yield)"
        node = next((n for n in _walk_own(fsrc.node) if isinstance(n, (ast.Yield, ast.YieldFrom))), node)
    else:
        return
    raise UnsupportedSyntaxError(
        f"'{getattr(fn, '__qualname__', code.co_name)}' cannot be staged: {what} are not supported",
        loc=fsrc.loc(node),
        hint="pass a plain function (def ... return ...); build sequences with loops and arrays")


def _walk_own(node):
    """Nodes of a function's body, not inside nested functions, lambdas or classes."""
    todo = list(ast.iter_child_nodes(node))
    while todo:
        n = todo.pop(0)
        yield n
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(n))


def function_ast(fn) -> FnSource:
    code = getattr(fn, "__code__", None)
    key = (code, code.co_filename) if code is not None else fn
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    name = getattr(fn, "__qualname__", None) or repr(fn)
    if code is None:
        raise StagingError(f"cannot read the source code of '{name}'",
                           hint="pass a function defined with def in a .py file")
    file, lines = _file_lines(fn, code)
    if not lines:
        raise StagingError(
            f"cannot read the source code of '{name}'",
            loc=def_loc(code) if os.path.isfile(code.co_filename) else None,
            hint="define the function in a .py file (pullback stages functions from their source; "
                 "if the file was moved or deleted after import, re-import it), "
                 "or mark the arguments that reach it as static")
    tree, ctx = _parse_file(file, lines)
    node = None
    if tree is not None:
        for n in _candidates(tree, code):
            if matches(n, fn, ctx):
                node = n
                break
    if node is None:
        raise StagingError(
            f"the source of '{name}' in {os.path.basename(file)} changed after it was imported, "
            "so the code on disk is not the code that runs",
            loc=def_loc(code),
            hint="re-import the module (importlib.reload) or restart Python after editing it")
    from .rewrite import prepare_body

    fsrc = FnSource(node, file, lines, None, class_of(fn))
    _refuse_kind(fn, code, fsrc)
    fsrc.body = prepare_body(node, fsrc)
    _CACHE[key] = fsrc
    return fsrc


def _file_lines(fn, code):
    """The file `code` came from and its current lines (re-read if it changed on disk)."""
    try:
        file = inspect.getsourcefile(code) or code.co_filename
    except TypeError:
        file = code.co_filename
    linecache.checkcache(file)
    return file, linecache.getlines(file, getattr(fn, "__globals__", None))


_FILES: dict = {}  # file name -> (text, tree or None, FileContext)


def _parse_file(file, lines):
    text = "".join(lines)
    hit = _FILES.get(file)
    if hit is not None and hit[0] == text:
        return hit[1], hit[2]
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        tree = None
    ctx = FileContext(tree, text)
    _FILES[file] = (text, tree, ctx)
    return tree, ctx


def _first_line(node):
    return min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])


def _candidates(tree, code):
    """Definitions in the file that may be `code`: by name (or lambdas), the ones
    at the line the code was compiled from first, then the rest of the file (the
    function may have moved)."""
    if code.co_name == "<lambda>":
        nodes = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)]
    else:
        nodes = [n for n in ast.walk(tree)
                 if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == code.co_name]
    line = code.co_firstlineno
    return sorted(nodes, key=lambda n: (_first_line(n) != line, abs(_first_line(n) - line)))


def nested_source(node, parent: FnSource) -> FnSource:
    """The FnSource of a `def`/`lambda` nested in a function being staged."""
    key = ("nested", id(node))
    hit = _CACHE.get(key)
    if hit is not None and hit.node is node:
        return hit
    from .rewrite import prepare_body

    fsrc = FnSource(node, parent.file, parent.lines, None, parent.cls)
    fsrc.body = prepare_body(node, fsrc)
    _CACHE[key] = fsrc
    return fsrc
