"""Wide calls and tuples in numba code (note [wide-tuples]).

Contract:
- `widen(src) -> str`: the generated module text `src` with every call of
  more than `WIDE` positional arguments (and no keywords: generated code
  passes none) and every tuple display of more than
  `WIDE` elements rewritten into forms numba reads: a tuple display becomes a
  sum of tuple displays of at most `WIDE` elements each (``(a, b, ...) + (c,
  ...)``), a call ``f(a, b, ...)`` becomes ``f(*(...) + (...))``. The values,
  their order of evaluation and the call's meaning are unchanged.
- CPython 3.11 compiles a call of more than 30 arguments, and a tuple display
  of more than 30 non-constant elements, by building a list and converting it
  with the ``LIST_TO_TUPLE`` opcode, which numba's bytecode reader does not
  support ("Unsupported op-code encountered: list_to_tuple"); a `def` of any
  number of parameters, unpacking into any number of targets and list
  displays are compiled without it. Generated code reaches such widths in a
  parallel map's helpers (one parameter per value the map body reads), in
  calls of generated functions and in returns and parallel assignments of
  many values.
- Only lines of at least `WIDE` commas are looked at; each is parsed as one
  statement (a line that is not a whole statement, such as a loop's header,
  is left as it is), rewritten and printed again with its trailing comment.
  Pure text to text.
"""
from __future__ import annotations

import ast
import io
import tokenize

WIDE = 30   # CPython 3.11's STACK_USE_GUIDELINE: wider calls and tuples use LIST_TO_TUPLE


def _pieces(elts: list) -> ast.expr:
    """`elts` as a sum of tuple displays of at most `WIDE` elements each."""
    parts = [ast.Tuple(elts=elts[k:k + WIDE], ctx=ast.Load()) for k in range(0, len(elts), WIDE)]
    out = parts[0]
    for p in parts[1:]:
        out = ast.BinOp(left=out, op=ast.Add(), right=p)
    return out


class _Widen(ast.NodeTransformer):
    def __init__(self):
        self.changed = False

    def visit_Call(self, node):
        self.generic_visit(node)
        if (len(node.args) > WIDE and not node.keywords   # generated calls pass no keywords
                and not any(isinstance(a, ast.Starred) for a in node.args)):
            node.args = [ast.Starred(value=_pieces(node.args), ctx=ast.Load())]
            self.changed = True
        return node

    def visit_Tuple(self, node):
        self.generic_visit(node)
        if (isinstance(node.ctx, ast.Load) and len(node.elts) > WIDE
                and not any(isinstance(e, ast.Starred) for e in node.elts)):
            self.changed = True
            return _pieces(node.elts)
        return node


def _split_comment(code: str) -> tuple[str, str]:
    """(the statement, its trailing comment with the spaces before it, or "")."""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type == tokenize.COMMENT:
                k = tok.start[1]
                return code[:k].rstrip(), "  " + code[k:]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return code, ""


def _line(line: str) -> str:
    body = line.lstrip(" ")
    indent = line[:len(line) - len(body)]
    stmt, comment = _split_comment(body)
    try:
        tree = ast.parse(stmt)
    except SyntaxError:
        return line
    if len(tree.body) != 1:
        return line
    w = _Widen()
    tree = w.visit(tree)
    if not w.changed:
        return line
    return indent + ast.unparse(tree) + comment


def widen(src: str) -> str:
    """`src` with wide calls and tuple displays rewritten (see the module's contract)."""
    if src.count(",") < WIDE:
        return src
    lines = src.split("\n")
    for k, line in enumerate(lines):
        if line.count(",") >= WIDE:
            lines[k] = _line(line)
    return "\n".join(lines)
