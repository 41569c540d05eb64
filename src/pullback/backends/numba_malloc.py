"""The process's malloc settings for numba code (note [numba-malloc]).

Contract: `tune_malloc() -> bool` makes glibc keep freed memory in its heap
instead of returning it to the OS (large temporaries of generated code are
then reused, not mapped and unmapped per call), once per process, before the
first pullback module runs; ``PULLBACK_MALLOPT=0`` opts out. Returns whether
the setting applied (False off Linux or without glibc). Process-wide: it also
affects other code in the process.
"""
from __future__ import annotations

import os
import sys

_MALLOC_TUNED = [False]


def tune_malloc() -> bool:
    """Keep freed memory in glibc's heap instead of returning it to the OS
    (note [numba-malloc]); `PULLBACK_MALLOPT=0` opts out. Returns whether it applied."""
    if _MALLOC_TUNED[0] or os.environ.get("PULLBACK_MALLOPT", "1") == "0" or not sys.platform.startswith("linux"):
        return _MALLOC_TUNED[0]
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        m_trim_threshold, m_mmap_threshold, m_mmap_max = -1, -3, -4
        ok = libc.mallopt(m_mmap_threshold, 32 * 1024 * 1024) == 1
        ok = libc.mallopt(m_trim_threshold, 1024 * 1024 * 1024) == 1 and ok
        # blocks over 32 MB (the threshold's maximum) come from the heap too; glibc
        # still maps memory when the heap cannot grow
        ok = libc.mallopt(m_mmap_max, 0) == 1 and ok
    except (OSError, AttributeError):
        ok = False
    _MALLOC_TUNED[0] = ok
    return ok
