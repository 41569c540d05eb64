"""Every program in tests/programs/ over backend x mode x order.

Primal: `pb.jit` on each backend equals plain Python (or the program's
PYTHON_REF / EXPECTED). Derivatives: `pullback.testing.check_grads` in forward
and reverse mode (random-direction identities and central finite differences),
to second order where the program says ORDER = 2.
"""
from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

import pullback as pb
from pullback.pytree import flatten
from pullback.testing import check_grads

_spec = importlib.util.spec_from_file_location("_corpus_load", pathlib.Path(__file__).parent / "programs" / "_load.py")
_load = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_load)

PROGRAMS = _load.load_all()
IDS = [m.__name__.split(".")[-1] for m in PROGRAMS]
BACKENDS = ["interp", "pysource"]


def bind_static(f, args, static):
    """Close over static (Python-level) arguments; returns (g, dynamic args)."""
    if not static:
        return f, tuple(args)
    dyn = tuple(a for i, a in enumerate(args) if i not in static)
    sv = {i: args[i] for i in static}
    n = len(args)

    def g(*d):
        full = []
        j = 0
        for i in range(n):
            if i in sv:
                full.append(sv[i])
            else:
                full.append(d[j])
                j += 1
        return f(*full)

    return g, dyn


def _close(a, b, rtol, atol):
    la, _ = flatten(a)
    lb, _ = flatten(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        np.testing.assert_allclose(np.asarray(x, dtype=float), np.asarray(y, dtype=float), rtol=rtol, atol=atol)


def _tols(m):
    return getattr(m, "RTOL", 1e-5), getattr(m, "ATOL", 1e-7)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("m", PROGRAMS, ids=IDS)
def test_primal(m, backend):
    args = m.args()
    static = tuple(getattr(m, "STATIC_ARGNUMS", ()))
    ref_fn = getattr(m, "PYTHON_REF", m.f)
    ref = ref_fn(*args)
    out = pb.jit(m.f, backend=backend, static_argnums=static)(*args)
    rtol, atol = _tols(m)
    _close(out, ref, max(rtol, 1e-9), atol)
    exp = getattr(m, "EXPECTED", None)
    if exp is not None:
        _close(out, exp(args) if callable(exp) else exp, max(rtol, 1e-7), max(atol, 1e-9))


@pytest.mark.parametrize("mode", ["rev", "fwd"])
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("m", PROGRAMS, ids=IDS)
def test_derivatives(m, backend, mode):
    static = tuple(getattr(m, "STATIC_ARGNUMS", ()))
    f, args = bind_static(m.f, m.args(), static)
    argnums = tuple(i - sum(1 for s in static if s < i) for i in m.ARGNUMS)
    rtol, atol = _tols(m)
    order = getattr(m, "ORDER", 1)
    if backend == "pysource" and order == 2:
        order = 1  # second order on pysource runs in test_second_order_pysource (slow)
    check_grads(f, args, modes=(mode,), order=order, argnums=argnums, backend=backend,
                rtol=max(rtol, 1e-5), atol=max(atol, 1e-7), rng=np.random.default_rng(0))


@pytest.mark.slow
@pytest.mark.parametrize("m", [m for m in PROGRAMS if getattr(m, "ORDER", 1) == 2],
                         ids=[i for m, i in zip(PROGRAMS, IDS) if getattr(m, "ORDER", 1) == 2])
def test_second_order_pysource(m):
    static = tuple(getattr(m, "STATIC_ARGNUMS", ()))
    f, args = bind_static(m.f, m.args(), static)
    argnums = tuple(i - sum(1 for s in static if s < i) for i in m.ARGNUMS)
    rtol, atol = _tols(m)
    check_grads(f, args, modes=("fwd", "rev"), order=2, argnums=argnums, backend="pysource",
                rtol=max(rtol, 1e-5), atol=max(atol, 1e-7), rng=np.random.default_rng(0))


def _single_array_arg(m):
    static = tuple(getattr(m, "STATIC_ARGNUMS", ()))
    if len(m.ARGNUMS) != 1 or static:
        return False
    args = m.args()
    a = args[m.ARGNUMS[0]]
    if not (isinstance(a, float) or (isinstance(a, np.ndarray) and a.dtype == np.float64)):
        return False
    out = getattr(m, "PYTHON_REF", m.f)(*args)  # jacobian needs one float output
    return isinstance(out, (float, np.floating, np.ndarray)) and np.asarray(out).dtype == np.float64


def _fd_jacobian(f, args, n, eps=1e-6):
    x = np.asarray(args[n], dtype=float)
    cols = []
    for j in range(x.size):
        e = np.zeros(x.size)
        e[j] = eps
        hi, lo = list(args), list(args)
        hi[n] = (x.reshape(-1) + e).reshape(x.shape) if x.shape else float(x + eps)
        lo[n] = (x.reshape(-1) - e).reshape(x.shape) if x.shape else float(x - eps)
        cols.append((np.asarray(f(*hi), dtype=float) - np.asarray(f(*lo), dtype=float)).reshape(-1) / (2 * eps))
    out_shape = np.shape(f(*args))
    return np.stack(cols, axis=-1).reshape(out_shape + x.shape)


JH = [m for m in PROGRAMS if _single_array_arg(m)]


@pytest.mark.parametrize("m", JH, ids=[m.__name__.split(".")[-1] for m in JH])
def test_jacobian_and_hessian(m):
    """pb.jacobian (both modes) and, for ORDER = 2 programs, pb.hessian against finite differences."""
    args = m.args()
    n = m.ARGNUMS[0]
    rtol, atol = max(_tols(m)[0], 1e-5), max(_tols(m)[1], 1e-6)
    ref_f = getattr(m, "PYTHON_REF", m.f)
    want = _fd_jacobian(ref_f, args, n)
    for mode in ("rev", "fwd"):
        np.testing.assert_allclose(pb.jacobian(m.f, argnums=n, mode=mode, backend="interp")(*args), want,
                                   rtol=max(rtol, 1e-4), atol=max(atol, 1e-5))
    if getattr(m, "ORDER", 1) == 2:
        g = pb.grad(m.f, argnums=n, backend="interp")
        np.testing.assert_allclose(pb.hessian(m.f, argnums=n, backend="interp")(*args), _fd_jacobian(g, args, n, 1e-5),
                                   rtol=max(rtol, 1e-4), atol=max(atol, 1e-5))


# corpus programs run on numba in the fast suite: one or more of each construct
# (while loops with run-time stores, if, recursion, in-place updates, tuples and
# pytrees, broadcasting, float32, integer indexing); the rest are marked slow
NUMBA_FAST = {"broadcasting", "det_gauss_inplace", "det_minors_recursive", "particle_sim_while",
              "float32_mlp", "pytree_tuple_list", "elif_chain", "newton_sqrt", "prefix_sum_inplace",
              "gather_int_index", "reductions_axis", "break_continue"}


@pytest.mark.parametrize("m", [pytest.param(m, marks=() if i in NUMBA_FAST else pytest.mark.slow)
                               for m, i in zip(PROGRAMS, IDS)], ids=IDS)
def test_numba_agrees_with_interp(m):
    """The compiled backend on the whole corpus: primal, and the reverse-mode
    derivative (gradient, or jacobian for one array output)."""
    static = tuple(getattr(m, "STATIC_ARGNUMS", ()))
    args = m.args()
    rtol, atol = max(_tols(m)[0], 1e-6), max(_tols(m)[1], 1e-9)
    _close(pb.jit(m.f, backend="numba", static_argnums=static)(*args),
           pb.jit(m.f, backend="interp", static_argnums=static)(*args), rtol, atol)
    f, dyn = bind_static(m.f, args, static)
    argnums = tuple(i - sum(1 for s in static if s < i) for i in m.ARGNUMS)
    out = pb.jit(m.f, backend="interp", static_argnums=static)(*args)
    if isinstance(out, float) or (isinstance(out, np.ndarray) and out.shape == ()):
        _close(pb.grad(f, argnums=argnums, backend="numba")(*dyn),
               pb.grad(f, argnums=argnums, backend="interp")(*dyn), rtol, atol)
    elif isinstance(out, np.ndarray) and len(argnums) == 1:
        _close(pb.jacobian(f, argnums=argnums[0], backend="numba")(*dyn),
               pb.jacobian(f, argnums=argnums[0], backend="interp")(*dyn), rtol, atol)


# every call strategy on the recursive programs (note [split-calls]): the
# default "store" (split mode) is checked above against finite differences;
# Joint() must give the same derivatives, first and second order
RECURSIVE = [m for m in PROGRAMS if "recursion" in getattr(m, "TAGS", ())]
STRATEGIES = {"store": "store", "joint": pb.Joint()}


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("m", RECURSIVE, ids=[m.__name__.split(".")[-1] for m in RECURSIVE])
def test_call_strategies(m, backend, strategy):
    cp = STRATEGIES[strategy]
    static = tuple(getattr(m, "STATIC_ARGNUMS", ()))
    f, args = bind_static(m.f, m.args(), static)
    argnums = tuple(i - sum(1 for s in static if s < i) for i in m.ARGNUMS)
    rtol, atol = max(_tols(m)[0], 1e-9), max(_tols(m)[1], 1e-12)
    out, vjp_fn = pb.vjp(f, *args, backend=backend, checkpoint=cp)
    ref_out, ref_fn = pb.vjp(f, *args, backend="interp", checkpoint=pb.Joint())
    _close(out, ref_out, rtol, atol)
    leaves, tree = flatten(out)
    from pullback.pytree import unflatten

    ct = unflatten(tree, [np.ones_like(np.asarray(x, dtype=float)) if np.asarray(x).dtype.kind == "f"
                          else np.zeros_like(np.asarray(x, dtype=float)) for x in leaves])
    got, want = vjp_fn(ct), ref_fn(ct)
    _close([got[i] for i in argnums], [want[i] for i in argnums], rtol, atol)
    n = argnums[0]
    if (getattr(m, "ORDER", 1) == 2 and backend == "interp" and isinstance(args[n], (float, np.ndarray))
            and np.size(args[n]) <= 32):
        _close(pb.hessian(f, argnums=n, backend=backend, checkpoint=cp)(*args),
               pb.hessian(f, argnums=n, backend="interp", checkpoint=pb.Joint())(*args), 1e-7, 1e-9)

        def g(*a):
            return pb.grad(f, argnums=n, checkpoint=cp)(*a)

        # reverse over reverse: the gradient of one component of the gradient
        def g0(*a):
            return np.sum(g(*a))

        _close(pb.grad(g0, argnums=n, backend=backend, checkpoint=cp)(*args),
               pb.hessian(f, argnums=n, backend="interp")(*args).sum(axis=tuple(range(np.ndim(args[n])))),
               1e-6, 1e-8)
