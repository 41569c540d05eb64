"""Warm start: a persistent map from (function, transformation, argument
signature, versions) to the compiled module, so that a new process skips
staging, the passes and code generation (note [warm-start] in docs/design.md).

Contract:
- `lookup(jitted, args, static) -> (runner, key)`. `jitted` is a `pb.jit`
  object on the numba backend. `key` is None when this call cannot use the warm
  cache: an argument is not a plain number/array (pytrees of them are fine), or
  something the function can read while it is staged cannot be fingerprinted
  (see `fingerprint`). `runner` is `(run, out_tree, out_dtypes)` as `pb.jit`
  keeps them, or None (no valid entry: stage as usual, then `store(key, st)`).
- The key hashes: the function's fingerprint (below), the transformation (the
  key `api._cached` used, or jit's static_argnums/backend/parallel), each
  argument's pytree structure and leaf dtype/shape, the static arguments'
  values, the versions of pullback (its source files' sizes and mtimes), Python,
  NumPy, numba, llvmlite and SciPy, the CPU count and every ``PULLBACK_*`` and
  ``NUMBA_*`` environment variable except those that cannot change generated
  code (``PULLBACK_CACHE_DIR``, ``_BACKEND``, ``_DEBUG``, ``_WARM_CACHE``).
- `fingerprint(fn)`: a function's code object (bytecode, constants, names,
  line table), the text of its file, its defaults, its closure cells' values
  and the values of the globals its code names, recursively through every
  function, user module attribute and closure reached; numbers, strings,
  arrays (their bytes), tuples/lists/dicts of them and pullback's own
  transformations are values. Functions, classes and modules of NumPy, SciPy,
  math, pullback and other trusted libraries count by name (their versions are
  in the key). Anything else (instances of other classes, classes, code
  that imports) refuses the warm cache for that function: it stages as before.
- Entries are ``pb_w<key>.warm.json`` files in `numba_cache.module_dir()`
  (same ownership/permission rules, atomic 0o600 writes), naming the module
  ``pb_<hash>.py`` and its sha256; the module is read and checked against it
  before it is executed, numba's files go through the module's manifest as
  before, large constants are ``pb_c<sha256>.npy`` files (loaded without
  pickle, checked by sha256). Anything missing, unreadable or mismatching is
  a miss.
  ``PULLBACK_WARM_CACHE=0`` turns the warm cache off.
- `STATS` counts hits, misses, refusals and stores in this process (tests).
- Thread safety: no shared mutable state besides `STATS` and two per-process
  memos filled idempotently; the runner comes from `numba_backend.from_spec`,
  which takes the backend's lock.
"""
from __future__ import annotations

import builtins
import dis
import hashlib
import json
import os
import sys
import types

import numpy as np

FORMAT = "1"
STATS = {"hit": 0, "miss": 0, "refused": 0, "stored": 0}
_TRUSTED = frozenset({"numpy", "scipy", "math", "cmath", "builtins", "operator", "functools", "itertools",
                      "pullback", "numba", "collections", "typing", "dataclasses", "abc", "enum"})
_IMPORT_OPS = frozenset(dis.opmap[n] for n in ("IMPORT_NAME", "IMPORT_FROM", "IMPORT_STAR") if n in dis.opmap)
_ENV: list = []
# settings that do not change generated code (the backend is in the key anyway)
_NOT_CODE = frozenset({"PULLBACK_CACHE_DIR", "PULLBACK_BACKEND", "PULLBACK_DEBUG", "PULLBACK_WARM_CACHE"})
_FILES: dict = {}       # path -> (stat key, sha256 of the text)


def enabled() -> bool:
    return os.environ.get("PULLBACK_WARM_CACHE", "1") != "0"


class _Refused(Exception):
    """A value staging may read has no stable fingerprint."""


# ---------------------------------------------------------------------------
# fingerprints
# ---------------------------------------------------------------------------

def _trusted(modname) -> bool:
    """A library module counted by name (its version is in the key). pullback's
    GradBench modules are application code: fingerprinted like the user's."""
    return (isinstance(modname, str) and modname.partition(".")[0] in _TRUSTED
            and not modname.startswith("pullback.gradbench"))


def _file_hash(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        raise _Refused(f"source file {path} cannot be read") from None
    sk = (st.st_size, st.st_mtime_ns, st.st_ino)
    hit = _FILES.get(path)
    if hit is not None and hit[0] == sk:
        return hit[1]
    try:
        with open(path, "rb") as fh:
            h = hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        raise _Refused(f"source file {path} cannot be read") from None
    _FILES[path] = (sk, h)
    return h


class _Walk:
    """One fingerprint: a deterministic traversal that yields nested tuples of
    strings; objects met again (recursion) are referred to by their order."""

    def __init__(self):
        self.seen: dict = {}
        self.alive: list = []   # keeps the objects visited alive, so ids stay unique

    def ref(self, v, ctx=None):
        """A reference to `v` (with `ctx`) if it was walked before, else None (and
        it is now being walked)."""
        key = (id(v), ctx)
        k = self.seen.get(key)
        if k is not None:
            return ("ref", k)
        self.seen[key] = len(self.seen)
        self.alive.append(v)
        return None

    def value(self, v, names=frozenset()):
        t = type(v)
        if v is None or t in (bool, int, float, complex, str, bytes):
            return (t.__name__, repr(v))
        if t in (tuple, list):
            return (t.__name__, tuple(self.value(x, names) for x in v))
        if t is dict:
            keys = list(v)
            if not all(type(k) in (str, int, bool, float) for k in keys):
                raise _Refused("a dict with keys other than numbers and strings")
            return ("dict", tuple((repr(k), self.value(v[k], names)) for k in sorted(keys, key=repr)))
        if t in (set, frozenset):
            if not all(type(x) in (str, int, bool, float, type(None)) for x in v):
                raise _Refused("a set of values other than numbers and strings")
            return (t.__name__, tuple(sorted(repr(x) for x in v)))
        if t is np.ndarray:
            if v.dtype.hasobject:
                raise _Refused("an object array")
            return ("nd", v.dtype.str, v.shape, hashlib.sha256(np.ascontiguousarray(v).view(np.uint8)).hexdigest())
        if isinstance(v, np.generic) and t.__module__ == "numpy":
            if v.dtype.hasobject:
                raise _Refused("an object scalar")
            return ("np", v.dtype.str, np.asarray(v).tobytes().hex())
        if t is np.dtype or isinstance(v, np.dtype):
            return ("dtype", v.str)
        if t is types.ModuleType:
            return self.module(v, names)
        if t is types.FunctionType:
            return self.function(v)
        if t is types.CellType:
            try:
                return ("cell", self.value(v.cell_contents, names))
            except ValueError:
                return ("cell",)
        if isinstance(v, type):
            if _trusted(v.__module__):
                return ("type", v.__module__, v.__qualname__)
            raise _Refused(f"the class {v.__qualname__}")
        if isinstance(v, (types.BuiltinFunctionType, np.ufunc)):
            mod = getattr(v, "__module__", None) or type(v).__module__
            if _trusted(mod) or isinstance(v, np.ufunc):
                return ("builtin", mod, getattr(v, "__qualname__", v.__name__))
            raise _Refused(f"the built-in {v.__name__} of {mod}")
        if _trusted(t.__module__):
            return self.library_object(v, t, names)
        raise _Refused(f"a value of type {t.__qualname__}")

    def library_object(self, v, t, names):
        from .. import api, checkpointing

        if t is api.jit:
            r = self.ref(v)
            return r or ("jit", v.static_argnums, v.backend, repr(v.parallel), self.value(v.fun, names))
        if t is api._Transformed:
            desc = getattr(v, "_warm_desc", None)
            if desc is None:
                raise _Refused("a transformation made outside pb.grad/jacobian/...")
            r = self.ref(v)
            return r or ("transformed", self.value(desc), self.value(v.fun, names))
        if isinstance(v, checkpointing.Strategy):
            return ("strategy", t.__qualname__, repr(v))
        if t in (api._JvpOp, api._VjpOp):
            return ("op", t.__qualname__)
        raise _Refused(f"a {t.__qualname__} object")

    def module(self, m, names):
        name = getattr(m, "__name__", "?")
        if _trusted(name):
            return ("module", name)
        r = self.ref(m, names)   # per set of names: another function may read other attributes
        if r:
            return r
        out = []
        for n in sorted(names):
            try:
                a = getattr(m, n)
            except AttributeError:
                continue
            out.append((n, self.value(a, names)))
        return ("usermodule", name, tuple(out))

    def code(self, co, names: set):
        if co.co_code and any(b in _IMPORT_OPS for b in co.co_code[::2]):
            raise _Refused(f"{co.co_qualname} imports modules when it runs")
        names.update(co.co_names)
        consts = []
        for c in co.co_consts:
            if isinstance(c, types.CodeType):
                consts.append(self.code(c, names))
            else:
                if isinstance(c, str) and c.isidentifier():
                    names.add(c)   # getattr(module, "name")
                consts.append(self.value(c))
        return ("code", co.co_qualname, co.co_filename, co.co_firstlineno, co.co_argcount, co.co_posonlyargcount,
                co.co_kwonlyargcount, co.co_flags, co.co_code.hex(), tuple(consts), co.co_names, co.co_varnames,
                co.co_freevars, co.co_cellvars, co.co_linetable.hex())

    def function(self, fn):
        mod = getattr(fn, "__module__", None)
        r = self.ref(fn)
        if r:
            return r
        if _trusted(mod):   # a library function: its name, and what it closes over (pb.hessian's blocks)
            return ("libfunc", mod, fn.__qualname__, tuple(self.value(c) for c in (fn.__closure__ or ())))
        names: set = set()
        code = self.code(fn.__code__, names)
        src = _file_hash(fn.__code__.co_filename)
        names = frozenset(names)
        g = fn.__globals__
        glob = []
        for n in sorted(names):
            if n in g:
                glob.append((n, self.value(g[n], names)))
            elif hasattr(builtins, n):
                glob.append((n, "builtin"))
        cells = tuple(self.value(c, names) for c in (fn.__closure__ or ()))
        return ("function", mod, fn.__qualname__, code, src, tuple(glob), cells,
                self.value(fn.__defaults__, names), self.value(fn.__kwdefaults__, names))


def fingerprint(obj) -> str:
    """A hex digest of everything staging `obj` may read (see the module
    docstring); raises `_Refused` when something has no stable fingerprint."""
    return hashlib.sha256(repr(_Walk().value(obj)).encode()).hexdigest()


def _pullback_files() -> list:
    base = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = []
    for d, dirs, files in os.walk(base):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__" and not (d == base and x == "gradbench"))
        for f in sorted(files):
            if f.endswith(".py"):
                st = os.stat(os.path.join(d, f))
                out.append((os.path.relpath(os.path.join(d, f), base), st.st_size, st.st_mtime_ns))
    return out


def environment() -> str:
    """A hash of the versions, pullback's own sources and the settings the
    generated code may depend on (computed once per process)."""
    if _ENV:
        return _ENV[0]
    import llvmlite
    import numba

    scipy = sys.modules.get("scipy")
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = 0
    env = sorted((k, v) for k, v in os.environ.items()
                 if (k.startswith("PULLBACK_") and k not in _NOT_CODE) or k.startswith("NUMBA_"))
    parts = (FORMAT, getattr(sys.modules.get("pullback"), "__version__", None), sys.version, sys.platform, np.__version__, numba.__version__, llvmlite.__version__,
             getattr(scipy, "__version__", None), os.cpu_count(), cores, tuple(env), tuple(_pullback_files()))
    h = hashlib.sha256(repr(parts).encode()).hexdigest()
    _ENV[:] = [h]
    return h


def _leaf(v):
    t = type(v)
    if t is bool:
        return "b"
    if t is int:
        if not -2 ** 63 <= v < 2 ** 63:
            raise _Refused("an integer outside int64")
        return "i"
    if t is float:
        return "f"
    if t is np.ndarray or (isinstance(v, np.generic) and t.__module__ == "numpy"):
        k = v.dtype.kind
        if k not in "fib" and not (k == "u" and v.dtype.itemsize < 8) or v.ndim > 32:
            raise _Refused("an argument of an unusual dtype")
        return (v.dtype.str, v.shape) if t is np.ndarray else ("g", v.dtype.str)
    raise _Refused(f"an argument of type {t.__qualname__}")


def key_for(jitted, args, static) -> str:
    """The warm-cache key of calling `jitted` (a `pb.jit`) on `args`; raises `_Refused`."""
    from ..pytree import flatten

    w = _Walk()
    dyn = tuple(a for i, a in enumerate(args) if i not in static)
    leaves, tree = flatten(dyn)
    sig = (str(tree), tuple(_leaf(x) for x in leaves),
           tuple((i, w.value(args[i])) for i in static))
    desc = ("jit", static, jitted.backend, repr(jitted.parallel))
    parts = (environment(), desc, w.value(jitted.fun), sig)
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:40]


# ---------------------------------------------------------------------------
# entries
# ---------------------------------------------------------------------------

def _entry_path(key: str) -> str:
    from .numba_cache import module_dir

    return os.path.join(module_dir(), f"pb_w{key}.warm.json")


def _tree_out(t):
    if t.kind == "dict" and not all(type(k) in (str, int, bool, float) for k in t.keys):
        raise _Refused("a result dict with other keys")
    return [t.kind, [_tree_out(c) for c in t.children], [[type(k).__name__, k] for k in t.keys]]


def _tree_in(d):
    from ..pytree import LEAF, TreeDef

    kind, children, keys = d
    if kind == "leaf":
        return LEAF
    conv = {"str": str, "int": int, "bool": bool, "float": float}
    return TreeDef(kind, tuple(_tree_in(c) for c in children), tuple(conv[t](k) for t, k in keys))


def _dt_out(p):
    return None if p is None else [np.dtype(p[0]).str, bool(p[1])]


def _dt_in(p):
    return None if p is None else (np.dtype(p[0]), bool(p[1]))


def _site_out(s):
    from ..ir.core import SrcLoc

    loc = s.loc
    if loc is not None and not isinstance(loc, SrcLoc):
        raise _Refused("a check site without a source location")
    return [s.kind, None if loc is None else [loc.file, int(loc.line), loc.text, loc.role],
            int(s.axis), int(s.size), str(s.op), int(s.length)]


def _site_in(d):
    from ..ir.core import SrcLoc
    from .checks import Site

    kind, loc, axis, size, op, length = d
    return Site(kind, None if loc is None else SrcLoc(*loc), axis, size, op, length)


def store(key: str, staged) -> bool:
    """Write the entry for `key` after staging `staged` (whose runner came from
    the numba backend); whether one was written."""
    spec = getattr(staged.runner, "spec", None)
    if spec is None or getattr(spec.consts, "metered", False):
        return False
    from .numba_cache import atomic_write, module_dir

    try:
        consts = []
        d = module_dir()
        for a in spec.consts:
            if not isinstance(a, np.ndarray) or a.dtype.hasobject:
                return False
            import io

            buf = io.BytesIO()
            np.save(buf, np.ascontiguousarray(a), allow_pickle=False)
            raw = buf.getvalue()
            sha = hashlib.sha256(raw).hexdigest()
            name = f"pb_c{sha[:32]}.npy"   # by content: shape-generic modules share a name across shapes
            if not os.path.exists(os.path.join(d, name)):
                atomic_write(os.path.join(d, name), raw)
            # numba types a read-only array apart from a writable one: keep the flag, or the
            # first warm start would compile a second signature (note [warm-start])
            consts.append([name, sha, bool(a.flags.writeable)])
        doc = {"format": FORMAT, "key": key, "module": spec.h,
               "module_sha256": hashlib.sha256(spec.src.encode()).hexdigest(),
               "cache": spec.cache, "dname": spec.dname, "name": spec.name,
               "params": [_dt_out(p) for p in spec.params], "rets": [_dt_out(r) for r in spec.rets],
               "par": bool(spec.par), "limit": spec.consts.limit is not None,
               "shape_args": list(spec.shape_args), "contiguous": [bool(c) for c in spec.contiguous],
               "sites": [_site_out(s) for s in spec.consts.sites], "consts": consts,
               "out_tree": _tree_out(staged.out_tree),
               "out_dtypes": [None if t is None else np.dtype(t).str for t in staged.out_dtypes]}
        atomic_write(_entry_path(key), json.dumps(doc).encode())
    except (_Refused, OSError, TypeError, ValueError):
        return False
    STATS["stored"] += 1
    return True


def _shape_args(vals) -> tuple:
    if not all(type(v) in (int, float) for v in vals):
        raise ValueError("shape arguments must be numbers")
    return tuple(vals)


def _contiguous(vals, n: int) -> tuple:
    if not (len(vals) in (0, n) and all(type(v) is bool for v in vals)):
        raise ValueError("contiguous: one bool per parameter")
    return tuple(vals)


def _load(key: str):
    """The runner of the entry `key`, or None (missing or not valid)."""
    from . import numba_backend
    from .checks import ModuleArgs
    from .numba_cache import module_dir

    try:
        with open(_entry_path(key), "rb") as fh:
            doc = json.loads(fh.read().decode())
        if doc.get("format") != FORMAT or doc.get("key") != key:
            return None
        h = doc["module"]
        if not (isinstance(h, str) and h.isalnum()):
            return None
        d = module_dir()
        with open(os.path.join(d, f"pb_{h}.py"), "rb") as fh:
            raw = fh.read()
        if hashlib.sha256(raw).hexdigest() != doc["module_sha256"]:
            return None
        consts = []
        for entry in doc["consts"]:
            name, sha = entry[0], entry[1]
            writeable = bool(entry[2]) if len(entry) > 2 else True
            if not (isinstance(name, str) and name.startswith("pb_c") and name.endswith(".npy") and "/" not in name):
                return None
            with open(os.path.join(d, name), "rb") as fh:
                data = fh.read()
            if hashlib.sha256(data).hexdigest() != sha:
                return None
            import io

            arr = np.load(io.BytesIO(data), allow_pickle=False)
            arr.setflags(write=writeable)
            consts.append(arr)
        limit = None
        if doc["limit"]:
            from .numba_stack import stack_limit as limit
        margs = ModuleArgs(consts, [_site_in(s) for s in doc["sites"]], limit, False)
        spec = numba_backend.Spec(raw.decode(), h, bool(doc["cache"]), str(doc["dname"]), str(doc["name"]),
                                  [_dt_in(p) for p in doc["params"]], [_dt_in(r) for r in doc["rets"]],
                                  margs, bool(doc["par"]), _shape_args(doc.get("shape_args", [])),
                                  _contiguous(doc.get("contiguous", []), len(doc["params"])))
        out_tree = _tree_in(doc["out_tree"])
        dts = tuple(None if t is None else np.dtype(t) for t in doc["out_dtypes"])
    except (OSError, ValueError, KeyError, TypeError, IndexError, UnicodeDecodeError):
        return None
    try:
        run = numba_backend.from_spec(spec)
    except OSError:   # the module could not be (re)written: stage and compile as usual
        return None
    return run, out_tree, dts


def lookup(jitted, args, static=()):
    """`(runner, key)`: see the module docstring."""
    try:
        key = key_for(jitted, args, static)
    except (_Refused, RecursionError):
        STATS["refused"] += 1
        return None, None
    hit = _load(key)
    STATS["hit" if hit is not None else "miss"] += 1
    return hit, key
