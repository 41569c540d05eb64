"""The lazy post-processing of `backends/numba_postproc.py` (note [compile-time], "Lazy
lifetimes"): while pullback's modules compile, numba's `PostProcessor.run` leaves the
IR's lifetime analyses to their first reader; the LLVM IR numba emits is the same as
with numba's own method, the entry variables read later are the ones numba computes,
generators go through numba's method, and outside pullback's compiles numba's method
is back."""
import re

import numpy as np
import pytest

numba = pytest.importorskip("numba")

from numba.core import postproc  # noqa: E402

import pullback as pb  # noqa: E402
from pullback.backends import numba_postproc  # noqa: E402
from pullback.backends.numba_opt import numba_opt  # noqa: E402

pytestmark = pytest.mark.usefixtures("private_cache")   # conftest.py

_SRC = """
@numba.njit(cache=False)
def work(x, k):
    s = 0.0
    t = np.empty_like(x)
    for i in range(x.shape[0]):
        if x[i] > k:
            s += x[i] * 2.0
        else:
            while s > 10.0:
                s -= 3.0
        t[i] = s
    try_out = t[::2].copy()
    return s, try_out

@numba.njit(cache=False)
def gen(n):
    for i in range(n):
        yield i * i

@numba.njit(cache=False)
def use_gen(n):
    s = 0
    for v in gen(n):
        s += v
    return s
"""


def _fresh():
    ns = {"numba": numba, "np": np}
    exec(_SRC, ns)   # noqa: S102  (test source)
    return ns


def _llvm(disp):
    ir = disp.inspect_llvm(disp.signatures[0])
    ir = re.sub(r"_ZN[\w$.]+", "SYM", ir)           # mangled names carry per-process counters
    return re.sub(r"0x[0-9a-f]+|\d{7,}", "N", ir)


def test_same_llvm_as_numbas_own_post_processing():
    x = np.linspace(-3.0, 5.0, 17)
    plain, lazy = _fresh()["work"], _fresh()["work"]
    with numba_opt(3):   # both under pullback's settings; only the post-processing differs
        numba_postproc.uninstall()
        try:
            runs = numba_postproc.STATS["runs"]
            want = plain(x, 0.5)
            assert numba_postproc.STATS["runs"] == runs
        finally:
            numba_postproc.install()
        assert postproc.PostProcessor.run.__wrapped__ is not None
        got = lazy(x, 0.5)
    assert numba_postproc.STATS["runs"] > runs   # the lazy method ran
    assert got[0] == want[0] and np.array_equal(got[1], want[1])
    assert _llvm(lazy) == _llvm(plain)


def test_entry_variables_are_numbas():
    from numba.core import bytecode, interpreter

    def f(a, n):
        s = 0.0
        for i in range(n):
            if a[i] > 0:
                s += a[i]
        return s

    def ir_of():
        fid = bytecode.FunctionIdentity.from_function(f)
        return interpreter.Interpreter(fid).interpret(bytecode.ByteCode(fid))

    eager = ir_of()
    postproc.PostProcessor(eager).run()
    lazy = ir_of()
    numba_postproc.install()
    try:
        filled = numba_postproc.STATS["filled"]
        postproc.PostProcessor(lazy).run()
        assert isinstance(lazy.block_entry_vars, numba_postproc.LazyEntryVars)
        assert numba_postproc.STATS["filled"] == filled   # nothing computed yet
        assert "usedefs" not in vars(lazy.variable_lifetime)
    finally:
        numba_postproc.uninstall()
    for (ka, a), (kb, b) in zip(sorted(eager.blocks.items()), sorted(lazy.blocks.items())):
        assert ka == kb and eager.get_block_entry_vars(a) == lazy.get_block_entry_vars(b)
    assert numba_postproc.STATS["filled"] == filled + 1   # once, on the first read
    copied = lazy.copy()   # numba's copy reads the mapping through `in`
    assert all(copied.get_block_entry_vars(b) == lazy.get_block_entry_vars(a)
               for a, b in zip(lazy.blocks.values(), copied.blocks.values()))


def test_generators_use_numbas_method():
    with numba_opt(3):
        assert _fresh()["use_gen"](6) == sum(i * i for i in range(6))


def test_numbas_method_is_back_outside_pullbacks_compiles():
    f = pb.jit(lambda x: np.sum(np.sin(x) * x), backend="numba")
    assert f(np.arange(4.0)) == pytest.approx(np.sum(np.sin(np.arange(4.0)) * np.arange(4.0)))
    assert getattr(postproc.PostProcessor.run, "__wrapped__", None) is None
