"""`numba_remat` (note [remat]): a cheap elementwise value that one fused loop
stores and a later one reads is recomputed in the later loop instead. Results
are bit for bit those of the module without the pass; each case that must
keep its stored value keeps it."""
import numpy as np
import pytest

pytest.importorskip("numba")

import pullback as pb
from pullback.backends import interp
from pullback.backends import numba_backend as nb
from pullback.backends import numba_remat
from pullback.ir.core import Prim
from pullback.ir.traverse import iter_lets

N = 5000   # above numba_remat.MIN_ELEMENTS


def mask_scaled(x):            # the mask is stored by the loop summing it, read by the last
    m = np.max(x)
    mask = np.where(x == m, 1.0, 0.0)
    c = np.sum(mask)
    return mask * (1.0 / c) * x


def mask_returned(x):          # ... and returned: it is stored anyway
    m = np.max(x)
    mask = np.where(x == m, 1.0, 0.0)
    c = np.sum(mask)
    return mask * (1.0 / c) * x, mask


def exp_scaled(x):             # exp is not cheap to recompute
    e = np.exp(x - np.max(x))
    return e * (1.0 / np.sum(e)) * x


def leaf_accumulated(x):       # reading y in the last loop would stop w being added into y in place
    y = np.sin(x) * 2.0
    m = np.max(y)
    mask = np.where(y == m, 1.0, 0.0)
    c = np.sum(mask)
    w = y + x * c
    return mask * (1.0 / np.sum(w)) * x, w


def mask_accumulated(x):       # the later loop adds into the stored mask in place
    m = np.max(x)
    mask = np.where(x == m, 1.0, 0.0)
    c = np.sum(mask)
    return mask + x * (1.0 / c)


def logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


CASES = [   # (function, size, recomputed)
    (mask_scaled, N, True),
    (mask_scaled, 1000, False),     # a small group keeps its values
    (mask_returned, N, False),
    (exp_scaled, N, False),
    (mask_accumulated, N, False),
    (leaf_accumulated, N, False),
    (pb.grad(logsumexp), N, True),  # the max's mask in the gradient's last loop
]


def _eqs(prog):
    return sum(1 for f in prog.funcs for st in iter_lets(f.body) if isinstance(st.exp, Prim) and st.exp.op == "eq")


@pytest.mark.parametrize("f, n, recomputed", CASES, ids=[f"{getattr(c[0], '__name__', 'lse_grad')}-{c[1]}"
                                                         for c in CASES])
def test_recomputed_only_where_cheaper(monkeypatch, f, n, recomputed):
    x = np.random.default_rng(2).standard_normal(n)
    x[n // 3] = x[2 * n // 3] = np.pi / 2   # two maxima (of sin too)
    prog = pb.jit(f).staged(x).prog
    lowered = nb.lower(prog, False)
    monkeypatch.setattr(numba_remat, "remat", lambda p: p)
    plain_lowered = nb.lower(prog, False)
    assert (_eqs(lowered) > _eqs(plain_lowered)) == recomputed
    plain = nb.compile_prog(prog, parallel=False)
    monkeypatch.undo()
    fn = nb.compile_prog(prog, parallel=False)
    assert (fn.source.count(f"_pb_empty({n}") < plain.source.count(f"_pb_empty({n}")) == recomputed
    got, want, ref = (list(r) if isinstance(r, (list, tuple)) else [r]
                      for r in (fn(x), plain(x), interp.run(prog, x)))
    for g, w, r in zip(got, want, ref):
        assert np.asarray(g).tobytes() == np.asarray(w).tobytes()
        np.testing.assert_allclose(g, r, rtol=1e-13, atol=1e-15)


def test_limits():
    assert numba_remat.MIN_ELEMENTS <= N and "exp" not in numba_remat.CHEAP and "div" not in numba_remat.CHEAP
