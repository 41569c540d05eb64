"""Shape-generic compiled code: a new input shape with the same ranks reuses the
machine code compiled for an earlier shape (note [shape-generic]).

Staging stays per shape. The generated module of the new shape is compared
with the modules generated before: two modules whose syntax trees are equal
except for the values of numeric literals (docstrings and comments ignored)
have the same *skeleton*. The literals that differ (sizes, loop bounds, 1/n
folded from a mean, ...) become run-time values: the module is rewritten so
that each such literal reads `_pbs[j]`, and every function takes `_pbs` (a
tuple) as its last parameter and passes it on at every call of a module
function. The entry wrapper passes the new shape's literal values. Any later
module with the same skeleton whose literals differ only at those positions
runs the same compiled code with its own values: no numba compile.

Contract:
- `plan(src) -> (generic_src, shape_args) | None`: None means compile `src`
  as it is (the first module of its skeleton, a module equal to the first, a
  difference at module level or in a small integer (< `SMALL`: loop bounds
  that numba unrolls stay constants, so no speed is lost), or a generic
  version that numba could not compile before). Otherwise `generic_src` is
  the rewritten module and `shape_args` the tuple to pass as its last
  argument. The registry of skeletons is per process and on disk
  (``pb_s<hash>.shape.json`` in `numba_cache.module_dir()`, atomic 0o600
  writes, read under the same ownership rules); a damaged record is ignored.
- `failed(generic_src)`: record that numba could not compile a generic module
  (it is compiled specialised from then on).
- `ShapeArgs`: the module's hidden trailing arguments (`checks.ModuleArgs`)
  with the shape tuple appended.
- ``PULLBACK_SHAPE_GENERIC=0`` turns it off (`enabled()`).
- Thread safety: the registry is guarded by one lock.

Soundness: the generic module run with `shape_args` is, token for token, the
new shape's own module with literals read from a tuple instead of written in
place; numba types an int literal and an int64 tuple item alike, and a
construct that needs a literal (a tuple index, say) fails to type, which is
reported by `failed` and compiled specialised.
"""
from __future__ import annotations

import ast
import hashlib
import json
import os
import threading

from .checks import CHECK_ERRORS, ModuleArgs, raise_located

SMALL = 16
_LOCK = threading.Lock()
_REG: dict = {}     # skeleton hash -> {"ref": [values], "lifted": [positions] | None, "failed": [generic hashes]}


def enabled() -> bool:
    return os.environ.get("PULLBACK_SHAPE_GENERIC", "1") != "0"


def _strip_docstrings(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                node.body = node.body[1:] or [ast.Pass()]


def _numbers(tree) -> list:
    """The numeric literal nodes (not bools) in a fixed order."""
    return [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and type(n.value) in (int, float)]


def _analyse(src: str):
    """(skeleton hash, tree, literal nodes) of a module."""
    tree = ast.parse(src)
    _strip_docstrings(tree)
    nums = _numbers(tree)
    vals = [n.value for n in nums]
    for n in nums:
        n.value = 0 if type(n.value) is int else 0.0
    skel = hashlib.sha256(ast.dump(tree).encode()).hexdigest()[:32]
    for n, v in zip(nums, vals):
        n.value = v
    return skel, tree, nums


def _module_level(tree) -> set:
    """ids of literal nodes evaluated outside every function body (module level,
    decorators, defaults): they cannot become parameters."""
    inside = set()
    for f in tree.body:
        if isinstance(f, ast.FunctionDef):
            for stmt in f.body:
                inside.update(id(n) for n in ast.walk(stmt))
    return {id(n) for n in _numbers(tree) if id(n) not in inside}


def _rewrite(tree, nums, lifted) -> str:
    """The module with the literals at `lifted` read from `_pbs` (see the module docstring)."""
    defs = {f.name for f in tree.body if isinstance(f, ast.FunctionDef)}
    marks = {id(nums[i]): j for j, i in enumerate(lifted)}

    class T(ast.NodeTransformer):
        def visit_Constant(self, node):
            j = marks.get(id(node))
            if j is None:
                return node
            return ast.copy_location(ast.Subscript(ast.Name("_pbs", ast.Load()), ast.Constant(j), ast.Load()), node)

        def visit_FunctionDef(self, node):
            self.generic_visit(node)
            node.args.args.append(ast.arg("_pbs"))
            return node

        def visit_Call(self, node):
            self.generic_visit(node)
            if isinstance(node.func, ast.Name) and node.func.id in defs:
                node.args.append(ast.Name("_pbs", ast.Load()))
            return node

    out = T().visit(tree)
    ast.fix_missing_locations(out)
    return ast.unparse(out) + "\n"


def _path(skel: str) -> str:
    from .numba_cache import module_dir

    return os.path.join(module_dir(), f"pb_s{skel}.shape.json")


def _read(skel: str):
    try:
        with open(_path(skel), "rb") as fh:
            rec = json.loads(fh.read().decode())
        if not (isinstance(rec.get("ref"), list) and (rec.get("lifted") is None or isinstance(rec["lifted"], list))
                and isinstance(rec.get("failed", []), list)):
            return None
        rec.setdefault("failed", [])
        return rec
    except (OSError, ValueError, AttributeError):
        return None


def _write(skel: str, rec) -> None:
    from .numba_cache import atomic_write

    try:
        atomic_write(_path(skel), json.dumps(rec).encode())
    except (OSError, ValueError):
        pass


def _hash(src: str) -> str:
    return hashlib.sha256(src.encode()).hexdigest()[:24]


_GENERIC: dict = {}   # generic source hash -> skeleton hash (for `failed`)


def plan(src: str):
    """See the module docstring."""
    if not enabled():
        return None
    try:
        skel, tree, nums = _analyse(src)
    except (SyntaxError, ValueError, RecursionError):
        return None
    vals = [n.value for n in nums]
    with _LOCK:
        rec = _REG.get(skel) or _read(skel)
        if rec is None or len(rec["ref"]) != len(vals):
            _REG[skel] = {"ref": vals, "lifted": None, "failed": []}
            _write(skel, _REG[skel])
            return None
        _REG[skel] = rec
        ref = rec["ref"]
        diff = [i for i, (a, b) in enumerate(zip(ref, vals)) if a != b or type(a) is not type(b)]
        if not diff:
            return None
        lifted = sorted(set(diff) | set(rec["lifted"] or ()))
        top = _module_level(tree)
        for i in lifted:
            a, b = ref[i], vals[i]
            if type(a) is not type(b) or id(nums[i]) in top:
                return None
            if type(b) is int and (min(abs(a), abs(b)) < SMALL or not -2 ** 63 <= b < 2 ** 63):
                return None   # a small size: numba unrolls or specialises on it; keep it constant
        args = tuple(vals[i] for i in lifted)
        gsrc = _rewrite(tree, nums, lifted)
        gh = _hash(gsrc)
        if gh in rec["failed"]:
            return None
        if rec["lifted"] != lifted:
            rec["lifted"] = lifted
            _write(skel, rec)
        _GENERIC[gh] = skel
    return gsrc, args


def failed(gsrc: str) -> None:
    """numba could not compile the generic module `gsrc`: compile its skeleton's
    modules specialised from now on."""
    gh = _hash(gsrc)
    with _LOCK:
        skel = _GENERIC.get(gh)
        rec = _REG.get(skel) if skel else None
        if rec is not None and gh not in rec["failed"]:
            rec["failed"].append(gh)
            _write(skel, rec)


class ShapeArgs(ModuleArgs):
    """`ModuleArgs` with the shape tuple `_pbs` as the very last argument."""

    def __init__(self, base: ModuleArgs, shape_args: tuple):
        super().__init__(list(base), base.sites, base.limit, base.metered)
        self.shape_args = tuple(shape_args)

    def trailing(self) -> list:
        return [*super().trailing(), self.shape_args]

    def call(self, fn, args):
        try:
            return fn(*args, *self.trailing())
        except CHECK_ERRORS as err:
            raise_located(err, self.sites)
