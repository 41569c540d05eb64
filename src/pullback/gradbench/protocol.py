"""The GradBench protocol: one JSON message per stdin line, one JSON reply per
message on stdout (flushed), each echoing the message's "id".

- start    -> {"id", "tool": "pullback"}
- define   -> {"id", "success", ["error"], "timings": [define]}
- evaluate -> {"id", "success", "output", "timings": ["warmup", then one "evaluate" per run]}
- anything else (analysis, ...) -> {"id"}

Evaluation converts the input to NumPy once (untimed), calls the function once
so that pullback stages and compiles it for the input's shapes (reported as a
separate "warmup" timing: a cold compile, or a load from the disk cache), then
times `min_runs` or more "evaluate" calls, until `min_seconds` have passed. No failure
ends the process: it becomes a reply with "success": false and "error".
"""
from __future__ import annotations

import json
import os
import sys
import time
import traceback

import numpy as np

from . import modules

TOOL = "pullback"


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


def _error_text(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}"
    if os.environ.get("PULLBACK_GRADBENCH_TRACEBACK"):
        text += "\n" + traceback.format_exc()
    return text


class Session:
    def __init__(self):
        self.defined = {}

    def handle(self, msg):
        """The reply (a dict) to one decoded message."""
        if not isinstance(msg, dict):
            return {"id": None, "error": f"message must be a JSON object, got {type(msg).__name__}"}
        mid = msg.get("id")
        kind = msg.get("kind")
        if kind is None:
            return {"id": mid, "error": "message has no \"kind\""}
        if kind == "start":
            return {"id": mid, "tool": TOOL}
        if kind == "define":
            return self.define(mid, msg)
        if kind == "evaluate":
            return self.evaluate(mid, msg)
        return {"id": mid}

    def define(self, mid, msg):
        t0 = time.perf_counter_ns()
        try:
            name = msg["module"]
            mod = modules.load(name)
            if hasattr(mod, "define"):
                mod.define()
            self.defined[name] = mod
        except Exception as e:  # noqa: BLE001 - every failure becomes a reply
            return {"id": mid, "success": False, "error": _error_text(e)}
        return {"id": mid, "success": True,
                "timings": [{"name": "define", "nanoseconds": time.perf_counter_ns() - t0}]}

    def evaluate(self, mid, msg):
        try:
            name = msg["module"]
            mod = self.defined.get(name) or modules.load(name)
            fname = msg["function"]
            if fname not in mod.FUNCTIONS:
                raise LookupError(f"module {name!r} has no function {fname!r} "
                               f"(available: {', '.join(mod.FUNCTIONS)})")
            fn = mod.FUNCTIONS[fname]
            inp = msg["input"]
            if not isinstance(inp, dict):
                raise TypeError("\"input\" must be a JSON object")
            min_runs = int(inp.get("min_runs", 1))
            min_seconds = float(inp.get("min_seconds", 0))
            args = mod.prepare(inp)
            t0 = time.perf_counter_ns()
            fn(*args)  # stages and compiles for these shapes: reported apart, as "warmup"
            timings = [{"name": "warmup", "nanoseconds": time.perf_counter_ns() - t0}]
            total = 0
            out = None
            while len(timings) - 1 < max(min_runs, 1) or total < min_seconds * 1e9:
                t0 = time.perf_counter_ns()
                out = fn(*args)
                dt = time.perf_counter_ns() - t0
                total += dt
                timings.append({"name": "evaluate", "nanoseconds": dt})
            output = to_json(out)
        except Exception as e:  # noqa: BLE001
            return {"id": mid, "success": False, "error": _error_text(e)}
        return {"id": mid, "success": True, "output": output, "timings": timings}


def serve(inp, outp):
    session = Session()
    for line in inp:
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except ValueError as e:
            reply = {"id": None, "error": f"malformed JSON: {e}"}
        else:
            try:
                reply = session.handle(msg)
            except Exception as e:  # noqa: BLE001 - belt and braces
                mid = msg.get("id") if isinstance(msg, dict) else None
                reply = {"id": mid, "success": False, "error": _error_text(e)}
        try:
            text = json.dumps(reply)
        except (TypeError, ValueError) as e:
            text = json.dumps({"id": reply.get("id"), "success": False,
                               "error": f"reply is not JSON-serialisable: {e}"})
        outp.write(text + "\n")
        outp.flush()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if "--backend" in argv:
        os.environ["PULLBACK_GRADBENCH_BACKEND"] = argv[argv.index("--backend") + 1]
    serve(sys.stdin, sys.stdout)
