"""AST rewrites that remove non-local control flow before staging.

Contract: `prepare_body(fn_node, src) -> list[ast.stmt]` returns a body in which
1. `return` inside loops became `__pb_rv = v; __pb_rf = True; break`, with
   `if __pb_rf: return __pb_rv` after the outermost such loop (just
   `return __pb_rv` after a `while True:` that only a `return` leaves) and
   `if __pb_rf: break` after inner ones; `__pb_rv` starts as `__pb_unset__`;
2. `break`/`continue` became assignments to per-loop flags `__pb_brkN` /
   `__pb_contN`; the rest of the body is guarded by `if not flag`, a `while`
   condition becomes `not __pb_brkN and cond`, a `for` body is guarded by
   `if not __pb_brkN`, and a loop's `else:` runs under `if not __pb_brkN`;
3. an `if` that contains a `return` receives the statements following it (its
   continuation) in each branch that does not always return, so every path of
   the function ends in its own `return` (the function ends in `return None`).
The rewritten nodes keep the user's line numbers. Nodes are never mutated
(continuations are shared between branches).
"""
from __future__ import annotations

import ast
import itertools

_ids = itertools.count(1)

RF, RV, UNSET_NAME = "__pb_rf", "__pb_rv", "__pb_unset__"
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LOOPS = (ast.For, ast.While, ast.AsyncFor)


def _walk_local(node, *, into_loops=True):
    """Nodes under `node` (statements' children) not inside nested scopes (or loops)."""
    stack = list(ast.iter_child_nodes(node))
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, _SCOPES):
            continue
        if not into_loops and isinstance(n, _LOOPS):
            continue
        stack.extend(ast.iter_child_nodes(n))


def _has(stmts, kinds, *, into_loops=True):
    for s in stmts:
        if isinstance(s, kinds):
            return True
        if isinstance(s, _SCOPES):
            continue
        if not into_loops and isinstance(s, _LOOPS):
            continue
        if any(isinstance(n, kinds) for n in _walk_local(s, into_loops=into_loops)):
            return True
    return False


def _at(node, like):
    ast.copy_location(node, like)
    ast.fix_missing_locations(node)
    return node


def _name(id_, ctx=ast.Load):
    return ast.Name(id=id_, ctx=ctx())


def _assign(id_, value, like):
    return _at(ast.Assign(targets=[_name(id_, ast.Store)], value=value), like)


def _const(v):
    return ast.Constant(value=v)


# -- 1. return inside loops ---------------------------------------------------------

def _returns_in_loops(stmts, in_loop):
    out = []
    for s in stmts:
        if isinstance(s, _LOOPS) and _has([s], ast.Return):
            loop = _rewrite_loop_returns(s)
            if not in_loop:
                out.append(_assign(RF, _const(False), s))
                out.append(_assign(RV, _name(UNSET_NAME), s))
                out.append(loop)
                if _only_returns_exit(s):  # `while True:` left only by `return`
                    out.append(_at(ast.Return(value=_name(RV)), s))
                    break
                out.append(_at(ast.If(test=_name(RF), body=[_at(ast.Return(value=_name(RV)), s)], orelse=[]), s))
            else:
                out.append(loop)
                out.append(_at(ast.If(test=_name(RF), body=[_at(ast.Break(), s)], orelse=[]), s))
        elif isinstance(s, ast.Return) and in_loop:
            val = s.value if s.value is not None else _const(None)
            out.append(_assign(RV, val, s))
            out.append(_assign(RF, _const(True), s))
            out.append(_at(ast.Break(), s))
        elif isinstance(s, ast.If) and _has([s], ast.Return):
            out.append(_at(ast.If(test=s.test, body=_returns_in_loops(s.body, in_loop),
                                  orelse=_returns_in_loops(s.orelse, in_loop)), s))
        else:
            out.append(s)
    return out


def _only_returns_exit(s) -> bool:
    """A `while True:` (a true constant test) with no `break` of its own: only a
    `return` leaves it, so the code after it never runs without a return value."""
    return (isinstance(s, ast.While) and isinstance(s.test, ast.Constant) and bool(s.test.value) is True
            and not s.orelse and not _has(s.body, ast.Break, into_loops=False))


def _rewrite_loop_returns(s):
    body = _returns_in_loops(s.body, True)
    orelse = _returns_in_loops(s.orelse, False) if s.orelse else []
    if isinstance(s, ast.While):
        return _at(ast.While(test=s.test, body=body, orelse=orelse), s)
    return _at(ast.For(target=s.target, iter=s.iter, body=body, orelse=orelse, type_comment=None), s)


# -- 2. break / continue ------------------------------------------------------------

def _break_continue(stmts):
    out = []
    for s in stmts:
        if isinstance(s, (ast.For, ast.While)):
            out.extend(_rewrite_loop_bc(s))
        elif isinstance(s, ast.If):
            out.append(_at(ast.If(test=s.test, body=_break_continue(s.body), orelse=_break_continue(s.orelse)), s))
        else:
            out.append(s)
    return out


def _rewrite_loop_bc(s):
    body = _break_continue(s.body)  # inner loops first
    orelse = _break_continue(s.orelse) if s.orelse else []
    has_b = _has(body, ast.Break, into_loops=False)
    has_c = _has(body, ast.Continue, into_loops=False)
    if not has_b and not has_c:
        loop = _copy_loop(s, s.test if isinstance(s, ast.While) else None, body)
        return [loop] + orelse
    n = next(_ids)
    brk, cont = f"__pb_brk{n}", f"__pb_cont{n}"
    flags = ([brk] if has_b else []) + ([cont] if has_c else [])
    gbody = _guard(body, brk, cont, flags)
    if has_c:
        gbody = [_assign(cont, _const(False), s)] + gbody
    pre = [_assign(brk, _const(False), s)] if has_b else []
    if isinstance(s, ast.While):
        test = s.test
        if has_b:
            test = _at(ast.BoolOp(op=ast.And(), values=[_at(ast.UnaryOp(op=ast.Not(), operand=_name(brk)), s), s.test]), s.test)
        loop = _copy_loop(s, test, gbody)
    else:
        if has_b:
            gbody = [_at(ast.If(test=_at(ast.UnaryOp(op=ast.Not(), operand=_name(brk)), s), body=gbody, orelse=[]), s)]
        loop = _copy_loop(s, None, gbody)
    post = []
    if orelse:
        if has_b:
            post = [_at(ast.If(test=_at(ast.UnaryOp(op=ast.Not(), operand=_name(brk)), s), body=orelse, orelse=[]), s)]
        else:
            post = orelse
    return pre + [loop] + post


def _copy_loop(s, test, body):
    if isinstance(s, ast.While):
        return _at(ast.While(test=test, body=body, orelse=[]), s)
    return _at(ast.For(target=s.target, iter=s.iter, body=body, orelse=[], type_comment=None), s)


def _not_flags(flags, like):
    if len(flags) == 1:
        t = _name(flags[0])
    else:
        t = ast.BoolOp(op=ast.Or(), values=[_name(f) for f in flags])
    return _at(ast.UnaryOp(op=ast.Not(), operand=t), like)


def _guard(stmts, brk, cont, flags):
    out = []
    for k, s in enumerate(stmts):
        if isinstance(s, ast.Break):
            out.append(_assign(brk, _const(True), s))
            return out
        if isinstance(s, ast.Continue):
            out.append(_assign(cont, _const(True), s))
            return out
        if isinstance(s, ast.If) and _has([s], (ast.Break, ast.Continue), into_loops=False):
            out.append(_at(ast.If(test=s.test, body=_guard(s.body, brk, cont, flags),
                                  orelse=_guard(s.orelse, brk, cont, flags)), s))
            rest = stmts[k + 1:]
            if rest:
                out.append(_at(ast.If(test=_not_flags(flags, rest[0]), body=_guard(rest, brk, cont, flags),
                                      orelse=[]), rest[0]))
            return out
        out.append(s)
    return out


# -- 3. continuations of ifs that return ---------------------------------------------

def _always_returns(stmts) -> bool:
    for s in stmts:
        if isinstance(s, ast.Return):
            return True
        if isinstance(s, ast.If) and _always_returns(s.body) and _always_returns(s.orelse):
            return True
    return False


def _continuations(stmts):
    out = []
    for k, s in enumerate(stmts):
        if isinstance(s, ast.Return):
            out.append(s)
            return out
        if isinstance(s, ast.If) and _has([s], ast.Return, into_loops=False):
            rest = stmts[k + 1:]
            body = s.body if _always_returns(s.body) else s.body + rest
            orelse = s.orelse if _always_returns(s.orelse) else s.orelse + rest
            out.append(_at(ast.If(test=s.test, body=_continuations(body), orelse=_continuations(orelse)), s))
            return out
        out.append(s)
    return out


def prepare_body(node, src=None):
    if isinstance(node, ast.Lambda):
        return [_at(ast.Return(value=node.body), node.body)]
    body = list(node.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    last = body[-1] if body else node
    body = body + [_at(ast.Return(value=None), last)]
    body = _returns_in_loops(body, False)
    body = _break_continue(body)
    body = _continuations(body)
    return body
