"""scipy.special with traced arguments (issue 10): values equal SciPy's on interp
and pysource, derivatives pass check_grads (both modes, order 2), the edge
conventions of note [edge-numerics] hold (logsumexp with +-inf entries, xlogy
at x = 0), bad input gets located errors, gradients stay cheap, and the numba
backend computes the same numbers, also from its disk cache in a fresh process."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.special as sp

import pullback as pb
from pullback.backends import interp
from pullback.errors import PullbackError
from pullback.frontend import stage
from pullback.passes.vjp import vjp_prog
from pullback.pytree import flatten
from pullback.testing import check_grads

X = np.array([0.3, 1.7, 2.5, 0.9])
M = np.array([[0.2, -1.3, 2.1], [1.4, 0.5, -0.7]])
P = np.array([[0.15, 0.6, 0.35], [0.8, 0.05, 0.45]])   # in (0, 1)

CASES = {
    "expit": (lambda a: sp.expit(a), M),
    "logit": (lambda a: sp.logit(a), P),
    "erf": (lambda a: sp.erf(a), M),
    "erfc": (lambda a: sp.erfc(a), M),
    "erfinv": (lambda a: sp.erfinv(a), P),
    "ndtr": (lambda a: sp.ndtr(a), M),
    "log_ndtr": (lambda a: sp.log_ndtr(a * 4.0), M),
    "gammaln": (lambda a: sp.gammaln(a), X),
    "gammaln_neg": (lambda a: sp.gammaln(-a), X),
    "gamma": (lambda a: sp.gamma(a), X),
    "digamma": (lambda a: sp.digamma(a), X),
    "psi": (lambda a: sp.psi(a + 1.0), X),
    "polygamma1": (lambda a: sp.polygamma(1, a), X),
    "polygamma3": (lambda a: sp.polygamma(3, a + 1.0), X),
    "betaln": (lambda a: sp.betaln(a, a[::-1] + 0.5), X),
    "xlogy": (lambda a: sp.xlogy(a, a[::-1]), X),
    "xlogy_bcast": (lambda a: sp.xlogy(a, P), M),
    "xlog1py": (lambda a: sp.xlog1py(a, a[::-1]), X),
    "logsumexp": (lambda a: sp.logsumexp(a), M),
    "logsumexp_axis": (lambda a: sp.logsumexp(a, axis=1), M),
    "logsumexp_axis0_keep": (lambda a: sp.logsumexp(a, axis=0, keepdims=True), M),
    "logsumexp_tuple": (lambda a: sp.logsumexp(a, axis=(0, 1)), M),
    "logsumexp_b": (lambda a: sp.logsumexp(a, axis=-1, b=P), M),
    "logsumexp_b_traced": (lambda a: sp.logsumexp(a[0], b=a[1] + 2.0), M),
    "logsumexp_b_bcast": (lambda a: sp.logsumexp(a, axis=1, b=np.array([1.0, 0.5, 2.0])), M),
    "logsumexp_scalar": (lambda a: sp.logsumexp(a[0, 0]), M),
    "softmax": (lambda a: sp.softmax(a), M),
    "softmax_axis": (lambda a: sp.softmax(a, axis=1), M),
    "log_softmax": (lambda a: sp.log_softmax(a), M),
    "log_softmax_axis0": (lambda a: sp.log_softmax(a, axis=0), M),
}


@pytest.mark.parametrize("backend", ["interp", "pysource"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_scipy(name, backend):
    f, x = CASES[name]
    got, want = pb.jit(f, backend=backend)(x), f(x)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name", sorted(CASES))
def test_derivatives_order_2(name):
    f, x = CASES[name]
    check_grads(lambda a: np.sum(np.sin(f(a))), (x,), modes=("fwd", "rev"), order=2, backend="interp",
                rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", ["gammaln", "polygamma1", "logsumexp_b_traced", "xlogy", "erfinv"])
def test_derivatives_pysource(name):
    f, x = CASES[name]
    check_grads(lambda a: np.sum(np.sin(f(a))), (x,), modes=("fwd", "rev"), order=2, backend="pysource",
                rtol=1e-5, atol=1e-7)


def test_derivative_rules_are_the_textbook_ones():
    """Exact rules, not finite differences: digamma' = polygamma(1), erf' = 2/sqrt(pi) exp(-x^2), ..."""
    x = 1.3
    for f, d in ((sp.gammaln, sp.digamma(x)), (sp.digamma, sp.polygamma(1, x)),
                 (lambda t: sp.polygamma(2, t), sp.polygamma(3, x)), (sp.erf, 2 / np.sqrt(np.pi) * np.exp(-x * x)),
                 (sp.erfc, -2 / np.sqrt(np.pi) * np.exp(-x * x)), (sp.gamma, sp.gamma(x) * sp.digamma(x)),
                 (lambda t: sp.erfinv(t / 2), np.sqrt(np.pi) / 4 * np.exp(sp.erfinv(x / 2) ** 2)),
                 (sp.log_ndtr, np.exp(-x * x / 2) / np.sqrt(2 * np.pi) / sp.ndtr(x)),
                 (lambda t: sp.logit(t / 2), 0.5 / (x / 2 * (1 - x / 2)))):
        np.testing.assert_allclose(pb.grad(f)(x), d, rtol=1e-13)
        np.testing.assert_allclose(pb.jvp(f, (x,), (1.0,))[1], d, rtol=1e-13)
    # the third derivative of gammaln is polygamma(2): every order stays a primitive
    d3 = pb.grad(pb.grad(pb.grad(sp.gammaln)))(x)
    np.testing.assert_allclose(d3, sp.polygamma(2, x), rtol=1e-12)


def test_log_ndtr_tails():
    """log_ndtr and its derivative stay finite and accurate far in the left tail."""
    x = np.array([-40.0, -8.0, 0.0, 8.0])
    np.testing.assert_allclose(pb.jit(sp.log_ndtr)(x), sp.log_ndtr(x), rtol=1e-14)
    g = pb.grad(lambda a: np.sum(sp.log_ndtr(a)))(x)
    # d/dx log Phi(x) -> -x for x -> -inf (the Mills ratio), -> phi(x) for x -> +inf
    assert np.all(np.isfinite(g))
    np.testing.assert_allclose(g[0], 40.02498, rtol=1e-6)
    np.testing.assert_allclose(g[2], 2 * np.exp(0) / np.sqrt(2 * np.pi), rtol=1e-14)


@pytest.mark.parametrize("backend", ["interp", "pysource"])
def test_accurate_where_the_textbook_formula_is_not(backend):
    """expit in the left tail (1 / (1 + e^-x) and tanh forms give 0), logit near 1/2
    (log(x / (1 - x)) cancels), ndtr in the left tail: relative accuracy as SciPy's."""
    x = np.linspace(-700.0, 40.0, 741)
    p = np.concatenate([0.5 + np.logspace(-15, -2, 14), 0.5 - np.logspace(-15, -2, 14), [1e-300, 1 - 1e-16]])
    for f, a in ((sp.expit, x), (sp.logit, p), (sp.ndtr, np.linspace(-37.0, 9.0, 461))):
        np.testing.assert_allclose(pb.jit(f, backend=backend)(a), f(a), rtol=1e-14, atol=0)
    np.testing.assert_allclose(pb.grad(lambda t: np.sum(sp.expit(t)), backend=backend)(x), sp.expit(x) * sp.expit(-x),
                               rtol=1e-13, atol=0)


def test_expit_logit_edges():
    e = np.array([-np.inf, -1000.0, 0.0, 1000.0, np.inf])
    np.testing.assert_array_equal(pb.jit(sp.expit)(e), sp.expit(e))
    np.testing.assert_array_equal(pb.grad(lambda t: np.sum(sp.expit(t)))(e), [0.0, 0.0, 0.25, 0.0, 0.0])
    q = np.array([0.0, 1.0, 1.5, -0.5, np.nan])
    np.testing.assert_array_equal(pb.jit(sp.logit)(q), sp.logit(q))
    g = pb.grad(lambda t: np.sum(sp.logit(t)))(np.array([0.0, 1.0, 0.5]))
    np.testing.assert_array_equal(g, [np.inf, np.inf, 4.0])    # one-sided limits, not 0 * inf


# -- edge conventions (note [edge-numerics]) ----------------------------------------------

def _grads(f, x):
    """(reverse-mode gradient, gradient from one jvp per element), on interp and pysource."""
    out = []
    for be in ("interp", "pysource"):
        out.append(np.asarray(pb.grad(f, backend=be)(x)))
        fwd = np.empty(x.shape)
        for i in np.ndindex(x.shape):
            e = np.zeros(x.shape)
            e[i] = 1.0
            fwd[i] = pb.jvp(f, (x,), (e,), backend=be)[1]
        out.append(fwd)
    return out


def _exact(got, want):
    got = np.asarray(got, dtype=float)
    assert not np.any(np.isnan(got)), got
    np.testing.assert_allclose(got, np.broadcast_to(want, got.shape), rtol=1e-12, atol=0)


INF = np.inf


@pytest.mark.parametrize("f,x,value,grad", [
    # -inf entries get 0, the others the softmax
    (lambda a: sp.logsumexp(a), np.array([-INF, 0.0, np.log(3.0)]), np.log(4.0), [0.0, 0.25, 0.75]),
    (lambda a: sp.logsumexp(a, b=np.array([1.0, 2.0, 1.0])), np.array([-INF, 0.0, np.log(2.0)]), np.log(4.0),
     [0.0, 0.5, 0.5]),
    (lambda a: np.sum(sp.log_softmax(a)), np.array([-INF, 0.0, 0.0]), -INF, None),
    (lambda a: sp.softmax(a)[1], np.array([-INF, 0.0, 0.0]), 0.5, [0.0, 0.25, -0.25]),
    (lambda a: sp.log_softmax(a)[2], np.array([-INF, 0.0, 0.0]), np.log(0.5), [0.0, -0.5, 0.5]),
])
def test_logsumexp_family_with_neginf(f, x, value, grad):
    np.testing.assert_allclose(pb.jit(f)(x), value, rtol=1e-14)
    if grad is not None:
        for g in _grads(f, x):
            _exact(g, grad)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # SciPy's own inf - inf
def test_logsumexp_nonfinite_values_match_scipy():
    for x in (np.array([-INF, -INF]), np.array([INF, 0.0]), np.array([INF, -INF]), np.array([np.nan, 1.0])):
        for be in ("interp", "pysource"):
            got = pb.jit(lambda a: sp.logsumexp(a), backend=be)(x)
            np.testing.assert_array_equal(got, sp.logsumexp(x))
            np.testing.assert_array_equal(pb.jit(lambda a: sp.log_softmax(a), backend=be)(x), sp.log_softmax(x))


@pytest.mark.parametrize("fn", [sp.xlogy, sp.xlog1py])
def test_xlogy_values_at_zero(fn):
    x = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 2.0, 0.0])
    y = np.array([0.0, -1.0, -3.0, 2.0, INF, 0.0, np.nan])
    for be in ("interp", "pysource"):
        got = pb.jit(lambda a, b: fn(a, b), backend=be)(x, y)
        np.testing.assert_array_equal(got, fn(x, y))


@pytest.mark.parametrize("fn,logf", [(sp.xlogy, np.log), (sp.xlog1py, np.log1p)])
def test_xlogy_derivatives_at_zero(fn, logf):
    """At x = 0 with log(y) finite, d/dx = log(y) and d/dy = x/y = 0; where log(y)
    is not finite (y <= 0 or inf for xlogy), both are 0: finite, never NaN."""
    for y, dx in ((2.0, logf(2.0)), (0.5, logf(0.5)), (-1.0, 0.0), (-2.0, 0.0), (INF, 0.0)):
        f = lambda a, b: fn(a, b)
        gx, gy = pb.grad(f, argnums=(0, 1))(0.0, y)
        _exact([gx, gy], [dx, 0.0])
        _, t = pb.jvp(f, (0.0, y), (1.0, 1.0), backend="pysource")
        _exact(t, dx)
    # entropy-like use: -sum(xlogy(p, p)) at p with zeros: the zero entries get 0
    p = np.array([0.0, 0.25, 0.75])
    g = pb.grad(lambda q: -np.sum(sp.xlogy(q, q)))(p)
    _exact(g, [0.0, -(np.log(0.25) + 1), -(np.log(0.75) + 1)])
    h = pb.hessian(lambda q: -np.sum(sp.xlogy(q, q)))(p)
    _exact(h, np.diag([0.0, -4.0, -4.0 / 3.0]))


# -- errors --------------------------------------------------------------------------------

def _traced_order(x, n):
    return sp.polygamma(n, x)


def _sign(x):
    return sp.logsumexp(x, return_sign=True)


def _out(x):
    return sp.erf(x, out=np.empty(3))


@pytest.mark.parametrize("fn,args,msg", [
    (_traced_order, (np.ones(3), 2), "order n must be a static integer"),
    (_sign, (np.ones(3),), "return_sign=True is not supported"),
    (_out, (np.ones(3),), "arguments ['out'] are not supported"),
    (lambda x: sp.polygamma(-1, x), (np.ones(3),), "must be >= 0"),
])
def test_errors_are_located(fn, args, msg):
    with pytest.raises(PullbackError) as ei:
        pb.jit(fn)(*args)
    text = str(ei.value)
    assert msg in text
    line = fn.__code__.co_firstlineno + (fn.__name__ != "<lambda>")   # the line of the call
    assert f"test_scipy_special.py:{line}:" in text, text


# -- cheap gradients ------------------------------------------------------------------------

def _work(f, x):
    st = stage(f, (x,))
    leaves, _ = flatten((x,))
    p = interp.OpCount()
    interp.run(st.prog, *leaves, ops=p)
    vprog, name = vjp_prog(st.prog)
    g = interp.OpCount()
    interp.run(vprog, *leaves, 1.0, fname=name, ops=g)
    return p.work, g.work


@pytest.mark.parametrize("f", [
    lambda a: sp.logsumexp(a, axis=1).sum(),
    lambda a: np.sum(sp.softmax(a, axis=0) * a),
    lambda a: np.sum(sp.gammaln(a * a + 1.0) + sp.xlogy(a, a * a + 1.0) + sp.log_ndtr(a)),
])
def test_gradient_cost_is_a_constant_times_the_primal(f):
    r = []
    for n in (8, 256):
        x = np.linspace(-1.0, 1.0, 4 * n).reshape(n, 4)
        p, g = _work(f, x)
        r.append(g / p)
    assert r[1] <= 1.2 * r[0] and r[1] < 10, r


# -- laziness and numba ---------------------------------------------------------------------

def test_importing_pullback_does_not_import_scipy():
    src = os.path.join(os.path.dirname(__file__), "..", "..", "src")
    code = "import sys; import pullback; print('scipy' in sys.modules)"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PYTHONPATH=os.path.abspath(src)))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "False"


_CHILD = textwrap.dedent("""
    import sys, warnings
    sys.path.insert(0, {src!r})
    warnings.simplefilter("error")          # numba's "cannot cache" is a NumbaWarning
    import numpy as np
    import scipy.special as sp
    import pullback as pb
    from pullback.backends import numba_backend
    from pullback.pytree import flatten

    def f(x):
        y = (sp.erf(x) + sp.erfc(x) * sp.erfinv(x / 3) + sp.gammaln(x) + sp.gamma(x) + sp.digamma(x)
             + sp.polygamma(2, x) + sp.log_ndtr(x - 3) + sp.ndtr(x) + sp.expit(x) + sp.logit(x / 3)
             + sp.xlogy(x, x + 1) + sp.xlog1py(x, x) + sp.betaln(x, x[::-1]))
        return np.sum(y * x) + sp.logsumexp(x) + np.sum(sp.softmax(x) * x) + sp.log_softmax(x)[0]

    def s(x):
        return sp.erf(x[0]) * sp.polygamma(1, x[1]) + sp.erfinv(x[2] / 3) + sp.log_ndtr(x[0]) * sp.gammaln(x[1])

    def m(x):   # one special function per shape: no fusion, the map helpers run
        return sp.polygamma(1, x), sp.gamma(x[:2]), sp.log_ndtr(x[:1]), sp.erfinv(x.reshape(1, 3) / 3)

    x = np.array([0.3, 1.7, 2.5])
    hits = []
    out = []
    for fn, trs in ((f, (pb.jit, pb.grad)), (s, (pb.jit, pb.grad)), (m, (pb.jit,))):
        for tr in trs:
            got = np.concatenate([np.ravel(r) for r in flatten(tr(fn, backend="numba")(x))[0]])
            hits.append(numba_backend.last_cache_hit())
            ref = np.concatenate([np.ravel(r) for r in flatten(tr(fn, backend="interp")(x))[0]])
            np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-14)
            out.append(got)
    print(" ".join(str(h) for h in hits))
    print(repr(np.concatenate(out).tolist()))
""")


@pytest.mark.slow
def test_numba_bundle_and_cache_reload(tmp_path):
    """Every special primitive on numba (arrays, fused loops and scalars), its
    values and gradients equal to the interpreter's, then loaded from numba's
    disk cache in a fresh process: the C functions are bound by symbol name in
    each process, never baked in as an address (numba would refuse to cache)."""
    src = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "src"))
    child = tmp_path / "child.py"     # pullback stages functions from their source file
    child.write_text(_CHILD.format(src=src))
    env = dict(os.environ, PULLBACK_CACHE_DIR=str(tmp_path / "cache"))
    runs = []
    for _ in range(2):
        p = subprocess.run([sys.executable, str(child)], env=env, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr[-3000:]
        runs.append(p.stdout.split("\n"))
    assert runs[0][0] == "False False False False False", runs[0][0]
    assert runs[1][0] == "True True True True True", runs[1][0]
    assert runs[0][1] == runs[1][1]
