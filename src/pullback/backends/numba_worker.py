"""The compile worker of tiered compilation (note [tiered-compile]).

Run as ``python -m pullback.backends.numba_worker`` by `numba_tiered` only,
one per parent process. Reads jobs from stdin until it ends, each an 8-byte
little-endian length and a pickle of that length, written by the parent
through a pipe (never read from disk): ``{"attempts": [(src, h, cache, dname,
sig), ...]}``, numba's signature `sig` for entry `dname` of module `src`
(cache name ``pb_<h>``). Compiles the attempts in order into numba's disk
cache through `numba_backend.compile_entry` (the same verified cache steps
as a compile in the calling process: the manifest is written only after
numba succeeded) and stops at the first that compiles. Answers each job with
one JSON line on stdout: ``{"ok": i}`` (attempt i compiled) or ``{"ok":
null, "error": text}``, with ``"cpu"``: its CPU seconds so far. Exits 0 at the end of its input, or when the parent
no longer reads its answers.
"""
from __future__ import annotations

import json
import pickle
import sys
import time


def _job(payload: dict) -> dict:
    from .numba_backend import compile_entry

    errors = []
    for i, (src, h, cache, dname, sig) in enumerate(payload["attempts"]):
        try:
            compile_entry(src, h, cache, dname, sig)
        except Exception as e:  # noqa: BLE001 - reported; the parent compiles itself and raises
            errors.append(f"{type(e).__name__}: {str(e)[:2000]}")
            continue
        return {"ok": i}
    return {"ok": None, "error": "; ".join(errors)}


def main() -> int:
    inp = sys.stdin.buffer
    while True:
        head = inp.read(8)
        if len(head) < 8:
            return 0
        raw = inp.read(int.from_bytes(head, "little"))
        reply = _job(pickle.loads(raw))  # noqa: S301 - written by the parent pullback process through a pipe
        reply["cpu"] = time.process_time()
        try:
            print(json.dumps(reply), flush=True)
        except (BrokenPipeError, OSError):   # the parent exited: the cache is filled, nobody reads the reply
            return 0


if __name__ == "__main__":
    sys.exit(main())
