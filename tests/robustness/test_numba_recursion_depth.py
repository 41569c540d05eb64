"""Issue 8: a recursion too deep for the native stack killed the process on the
numba backend (``deep(0.3, 10**6)`` segfaulted). Numba code now checks the
stack before every call along a call-graph cycle and raises RecursionDepthError
located at the user's recursive call, on the main thread and on threads with
small stacks (note [numba-recursion-depth]). The crash cases run in child
processes, so a crash fails the test instead of killing pytest."""
import json
import os
import pathlib
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

pytest.importorskip("numba")

import pullback as pb  # noqa: E402
from pullback.backends import checks, numba_backend, numba_stack  # noqa: E402
from pullback.backends.numba_dialect import cycle_edges  # noqa: E402
from pullback.errors import RecursionDepthError  # noqa: E402
from pullback.passes.inline import inline_small  # noqa: E402

_SRC = str(pathlib.Path(__file__).resolve().parents[2] / "src")

# the child process: several checks in one process (numba compiles take seconds)
_CHILD = textwrap.dedent("""
    import json, sys, threading
    import numpy as np
    sys.path.insert(0, {src!r})
    import pullback as pb
    from pullback.backends import numba_backend
    from pullback.errors import RecursionDepthError

    def deep(x, d):
        if d == 0:
            return x
        return np.sin(deep(x, d - 1))  # RECURSIVE CALL

    def is_even(x, n):
        if n == 0:
            return x
        return is_odd(x * 0.5, n - 1)  # MUTUAL CALL

    def is_odd(x, n):
        if n == 0:
            return -x
        return is_even(np.cos(x), n - 1)  # MUTUAL CALL

    def grad_deep(x, d):
        return pb.grad(deep)(x, d)

    out = {{}}

    def attempt(key, fn, *args):
        try:
            out[key] = float(fn(*args))
        except RecursionDepthError as e:
            out[key] = {{"error": "RecursionDepthError", "text": str(e)}}
        except BaseException as e:
            out[key] = {{"error": type(e).__name__, "text": str(e)[:2000]}}

    J = pb.jit(deep, backend="numba")
    G = pb.grad(deep, backend="numba")
    attempt("jit_1000", J, 0.3, 1000)
    out["jit_hit"] = numba_backend.last_cache_hit()
    attempt("grad_1000", G, 0.3, 1000)
    out["grad_hit"] = numba_backend.last_cache_hit()
    attempt("grad_100", G, 0.3, 100)
    attempt("jit_deep", J, 0.3, 10 ** 6)
    attempt("grad_deep", G, 0.3, 10 ** 6)
    attempt("jit_1000_again", J, 0.3, 1000)     # the process goes on normally after the error
    attempt("mutual_deep", pb.jit(is_even, backend="numba"), 0.3, 10 ** 6)
    GG = pb.grad(grad_deep, backend="numba")
    attempt("gg_20", GG, 0.3, 20)
    attempt("gg_deep", GG, 0.3, 10 ** 6)

    threading.stack_size(512 * 1024)
    def in_thread():
        attempt("thread_jit_300", J, 0.3, 300)
        attempt("thread_grad_300", G, 0.3, 300)
        attempt("thread_jit_deep", J, 0.3, 10 ** 6)
        attempt("thread_grad_deep", G, 0.3, 10 ** 6)
    t = threading.Thread(target=in_thread)
    t.start()
    t.join()

    attempt("ref_jit_1000", pb.jit(deep, backend="interp"), 0.3, 1000)
    attempt("ref_grad_100", pb.grad(deep, backend="interp"), 0.3, 100)
    attempt("ref_gg_20", pb.grad(grad_deep, backend="interp"), 0.3, 20)
    print(json.dumps(out))
""")


def _chain(x, d):
    """deep(x, d) and its derivative by the chain rule, in plain Python."""
    v, dv = x, 1.0
    for _ in range(d):
        v, dv = np.sin(v), np.cos(v) * dv
    return v, dv


def _stack_8mib():
    """The child's main-thread stack: 8 MiB (Linux's usual default), so depth 10**6
    is too deep even where the tests run under `ulimit -s unlimited`."""
    import resource

    hard = resource.getrlimit(resource.RLIMIT_STACK)[1]
    want = 8 << 20 if hard == resource.RLIM_INFINITY else min(8 << 20, hard)
    resource.setrlimit(resource.RLIMIT_STACK, (want, hard))


def _line(src, marker):
    return next(i for i, t in enumerate(src.splitlines(), 1) if marker in t)


@pytest.mark.skipif(sys.platform == "win32", reason="sets the child's stack rlimit (POSIX)")
def test_deep_recursion_raises_located_errors_in_processes_sharing_a_cache(tmp_path):
    src = _CHILD.format(src=_SRC)
    child = tmp_path / "deep_child.py"  # pullback stages functions from their source file
    child.write_text(src)
    env = dict(os.environ, PULLBACK_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("NUMBA_CACHE_DIR", None)
    where = f"{child}:{_line(src, 'RECURSIVE CALL')}:"
    where_mutual = tuple(f"{child}:{n}:" for n, t in enumerate(src.splitlines(), 1) if "MUTUAL CALL" in t)
    runs = []
    for _ in range(2):
        p = subprocess.run([sys.executable, str(child)], env=env, capture_output=True, text=True, timeout=300,
                           preexec_fn=_stack_8mib)
        assert p.returncode == 0, (p.returncode, p.stderr[-3000:])  # a crash is 139 or -11
        r = json.loads(p.stdout.strip().splitlines()[-1])
        runs.append(r)
        v, dv = _chain(0.3, 1000)
        assert r["jit_1000"] == pytest.approx(r["ref_jit_1000"], rel=1e-13)
        assert r["jit_1000"] == pytest.approx(v, rel=1e-12) and r["jit_1000_again"] == r["jit_1000"]
        assert r["grad_1000"] == pytest.approx(dv, rel=1e-10)
        assert r["grad_100"] == pytest.approx(r["ref_grad_100"], rel=1e-13)
        assert r["gg_20"] == pytest.approx(r["ref_gg_20"], rel=1e-12)
        assert r["thread_jit_300"] == pytest.approx(_chain(0.3, 300)[0], rel=1e-12)
        assert r["thread_grad_300"] == pytest.approx(_chain(0.3, 300)[1], rel=1e-10)
        for key in ("jit_deep", "grad_deep", "gg_deep", "thread_jit_deep", "thread_grad_deep", "mutual_deep"):
            e = r[key]
            assert isinstance(e, dict) and e["error"] == "RecursionDepthError", (key, e)
            assert e["text"].startswith(where_mutual if key == "mutual_deep" else where), (key, e["text"])
            assert "Traceback" not in e["text"]
            assert "stack" in e["text"] and "hint:" in e["text"], e["text"]
    assert runs[0]["jit_hit"] is False and runs[0]["grad_hit"] is False
    assert runs[1]["jit_hit"] is True  # loaded from numba's disk cache
    # split-mode gradients (self-recursive functions returning tuples and taking
    # stores) skip numba's disk cache: numba crashes loading them (note [numba-cache-safety])
    assert runs[1]["grad_hit"] is False


# -- in process: what is printed, and the pieces of the check --------------------------

def _deep(x, d):
    if d == 0:
        return x
    return np.sin(_deep(x, d - 1))


def _helper(x):
    return x * 2.0


def _uses_helper(x, d):
    if d == 0:
        return _helper(x)
    return _helper(_uses_helper(x, d - 1))


def _even(x, n):
    if n == 0:
        return x
    return _odd(x * 0.5, n - 1)


def _odd(x, n):
    if n == 0:
        return -x
    return _even(x + 1.0, n - 1)


def _flat(x):
    return np.sin(_helper(x)) + _helper(x * x)


def test_cycle_edges_are_the_calls_that_recurse():
    prog = inline_small(pb.jit(_uses_helper).staged(0.3, 3).prog)
    edges = cycle_edges(prog)
    assert len(edges) == 1 and all(f == g and "uses_helper" in f for f, g in edges), edges
    mutual = cycle_edges(inline_small(pb.jit(_even).staged(0.3, 3).prog))
    assert {frozenset(e) for e in mutual} == {frozenset({f, g}) for f, g in mutual} and len(mutual) == 2
    assert all(f != g for f, g in mutual)
    assert numba_backend._mutual_recursion(inline_small(pb.jit(_even).staged(0.3, 3).prog)) == \
        sorted({f for f, _ in mutual})
    assert cycle_edges(pb.jit(_flat).staged(0.3).prog) == set()


def test_checks_are_printed_before_recursive_calls_only():
    prog = pb.jit(_uses_helper).staged(0.3, 3).prog
    src, args = numba_backend._emit(prog)
    lines = src.splitlines()
    calls = [i for i, t in enumerate(lines) if "v_uses_helper(" in t and "def " not in t]
    assert calls and all(lines[i - 1].strip() == "raise RecursionError(0)" for i in calls)
    assert lines[calls[0] - 2].strip() == "if _pb_sp() < _pb_lo:"
    assert src.count("_pb_sp() <") == len(calls) == 1   # not before the helper's calls
    assert all("_pb_lo)" in lines[i] for i in calls)
    assert len(args.sites) == 1 and args.sites[0].kind == "recursion"
    assert args.sites[0].loc.line == _uses_helper.__code__.co_firstlineno + 3
    assert args.limit is numba_stack.stack_limit and len(args.trailing()) == len(args) + 1
    # no recursion: nothing printed, no hidden parameter, nothing passed
    flat_src, flat_args = numba_backend._emit(pb.jit(_flat).staged(0.3).prog)
    assert "_pb_" not in flat_src and flat_args.limit is None and flat_args.trailing() is flat_args


def test_translate_recursion_site():
    sites = checks.Sites()
    loc = pb.jit(_deep).staged(0.3, 2).prog.funcs[0].body.stmts[0].loc
    k = sites.add(checks.Site("recursion", loc))
    err = checks.translate(RecursionError(k), sites)
    assert isinstance(err, RecursionDepthError) and err.loc == loc and err.hint
    # Python's own RecursionError, or a number that is no recursion site, is not translated
    assert checks.translate(RecursionError("maximum recursion depth exceeded"), sites) is None
    assert checks.translate(RecursionError(k + 1), sites) is None
    sites.add(checks.Site("div", loc, op="mod"))
    assert checks.translate(RecursionError(k + 1), sites) is None


def test_stack_limit_lies_inside_each_threads_stack():
    got = {}

    def probe(tag):
        sp = numba_stack._sp_now()
        got[tag] = (numba_stack.thread_stack(), numba_stack.stack_limit(), sp)

    probe("main")
    old = threading.stack_size(512 * 1024)
    try:
        t = threading.Thread(target=probe, args=("small",))
        t.start()
        t.join()
    finally:
        threading.stack_size(old)
    for tag, ((lo, hi), limit, sp) in got.items():
        assert lo < limit < sp < hi, tag
        lo = max(lo, hi - numba_stack.MAX_STACK)   # `ulimit -s unlimited` reports terabytes
        assert limit - lo == numba_stack.margin(hi - lo)
    (lo, hi), _, _ = got["small"]
    assert hi - lo >= 512 * 1024 and got["small"][1] != got["main"][1]
    assert numba_stack.margin(512 * 1024) == 128 * 1024
    assert numba_stack.margin(8 << 20) == 1 << 20
    assert numba_stack.margin(128 * 1024) == 64 * 1024
