"""pb.checkpoint(f): JAX's checkpoint/remat. Its call is reversed by
re-executing `f` (never taped), also on a path to a recursion; forward mode
differentiates its body as usual."""
from __future__ import annotations

import numpy as np
import pytest

import pullback as pb


def _chain(x, d):
    if d == 0:
        return x
    return np.sin(chain_ck(x, d - 1)) * 1.01


chain_ck = pb.checkpoint(_chain)


def chain(x, d):
    if d == 0:
        return x
    return np.sin(chain(x, d - 1)) * 1.01


def inner(v):
    for _ in range(12):
        v = np.sin(v) * 1.1
    return v


inner_ck = pb.checkpoint(inner)


def uses_inner(v):
    return np.sum(inner_ck(v) * v)


@pytest.mark.parametrize("backend", ["interp", "pysource"])
def test_recursion_through_checkpoint_is_recomputed_not_taped(backend):
    d = np.int64(40)
    np.testing.assert_allclose(pb.grad(chain_ck, backend=backend)(0.3, d), pb.grad(chain, backend="interp")(0.3, d),
                               rtol=1e-13)
    taped = pb.memory_report(chain, 0.3, d)
    remat = pb.memory_report(chain_ck, 0.3, d)
    assert taped.peak_bytes >= 8 * 40 and remat.peak_bytes < taped.peak_bytes
    assert remat.recompute_factor > 5 * taped.recompute_factor  # recomputation, as asked (O(d^2))


@pytest.mark.parametrize("backend", ["interp", "pysource"])
def test_checkpointed_helper_all_modes(backend):
    v = np.linspace(0.1, 0.6, 5)
    ref = pb.grad(lambda u: np.sum(inner(u) * u), backend="interp")(v)
    np.testing.assert_allclose(pb.grad(uses_inner, backend=backend)(v), ref, rtol=1e-13)
    t = np.linspace(1.0, 2.0, 5)
    np.testing.assert_allclose(pb.jvp(uses_inner, (v,), (t,), backend=backend)[1], ref @ t, rtol=1e-12)
    np.testing.assert_allclose(pb.hessian(uses_inner, backend=backend)(v),
                               pb.hessian(lambda u: np.sum(inner(u) * u), backend="interp")(v), rtol=1e-10)


def test_outside_staging_it_is_the_function():
    v = np.linspace(0.1, 0.6, 5)
    np.testing.assert_array_equal(inner_ck(v), inner(v))
    assert "loop1" not in pb.derivative_source(uses_inner, v)  # no checkpointing strategy involved
