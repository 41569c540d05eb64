"""Strip-mined fused sums (notes [vecmath], [strip-sums]): a fused full sum over a
row of at least 2 * _STRIP elements that computes a vecmath function, or only
inline float arithmetic, runs in blocks through a buffer, and gives the same
bits as the lanes form. A libm call keeps the lanes form."""
import numpy as np
import pytest

pytest.importorskip("numba")

import pullback as pb  # noqa: E402
from pullback.backends import numba_backend as nb  # noqa: E402
from pullback.backends import numba_sum_loops  # noqa: E402


def lse(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def rows(X):
    return np.sum(np.tanh(X) * X)


def plain(x):
    return np.sum(x * x - 3.0 * x)


def moments(x):                       # llsq-like: a full sum per step, added into out[j]
    out = np.zeros(6)
    p = np.ones_like(x)
    for j in range(6):
        q = p * x
        out[j] = np.sum(p * (x + 1.0))
        p = q
    return out


@pytest.mark.parametrize("f, shape", [(lse, (1000 + 3,)), (pb.grad(lse), (1000 + 3,)), (rows, (3, 700)),
                                      (plain, (1000 + 3,)), (moments, (1000 + 3,))])
def test_strip_mined_sum_is_bitwise_the_lanes_form(monkeypatch, f, shape):
    x = np.random.default_rng(0).standard_normal(shape)
    prog = pb.jit(f).staged(x).prog
    monkeypatch.setattr(numba_sum_loops, "unrolled", lambda g, gate: False)   # the strip form itself
    strip = nb.compile_prog(prog, parallel=False)
    assert "_buf[" in strip.source
    monkeypatch.setattr(numba_sum_loops, "strip_worth", lambda g: False)
    lanes = nb.compile_prog(prog, parallel=False)
    assert "_buf[" not in lanes.source
    np.testing.assert_array_equal(strip(x)[0], lanes(x)[0])


def with_libm(x):
    return np.sum(np.sin(x) * x)


def test_libm_sum_keeps_the_lanes_form():
    x = np.random.default_rng(0).standard_normal(1003)
    fn = nb.compile_prog(pb.jit(with_libm).staged(x).prog, parallel=False)
    assert "_buf[" not in fn.source and "_lanes" in fn.source, fn.source
    np.testing.assert_allclose(fn(x)[0], with_libm(x), rtol=1e-13)


def test_stored_full_sum_uses_lanes():
    """A 1-d group's sum stored right after its loop (`out[j] = sum(...)`) is a full
    sum: it keeps its partial sums instead of one local (a chain of dependent
    additions), and agrees with NumPy."""
    x = np.random.default_rng(2).standard_normal(100)
    fn = nb.compile_prog(pb.jit(moments).staged(x).prog, parallel=False)
    assert "_acc = " not in fn.source and "_l7 +=" in fn.source, fn.source   # lanes in locals
    np.testing.assert_allclose(fn(x)[0], moments(x), rtol=1e-13)


def test_strip_blocks_are_counted_in_a_shape_generic_module(tmp_path, monkeypatch):
    """The strip loop counts its blocks from 0 (`for ibk in range(count)`), never
    steps to a bound (`range(0, nb, 256)`): once a second size makes that bound a
    run-time value (note [shape-generic]), a stepped range kept numba's
    negative-index wraparound in the block loop, and lse's gradient ran 3.9x slower
    than the specialised module (`benchmarks/warm_start.py --speed`)."""
    import re

    from pullback.backends import numba_generic

    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("PULLBACK_SHAPE_GENERIC", raising=False)
    monkeypatch.setattr(numba_generic, "_REG", {})
    monkeypatch.setattr(numba_generic, "_GENERIC", {})
    srcs = []
    for n in (20000 + 3, 50000 + 7):
        x = np.random.default_rng(0).standard_normal(n)
        srcs.append(nb.emit_prog(nb.lower(pb.grad(lse)._jit.staged(x).prog, False, fname=None), parallel=False))
    assert numba_generic.plan(srcs[0]) is None
    gsrc, args = numba_generic.plan(srcs[1])
    blocks = re.findall(r"for (ibk\w*) in range\((_pbs\[\d+\]) // (\d+)\):", gsrc)
    assert len(blocks) >= 2, gsrc                    # the exp-sum's blocks, the count of maxima's lanes
    assert not re.search(r"range\(\s*\w+,\s*_pbs\[\d+\],", gsrc), gsrc
    assert 50000 - 50000 % numba_sum_loops.STRIP in args


@pytest.mark.parametrize("f, shape", [(plain, (1000 + 3,)), (rows, (3, 700)), (plain, (40,)), (moments, (1000 + 5,)),
                                      (plain, (517,))])
def test_unrolled_lanes_are_bitwise_the_lanes_form(monkeypatch, f, shape):
    """Note [strip-sums], "Unrolled lanes": a group of inline arithmetic prints its body once
    per lane, each adding into its lane's local; the additions are the lanes form's."""
    x = np.random.default_rng(1).standard_normal(shape) * 10.0 ** np.random.default_rng(2).uniform(-6, 6, shape)
    prog = pb.jit(f).staged(x).prog
    unrolled = nb.compile_prog(prog, parallel=False)
    if f is not rows:   # tanh: a vecmath function, never unrolled
        assert "_l7 +=" in unrolled.source, unrolled.source
    monkeypatch.setattr(numba_sum_loops, "unrolled", lambda g, gate: False)
    monkeypatch.setattr(numba_sum_loops, "strip_worth", lambda g: False)
    lanes = nb.compile_prog(prog, parallel=False)
    assert "_l7 +=" not in lanes.source and "_buf[" not in lanes.source
    for a, b in zip(unrolled(x), lanes(x)):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
