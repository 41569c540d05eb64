"""Command line.

    pullback source FILE FUNC --args "np.ones(3), 2" [--mode rev|fwd] [--ir]
    pullback FILE FUNC --args ...        (the same, when FILE is an existing file)
    pullback cache info                  (location, size and entries of the numba cache)
    pullback cache clear                 (delete pullback's cached files)

Contract: `main(argv) -> int` never lets a traceback reach the user for a user
error. A missing or unreadable file, a syntax error or an exception while the
file runs, a bad ``--args`` expression and a missing function each print one
line ``pullback: ...`` to stderr and return 2; a `PullbackError` from staging or
differentiation prints its located message and returns 1.
"""
from __future__ import annotations

import argparse
import os
import sys
import traceback

_SUBCOMMANDS = ("source", "cache")
_EPILOG = """commands:
  source FILE FUNC --args EXPR   print the derivative source of FUNC defined in FILE
  cache info                     show the numba cache: location, size, number of entries
  cache clear                    delete pullback's files from the numba cache

`pullback FILE FUNC --args EXPR ...` (no command) is `pullback source ...` whenever
FILE is an existing file. The cache is $PULLBACK_CACHE_DIR (default ~/.cache/pullback)."""


class _UserError(Exception):
    """A problem with the command line's inputs: printed as one line, exit 2."""


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="pullback", description="Readable derivative code of Python functions, "
                                 "and the compiled-code cache.", epilog=_EPILOG,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", metavar="{source,cache}")
    src = sub.add_parser("source", help="print the derivative source of a function",
                         description="Print readable derivative code of a Python function.")
    src.add_argument("file", help="Python file that defines the function")
    src.add_argument("func", help="name of the function")
    src.add_argument("--args", required=True, help="example arguments, a Python expression (numpy is np)")
    src.add_argument("--mode", choices=("rev", "fwd"), default="rev")
    src.add_argument("--ir", action="store_true", help="print the IR instead of Python")
    cache = sub.add_parser("cache", help="inspect or clear the numba backend's compiled-code cache",
                           description="The numba backend's compiled-code cache ($PULLBACK_CACHE_DIR, "
                                       "default ~/.cache/pullback).")
    cache.add_argument("action", choices=("info", "clear"),
                       help="info: location, size and entries; clear: delete pullback's cached files")
    return ap


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] not in _SUBCOMMANDS and not argv[0].startswith("-"):
        if os.path.isfile(argv[0]):
            argv = ["source"] + argv   # the original form: pullback FILE FUNC --args ...
        elif argv[0].endswith(".py") or os.sep in argv[0]:
            print(f"pullback: no such file: {argv[0]}", file=sys.stderr)
            return 2
    ap = _parser()
    ns = ap.parse_args(argv)
    try:
        if ns.command == "source":
            return _source(ns)
        if ns.command == "cache":
            return _cache(ns.action)
    except _UserError as e:
        print(f"pullback: {e}", file=sys.stderr)
        return 2
    ap.print_help(sys.stderr)
    return 2


def _size(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)  # pragma: no cover


def _cache(action: str) -> int:
    from pullback.backends import numba_cache

    if action == "info":
        i = numba_cache.info()
        where = i["location"] + ("" if os.path.isdir(i["location"]) else " (not created yet)")
        print(f"location: {where}")
        print(f"entries:  {i['entries']} compiled modules ({i['files']} files)")
        print(f"size:     {_size(i['bytes'])}")
        if i["problem"]:
            print(f"status:   refused: the directory {i['problem']}; pullback uses a private temporary cache "
                  "instead (fix it with `chmod 700`, or set PULLBACK_CACHE_DIR)")
        return 0
    r = numba_cache.clear()
    if r["refused"]:
        print(f"pullback: refusing to clear the cache: {r['refused']}", file=sys.stderr)
        return 1
    print(f"removed {r['entries']} entries ({r['removed']} files, {_size(r['bytes'])}) from {r['location']}")
    if r["failed"]:
        print(f"pullback: could not remove {len(r['failed'])} files, e.g. {r['failed'][0]}", file=sys.stderr)
        return 1
    return 0


def _load_user_file(path: str):
    """Run the user's file as a module; any problem is a one-line _UserError."""
    import importlib.util

    if not os.path.exists(path):
        raise _UserError(f"no such file: {path}")
    if not os.path.isfile(path):
        raise _UserError(f"{path} is not a file")
    try:
        with open(path, "rb") as fh:
            code = compile(fh.read(), path, "exec")
    except OSError as e:
        raise _UserError(f"cannot read {path}: {e.strerror}") from None
    except SyntaxError as e:
        raise _UserError(f"{path}:{e.lineno}: syntax error: {e.msg}") from None
    except ValueError as e:  # e.g. null bytes
        raise _UserError(f"{path}: not a Python source file ({e})") from None
    spec = importlib.util.spec_from_file_location("_pullback_user", path)
    if spec is None or spec.loader is None:
        raise _UserError(f"{path}: not a Python source file")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))   # its siblings import, as under `python FILE`
    try:
        exec(code, mod.__dict__)  # noqa: S102 - the user's own file, as `python FILE` would
    except (Exception, SystemExit) as e:  # noqa: BLE001 - any failure of the user's file
        frames = [fr for fr in traceback.extract_tb(e.__traceback__) if fr.filename == path]
        where = f"{path}:{frames[-1].lineno}" if frames else path
        raise _UserError(f"{where}: running the file raised {type(e).__name__}: {e}") from None
    return mod


def _eval_args(text: str):
    import numpy as np

    try:
        return eval("(" + text + "\n,)", {"np": np, "numpy": np})
    except SyntaxError as e:
        raise _UserError(f"--args {text!r} is not a valid Python expression ({e.msg})") from None
    except Exception as e:  # noqa: BLE001 - any error of the user's expression
        raise _UserError(f"--args {text!r} raised {type(e).__name__}: {e}") from None


def _source(ns) -> int:
    import pullback as pb
    from pullback.errors import PullbackError

    mod = _load_user_file(ns.file)
    fn = getattr(mod, ns.func, None)
    if fn is None:
        defined = sorted(k for k, v in vars(mod).items() if callable(v) and getattr(v, "__module__", None)
                         == "_pullback_user")
        raise _UserError(f"{ns.file} defines no function {ns.func!r}"
                         + (f" (it defines: {', '.join(defined)})" if defined else ""))
    if not callable(fn):
        raise _UserError(f"{ns.func!r} in {ns.file} is a {type(fn).__name__}, not a function")
    args = _eval_args(ns.args)
    try:
        if ns.ir:
            from pullback.api import derived_prog
            from pullback.frontend import stage
            from pullback.ir.printer import print_prog

            print(print_prog(derived_prog(stage(fn, args).prog, ns.mode)))
        else:
            print(pb.derivative_source(fn, *args, mode=ns.mode))
    except PullbackError as e:
        print(f"pullback: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
