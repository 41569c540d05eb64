"""Shared check of the numba fusion tests: a module compiled with a fusion
feature agrees bit for bit with the module compiled without it, and with the
interpreter to rounding."""
import numpy as np

from pullback.backends import interp
from pullback.backends import numba_backend as nb
from pullback.backends import numba_fusion


def agrees_without(monkeypatch, prog, args, fn, feature: str):
    """`fn` (the compiled `prog`) against `prog` compiled with
    `numba_fusion.<feature>` answering False; returns that plain module."""
    got = fn(*args)
    monkeypatch.setattr(numba_fusion, feature, lambda *a: False)
    plain = nb.compile_prog(prog, parallel=False)
    got, want = (list(r) if isinstance(r, (tuple, list)) else [r] for r in (got, plain(*args)))
    ref = interp.run(prog, *args)
    assert len(got) == len(want) == len(ref)
    for g, w, r in zip(got, want, ref):
        np.testing.assert_array_equal(g, w)
        np.testing.assert_allclose(g, r, rtol=1e-13, atol=1e-13)
    return plain
