"""Source retrieval: the AST of a Python function, with the user's real line numbers.

Contract: `function_ast(fn) -> FnSource` gives the (rewritten, see `rewrite`)
`ast.FunctionDef`/`ast.Lambda` of `fn`, the file name and the file's lines.
Results are cached per code object. Raises `StagingError` when the source is
unavailable.
"""
from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
from dataclasses import dataclass

from ..errors import StagingError
from ..ir.core import SrcLoc


@dataclass
class FnSource:
    node: ast.AST  # FunctionDef / AsyncFunctionDef / Lambda
    file: str
    lines: list
    body: list  # rewritten statement list (Lambda: [Return(body)])

    def loc(self, node) -> SrcLoc:
        line = getattr(node, "lineno", None) or getattr(self.node, "lineno", 0)
        text = self.lines[line - 1].rstrip("\n") if 0 < line <= len(self.lines) else ""
        return SrcLoc(self.file, line, text)


_CACHE: dict = {}


def function_ast(fn) -> FnSource:
    code = getattr(fn, "__code__", None)
    key = code if code is not None else fn
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    name = getattr(fn, "__qualname__", repr(fn))
    try:
        src_lines, first = inspect.getsourcelines(fn)
        file = inspect.getsourcefile(fn) or code.co_filename
    except (OSError, TypeError):
        raise StagingError(
            f"cannot read the source code of '{name}'",
            hint="define the function in a .py file (pullback stages functions from their source), "
                 "or mark the arguments that reach it as static",
        ) from None
    src = textwrap.dedent("".join(src_lines))
    try:
        tree = ast.parse(src)
    except SyntaxError:
        # e.g. a lambda in the middle of an expression spanning lines
        try:
            tree = ast.parse("(" + src.strip().rstrip(",") + ")")
        except SyntaxError:
            raise StagingError(f"cannot parse the source of '{name}'") from None
    ast.increment_lineno(tree, first - 1 if first > 0 else 0)
    node = None
    if code is not None and code.co_name == "<lambda>":
        lams = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)]
        if len(lams) != 1:
            raise StagingError(f"cannot find the source of the lambda '{name}' unambiguously",
                               hint="define it with `def` instead")
        node = lams[0]
    else:
        for n in ast.walk(tree):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == getattr(fn, "__name__", None):
                node = n
                break
    if node is None:
        raise StagingError(f"cannot find the definition of '{name}' in its source")
    lines = linecache.getlines(file) or src_lines
    from .rewrite import prepare_body

    fsrc = FnSource(node, file, lines, None)
    fsrc.body = prepare_body(node, fsrc)
    _CACHE[key] = fsrc
    return fsrc


def nested_source(node, parent: FnSource) -> FnSource:
    """The FnSource of a `def`/`lambda` nested in a function being staged."""
    key = ("nested", id(node))
    hit = _CACHE.get(key)
    if hit is not None and hit.node is node:
        return hit
    from .rewrite import prepare_body

    fsrc = FnSource(node, parent.file, parent.lines, None)
    fsrc.body = prepare_body(node, fsrc)
    _CACHE[key] = fsrc
    return fsrc
