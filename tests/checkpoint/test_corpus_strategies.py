"""Every program of tests/programs/ under the loop checkpointing strategies
agrees with "store" to rounding (issue 11's checkpoint-strategy axis of the
corpus). Fast: the interpreter under Bisection and Binomial(2), pysource under
one strategy per program (rotating); slow: numba and Budget."""
from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

import pullback as pb
from pullback.pytree import flatten, unflatten

_spec = importlib.util.spec_from_file_location(
    "_corpus_load_ck", pathlib.Path(__file__).parent.parent / "programs" / "_load.py")
_load = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_load)

PROGRAMS = _load.load_all()
IDS = [m.__name__.split(".")[-1] for m in PROGRAMS]
STRATEGIES = {"bisection": pb.Bisection(), "binomial2": pb.Binomial(snapshots=2),
              "budget": pb.Budget(bytes=1 << 16), "strip2": pb.StripMine(levels=2), "online": pb.Online(snapshots=3)}


def _bind(m):
    static = tuple(getattr(m, "STATIC_ARGNUMS", ()))
    args = m.args()
    dyn = tuple(a for i, a in enumerate(args) if i not in static)

    dyn_pos = [i for i in range(len(args)) if i not in static]

    def g(*d):
        full = list(args)
        for j, i in enumerate(dyn_pos):
            full[i] = d[j]
        return m.f(*full)

    argnums = tuple(i - sum(1 for s in static if s < i) for i in m.ARGNUMS)
    return g, dyn, argnums


def _check(m, cp, backend):
    f, args, argnums = _bind(m)
    out, vjp_fn = pb.vjp(f, *args, backend=backend, checkpoint=cp)
    ref_out, ref_fn = pb.vjp(f, *args, backend="interp")
    leaves, tree = flatten(out)
    ct = unflatten(tree, [np.ones_like(np.asarray(x, dtype=float)) if np.asarray(x).dtype.kind == "f"
                          else np.zeros_like(np.asarray(x, dtype=float)) for x in leaves])
    got, want = vjp_fn(ct), ref_fn(ct)
    rtol = max(getattr(m, "RTOL", 1e-9), 1e-9)
    atol = max(getattr(m, "ATOL", 1e-12), 1e-12)
    for i in argnums:
        for a, b in zip(flatten(got[i])[0], flatten(want[i])[0]):
            np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=rtol, atol=atol)


@pytest.mark.parametrize("strategy", ["bisection", "binomial2", "strip2"])
@pytest.mark.parametrize("m", PROGRAMS, ids=IDS)
def test_interp(m, strategy):
    _check(m, STRATEGIES[strategy], "interp")


@pytest.mark.parametrize("m", PROGRAMS, ids=IDS)
def test_pysource(m):
    names = sorted(STRATEGIES)
    _check(m, STRATEGIES[names[PROGRAMS.index(m) % len(names)]], "pysource")


# numba's array-expression rewrite asserts on this derivative ("'new_adj_2_1' not unique"):
# a located error that says to use pysource, checked here until numba or the emitter avoids it
NUMBA_ASSERTS = {("heat_stencil", "strip2")}


@pytest.mark.slow
@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
@pytest.mark.parametrize("m", PROGRAMS, ids=IDS)
def test_numba(m, strategy):
    if (m.__name__.split(".")[-1], strategy) in NUMBA_ASSERTS:
        with pytest.raises(pb.PullbackError, match="internal assertion of numba") as ei:
            _check(m, STRATEGIES[strategy], "numba")
        assert not isinstance(ei.value, pb.InternalError) and "backend='pysource'" in str(ei.value)
        return
    _check(m, STRATEGIES[strategy], "numba")
