"""Command line: print the derivative source of a function in a file.

    pullback FILE FUNC --args "np.ones(3), 2" [--mode rev|fwd] [--primal]
"""
from __future__ import annotations

import argparse
import importlib.util
import sys


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="pullback", description="Print readable derivative code of a Python function.")
    ap.add_argument("file", help="Python file that defines the function")
    ap.add_argument("func", help="name of the function")
    ap.add_argument("--args", required=True, help="example arguments, a Python expression (numpy is np)")
    ap.add_argument("--mode", choices=("rev", "fwd"), default="rev")
    ap.add_argument("--ir", action="store_true", help="print the IR instead of Python")
    ns = ap.parse_args(argv)

    import numpy as np

    import pullback as pb
    from pullback.errors import PullbackError

    spec = importlib.util.spec_from_file_location("_pullback_user", ns.file)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    fn = getattr(mod, ns.func, None)
    if fn is None:
        print(f"pullback: {ns.file} defines no function {ns.func!r}", file=sys.stderr)
        return 2
    args = eval("(" + ns.args + ",)", {"np": np, "numpy": np})
    try:
        if ns.ir:
            from pullback.frontend import stage
            from pullback.ir.printer import print_prog
            from pullback.passes.jvp import jvp_prog
            from pullback.passes.vjp import vjp_prog

            prog, _ = (vjp_prog if ns.mode == "rev" else jvp_prog)(stage(fn, args).prog)
            print(print_prog(prog))
        else:
            print(pb.derivative_source(fn, *args, mode=ns.mode))
    except PullbackError as e:
        print(f"pullback: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
