"""The GradBench protocol: one JSON message per stdin line, one JSON reply per
line on stdout (flushed), each echoing the message's "id".

- start    -> {"id", "tool": "pullback"}
- define   -> {"id", "success", ["error"], "timings": [define]}
- evaluate -> {"id", "success", "output", "timings": ["warmup", ["compile"], then one "evaluate" per run]}
- analysis -> {"id"}
- anything else -> {"id", "error"}

Evaluation checks the input against the module's schema and converts it to
NumPy once (`modules/<name>.py`, `prepare`, untimed; see `schema.py`), calls the
function twice so that pullback stages and compiles it for the input's shapes
and the second call sets up the warm path (reported together as a separate
"warmup" timing: a cold compile, or a load from the disk cache, note
[call-overhead]; for a large module, the first result computed by pysource
while numba compiles in the background, whose remaining time and the first two
calls of numba's code, which load it and set up the warm path, are reported as
"compile", note [tiered-compile]), then times `min_runs` or more "evaluate" calls, until
`min_seconds` have passed (at most `Limits.max_runs` calls).

Contract: the server survives any input. Every line read gets exactly one reply
line, which is strict JSON (no NaN or Infinity; `wire.dumps`). A line that is
not a well-formed message (empty, not UTF-8, not JSON, too long, too deep, not
an object, no usable "id", a NaN/Infinity constant, a duplicate key, a wrong
field) gets an error reply carrying its id when one can be read, and the server
goes on with the next line. A failing define or evaluate, including any
exception raised while compiling or running the function, and a result that is
not finite, is a reply with "success": false and "error". End of input, even
in the middle of a line, ends the server with exit status 0, as does a client
that stops reading. See Note [gradbench-hardening] in docs/design.md.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
import traceback

import numpy as np

from ..errors import PullbackError
from . import modules
from .schema import Float, InputError, Int, Limits, Schema, json_type, show
from .wire import TooLong, WireError, clean_text, dumps, leading_id, parse, read_lines

TOOL = "pullback"
MAX_ERROR_CHARS = 20_000


def to_json(v):
    """NumPy values (and containers of them) as plain JSON values."""
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, dict):
        return {str(k): to_json(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [to_json(x) for x in v]
    return v


def check_finite(v, path="output"):
    """Raise a PullbackError naming the first NaN or infinity in a result."""
    if isinstance(v, dict):
        for k, x in v.items():
            check_finite(x, f"{path}.{k}")
    elif isinstance(v, (list, tuple)):
        for i, x in enumerate(v):
            check_finite(x, f"{path}[{i}]")
    elif isinstance(v, (np.ndarray, np.generic)) and v.dtype.kind in "fc":
        a = np.asarray(v)
        if not np.isfinite(a).all():
            bad = tuple(int(i) for i in np.argwhere(~np.isfinite(a))[0])
            raise PullbackError(f"the result is not finite: {path}{''.join(f'[{i}]' for i in bad)} = {a[bad]}",
                                hint="the input is outside the function's domain (for kmeans: a cluster "
                                     "with no points), or the computation overflowed")
    elif isinstance(v, float) and not math.isfinite(v):
        raise PullbackError(f"the result is not finite: {path} = {v}",
                            hint="the input is outside the function's domain, or the computation overflowed")


def error_text(e: BaseException) -> str:
    """`Type: message` (with the traceback if $PULLBACK_GRADBENCH_TRACEBACK is set), bounded, strict-JSON safe."""
    try:
        text = f"{type(e).__name__}: {e}"
    except Exception:  # noqa: BLE001 - an exception whose str() fails
        text = type(e).__name__
    if os.environ.get("PULLBACK_GRADBENCH_TRACEBACK"):
        text += "\n" + traceback.format_exc()
    if len(text) > MAX_ERROR_CHARS:
        text = text[:MAX_ERROR_CHARS] + " ... (truncated)"
    return clean_text(text)


def usable_id(v) -> bool:
    """Whether an "id" can be echoed in a strict-JSON reply: an integer below 2**63
    in magnitude, a finite number, or a string of at most 256 characters."""
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return -(1 << 63) <= v < (1 << 63)
    if isinstance(v, float):
        return math.isfinite(v)
    if isinstance(v, str):
        return len(v) <= 256 and clean_text(v) == v
    return False


def finish(reply: dict) -> dict:
    """`reply`, or an error reply with its id if it is not strict JSON."""
    try:
        dumps(reply)
        return reply
    except (TypeError, ValueError) as e:
        out = {"id": reply.get("id") if usable_id(reply.get("id")) else None,
               "error": error_text(PullbackError(f"internal error: the reply is not strict JSON ({e})"))}
        if "success" in reply:
            out["success"] = False
        return out


class Session:
    """One client's state: the modules it has defined. `handle` and `handle_line`
    never raise (except KeyboardInterrupt and the like) and return strict JSON."""

    def __init__(self, limits: Limits | None = None):
        self.limits = limits or Limits()
        self.defined = {}
        self.timing = Schema("timing", [
            Int("min_runs", min=0, max=self.limits.max_runs, default=1),
            Float("min_seconds", min=0.0, max=self.limits.max_seconds, default=0.0),
        ])

    # --- lines ----------------------------------------------------------------------------------

    def handle_line(self, line) -> str:
        """The reply line (without newline) to one input line (bytes, str or TooLong)."""
        if isinstance(line, TooLong):
            mid = leading_id(line.head)
            return dumps({"id": mid, "error": f"InputError: the line is {line.size} bytes long, above the "
                                              f"server's limit of {self.limits.max_line_bytes} bytes (set "
                                              f"PULLBACK_GRADBENCH_MAX_LINE_BYTES to raise it); skipped"})
        try:
            parsed = parse(line, self.limits.max_depth)
        except WireError as e:
            mid = _id_of(e.value)
            if mid is None:
                mid = leading_id(e.head)
            return dumps(finish({"id": mid, "error": f"InputError: {clean_text(str(e))}"}))
        except Exception as e:  # noqa: BLE001 - a bug in parsing must not end the server
            return dumps(finish({"id": None, "error": error_text(e)}))
        return dumps(self.handle(parsed.value, parsed.problems, parsed.duplicate_id))

    # --- messages -------------------------------------------------------------------------------

    def handle(self, msg, problems=(), duplicate_id=False) -> dict:
        """The reply to one decoded message; `problems` found while parsing it make it an error."""
        mid = None
        try:
            if not isinstance(msg, dict):
                raise InputError(f"a message must be a JSON object, got {json_type(msg)} {show(msg)}")
            if "id" not in msg:
                raise InputError("the message has no \"id\"")
            if duplicate_id:
                raise InputError("the message repeats the key \"id\"")
            if not usable_id(msg["id"]):
                raise InputError(f"\"id\" must be an integer, a finite number or a string of at most 256 "
                                 f"characters, got {json_type(msg['id'])} {show(msg['id'])}")
            mid = msg["id"]
            if problems:
                raise InputError("; ".join(problems), hint="send strict JSON")
            kind = msg.get("kind")
            if kind is None:
                raise InputError("the message has no \"kind\"")
            if not isinstance(kind, str):
                raise InputError(f"\"kind\" must be a string, got {json_type(kind)} {show(kind)}")
            if kind == "start":
                return {"id": mid, "tool": TOOL}
            if kind == "define":
                return finish(self.define(mid, msg))
            if kind == "evaluate":
                return finish(self.evaluate(mid, msg))
            if kind == "analysis":
                return {"id": mid}
            raise InputError(f"unknown message kind {show(kind)}",
                             hint="this tool understands start, define, evaluate and analysis")
        except Exception as e:  # noqa: BLE001 - every failure becomes a reply
            reply = {"id": mid, "error": error_text(e)}
            if isinstance(msg, dict) and msg.get("kind") in ("define", "evaluate"):
                reply["success"] = False
            return finish(reply)

    def _module_name(self, msg):
        name = msg.get("module")
        if name is None:
            raise InputError("the message has no \"module\"")
        if not isinstance(name, str):
            raise InputError(f"\"module\" must be a string, got {json_type(name)} {show(name)}")
        return name

    def define(self, mid, msg):
        t0 = time.perf_counter_ns()
        try:
            name = self._module_name(msg)
            mod = modules.load(name)
            if hasattr(mod, "define"):
                mod.define()
            self.defined[name] = mod
        except Exception as e:  # noqa: BLE001 - every failure becomes a reply
            return {"id": mid, "success": False, "error": error_text(e)}
        return {"id": mid, "success": True,
                "timings": [{"name": "define", "nanoseconds": time.perf_counter_ns() - t0}]}

    def evaluate(self, mid, msg):
        try:
            name = self._module_name(msg)
            if name not in self.defined:
                modules.load(name)  # an unknown module: raises, saying which exist
                raise InputError(f"module {name!r} has not been defined",
                                 hint=f"send {{\"kind\": \"define\", \"module\": \"{name}\"}} first")
            mod = self.defined[name]
            fname = msg.get("function")
            if not isinstance(fname, str):
                raise InputError("the message has no \"function\"" if fname is None else
                                 f"\"function\" must be a string, got {json_type(fname)} {show(fname)}")
            if fname not in mod.FUNCTIONS:
                raise InputError(f"module {name!r} has no function {show(fname)}",
                                 hint=f"available: {', '.join(mod.FUNCTIONS)}")
            fn = mod.FUNCTIONS[fname]
            if "input" not in msg:
                raise InputError("the message has no \"input\"")
            inp = msg["input"]
            # an input that is not an object (hello's is a number) has no timing fields: the defaults
            timing = self.timing.validate(inp if isinstance(inp, dict) else {}, self.limits)
            args = mod.prepare(inp, self.limits)
            output, timings = self._run(fn, args, timing["min_runs"], timing["min_seconds"])
        except Exception as e:  # noqa: BLE001 - compile and run errors included
            return {"id": mid, "success": False, "error": error_text(e)}
        return {"id": mid, "success": True, "output": output, "timings": timings}

    def _run(self, fn, args, min_runs, min_seconds):
        from ..backends.numba_tiered import pending, wait_for_compiles

        t0 = time.perf_counter_ns()
        fn(*args)  # stages and compiles for these shapes: reported apart, as "warmup"
        tiered = pending()
        if not tiered:   # the second call makes the direct caller and first runs its code: warmup too
            fn(*args)
        timings = [{"name": "warmup", "nanoseconds": time.perf_counter_ns() - t0}]
        if tiered:  # the warmup ran pysource while numba compiles (note [tiered-compile]): wait, report apart
            t0 = time.perf_counter_ns()
            wait_for_compiles()
            fn(*args)   # the first call of numba's code loads it into this process: part of the compile
            fn(*args)   # ... and the second makes its direct caller
            timings.append({"name": "compile", "nanoseconds": time.perf_counter_ns() - t0})
        total = runs = 0
        out = None
        while (runs < max(min_runs, 1) or total < min_seconds * 1e9) and runs < self.limits.max_runs:
            t0 = time.perf_counter_ns()
            out = fn(*args)
            dt = time.perf_counter_ns() - t0
            total += dt
            runs += 1
            timings.append({"name": "evaluate", "nanoseconds": dt})
        check_finite(out)
        return to_json(out), timings


def _id_of(value):
    if isinstance(value, dict) and usable_id(value.get("id")):
        return value["id"]
    return None


def serve(inp, outp, limits: Limits | None = None) -> None:
    """Answer each line of the binary stream `inp` on the binary stream `outp`,
    until `inp` ends or `outp` is closed by its reader."""
    session = Session(limits or Limits.from_env())
    try:
        for line in read_lines(inp, session.limits.max_line_bytes):
            try:
                text = session.handle_line(line)
            except Exception as e:  # noqa: BLE001 - belt and braces: handle_line does not raise
                text = dumps({"id": None, "error": error_text(e)})
            outp.write(text.encode("ascii") + b"\n")
            outp.flush()
    except BrokenPipeError:  # the client stopped reading: nothing more to do
        _silence_stdout()
    except OSError as e:  # stdin failed: nothing more can be read
        print(f"pullback.gradbench: stopping: {e}", file=sys.stderr)


def _silence_stdout():
    """Point fd 1 at /dev/null so that Python's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m pullback.gradbench",
                                     description="pullback as a GradBench tool (JSON lines on stdin/stdout)")
    parser.add_argument("--backend", help="the pullback backend: numba (default), pysource or interp")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.backend:
        os.environ["PULLBACK_GRADBENCH_BACKEND"] = args.backend
    # single-core timings, as GradBench's other tools (issue 12): no parallel maps unless asked for
    os.environ.setdefault("PULLBACK_PARALLEL", "0")
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must not corrupt the reply stream
    try:
        serve(sys.stdin.buffer, out)
    except KeyboardInterrupt:
        sys.exit(130)
