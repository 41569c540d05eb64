"""Python's cyclic garbage collector paused while pullback stages, transforms and
compiles (note [compile-time], "The collector").

Contract:
- `collector_paused() -> bool`: the policy, False where ``$PULLBACK_COMPILE_GC``
  is 1 (the collector keeps running), else True. Read at each outermost pause.
- `paused()`: a context. The outermost holder in the process turns the
  collector off when the policy says so and it was on; the exit that leaves
  no holder turns it on again (exceptions included), and only if that pause
  turned it off, so a user's own `gc.disable()` survives. Holders nest and may
  be on many threads at once (one counter under a lock): the collector stays
  off until the last of them exits. Reference counting still frees acyclic
  garbage; the cyclic garbage of a compile waits for the first collection
  after it.
"""
from __future__ import annotations

import gc
import os
import threading
from contextlib import contextmanager

_LOCK = threading.Lock()
_STATE = {"depth": 0, "resume": False}


def collector_paused() -> bool:
    """Whether pullback's compiles pause the collector (module docstring)."""
    return os.environ.get("PULLBACK_COMPILE_GC", "0").strip() != "1"


def pause() -> None:
    """Enter a pause (`paused` is the context form)."""
    with _LOCK:
        if _STATE["depth"] == 0:
            _STATE["resume"] = collector_paused() and gc.isenabled()
            if _STATE["resume"]:
                gc.disable()
        _STATE["depth"] += 1


def resume() -> None:
    """Leave a pause: the last holder's exit turns the collector on again if its pause turned it off."""
    with _LOCK:
        _STATE["depth"] -= 1
        if _STATE["depth"] == 0 and _STATE["resume"]:
            _STATE["resume"] = False
            gc.enable()


@contextmanager
def paused():
    """The collector paused while held (module docstring)."""
    pause()
    try:
        yield
    finally:
        resume()
