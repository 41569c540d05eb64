"""Random programs (tests/_progen.py) under every loop checkpointing strategy:
the gradient equals "store"'s to rounding (issue 11 §5)."""
from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, currently_in_test_context, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from _progen import HypothesisSource, ProgGen, random_program  # noqa: E402

import pullback as pb  # noqa: E402

STRATEGIES = (pb.Bisection(), pb.Binomial(snapshots=2), pb.StripMine(levels=2), pb.Online(snapshots=1))


def _check(gp, seed, strategies=STRATEGIES):
    import tempfile

    rng = np.random.default_rng(seed)
    args = gp.make_args(rng)
    f = gp.load(tempfile.mkdtemp(prefix="pb_ck_"))
    with np.errstate(all="ignore"):
        val = f(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    usable = bool(np.isfinite(val) and abs(val) < 1e6)
    if currently_in_test_context():
        assume(usable)
    elif not usable:
        pytest.skip("this fixed program's value is not usable")
    argnums = tuple(range(len(args)))
    ref = pb.grad(f, argnums=argnums, backend="interp")(*args)
    for cp in strategies:
        got = pb.grad(f, argnums=argnums, backend="interp", checkpoint=cp)(*args)
        for a, b in zip(got, ref):
            a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
            assert np.allclose(a, b, rtol=1e-9, atol=1e-12 * (1 + np.max(np.abs(b)))), \
                f"{cp}: {a!r} != {b!r}\n{gp.source}"


@pytest.mark.parametrize("seed", range(6))
def test_fixed_random_programs_under_strategies(seed):
    _check(random_program(seed), seed)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.data(), st.integers(0, 2**31 - 1))
def test_random_programs_under_strategies(data, seed):
    gp = ProgGen(HypothesisSource(data.draw), max_stmts=5, max_depth=2).program()
    _check(gp, seed)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.data(), st.integers(0, 2**31 - 1))
def test_random_programs_under_strategies_many(data, seed):
    gp = ProgGen(HypothesisSource(data.draw), max_stmts=8, max_depth=3).program()
    _check(gp, seed)
