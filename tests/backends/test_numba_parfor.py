"""The parallel launch of a map's chunks (`backends/numba_parfor.py`, note
[numba-parallel], "One level"): every chunk runs once with its bounds, a chunk
that raised is flagged while the others run, any number of further arguments
reaches the chunk, one thread gives the same result, nothing is compiled with
numba's parallel option, bad operands are refused at typing, and a caller
loaded from numba's cache in a new process (no pullback code run first) starts
the threading layer itself."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

numba = pytest.importorskip("numba")

from numba import njit  # noqa: E402

from pullback.backends import numba_parallel  # noqa: E402
from pullback.backends.numba_parfor import _pb_parallel_for  # noqa: E402

numba_parallel.ensure_threading_layer()


@njit
def _chunk(lo, hi, c, out, scale):
    for i in range(lo, hi):
        if out[i] < 0:
            raise IndexError("a negative entry")
        out[i] = c * 1000 + i * scale
    return 0


@njit
def _launch(out, scale, nc):
    failed = np.zeros(nc, dtype=np.int64)
    _pb_parallel_for(_chunk, out.shape[0], nc, failed, (out, scale))
    return failed


@njit
def _count(lo, hi, c, hits):
    for i in range(lo, hi):
        hits[i] += 1
    return 0


@njit
def _nothing(lo, hi, c):
    return 0


@njit
def _launch_counts(n, nc):
    hits = np.zeros(n, dtype=np.int64)
    failed = np.ones(nc, dtype=np.int64)
    _pb_parallel_for(_count, n, nc, failed, (hits,))
    _pb_parallel_for(_nothing, n, nc, failed, ())
    return hits, failed


def _expected(n, nc, scale):
    return np.array([next(c for c in range(nc) if c * n // nc <= i < (c + 1) * n // nc) * 1000 + i * scale
                     for i in range(n)], dtype=float)


@pytest.mark.parametrize("n,nc", [(10, 4), (3, 3), (100, 8), (7, 1)])
def test_every_chunk_runs_once_with_its_bounds(n, nc):
    out = np.zeros(n)
    failed = _launch(out, 2, nc)   # an int: cast to the chunk's int64
    assert failed.tolist() == [0] * nc
    np.testing.assert_array_equal(out, _expected(n, nc, 2))
    hits, failed = _launch_counts(n, nc)
    assert hits.tolist() == [1] * n and failed.tolist() == [0] * nc   # no argument beyond the bounds: ()


def test_a_raising_chunk_is_flagged_and_the_others_run():
    out = np.zeros(12)
    out[4] = -1.0                  # chunk 1 of 4 (entries 3..5) raises at its second entry
    failed = _launch(out, 1, 4)
    assert failed.tolist() == [0, 1, 0, 0]
    want = _expected(12, 4, 1)
    np.testing.assert_array_equal(out[:3], want[:3])
    np.testing.assert_array_equal(out[6:], want[6:])
    assert out[3] == want[3] and out[4] == -1.0


def test_one_thread_gives_the_same_result():
    out2, out1 = np.zeros(50), np.zeros(50)
    _launch(out2, 3, 8)
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        _launch(out1, 3, 8)
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(out1, out2)


def test_nothing_is_compiled_with_numbas_parallel_option():
    """The caller calls the chunk like any callee and the threading layer directly:
    no gufunc, no parfor (numba's prange lowering compiled five levels)."""
    _launch(np.zeros(4), 1, 2)
    (ir,) = _launch.inspect_llvm().values()
    assert "numba_parallel_for" in ir and "_pb_parallel_kernel." in ir
    assert "__numba_parfor_gufunc" not in ir and "do_scheduling" not in ir   # numba's prange lowering


def test_bad_operands_are_refused_at_typing():
    from numba.core.errors import TypingError

    @njit
    def not_a_dispatcher(out):
        failed = np.zeros(2, dtype=np.int64)
        _pb_parallel_for(len, 4, 2, failed, (out, 1.0))

    @njit
    def float_flags(out):
        failed = np.zeros(2)
        _pb_parallel_for(_chunk, 4, 2, failed, (out, 1.0))

    @njit
    def wrong_arguments(out):
        failed = np.zeros(2, dtype=np.int64)
        _pb_parallel_for(_chunk, 4, 2, failed, (out,))

    for f in (not_a_dispatcher, float_flags, wrong_arguments):
        with pytest.raises(TypingError):
            f(np.zeros(4))


_SCRIPT = """
import sys
import numpy as np
from numba import njit
from pullback.backends.numba_parfor import _pb_parallel_for

@njit(cache=True)
def chunk(lo, hi, c, out):
    for i in range(lo, hi):
        out[i] = c
    return 0

@njit(cache=True)
def launch(n):
    out = np.full(n, -1.0)
    failed = np.zeros(4, dtype=np.int64)
    _pb_parallel_for(chunk, n, 4, failed, (out,))
    return out, failed

out, failed = launch(8)
hits = sum(launch.stats.cache_hits.values())
print(hits, out.tolist(), failed.tolist())
"""


def test_a_cached_caller_starts_the_threading_layer_in_a_new_process(tmp_path):
    script = tmp_path / "launch.py"
    script.write_text(textwrap.dedent(_SCRIPT))
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    runs = [subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
            for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    first, second = (r.stdout.split(" ", 1) for r in runs)
    want = "[0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0] [0, 0, 0, 0]"
    assert first == ["0", want + "\n"] and second == ["1", want + "\n"]   # compiled, then loaded
