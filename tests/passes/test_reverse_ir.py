"""The derivative passes on hand-built IR, against finite differences."""
import numpy as np
import pytest

from pullback.backends import interp
from pullback.passes.jvp import jvp_prog
from pullback.passes.vjp import vjp_prog

from ._irprogs import inplace_recurrence, prefix_writes, recursive

BACKENDS = ["interp", "pysource"]


def _run(backend):
    if backend == "interp":
        return interp.run
    from pullback.backends.pysource import run

    return run


def fd(f, x, v, h=1e-6):
    return (f(x + h * v) - f(x - h * v)) / (2 * h)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("scale", [0.5, 1.5])
def test_loop_inplace_and_while(backend, scale):
    run = _run(backend)
    prog = inplace_recurrence(4)
    x = scale * np.array([1.0, 0.8, -0.9, 1.2])
    f = lambda y: run(prog, y, 4)[0]
    vp, vn = vjp_prog(prog)
    g = run(vp, x, 4, 1.0, fname=vn)[1]
    np.testing.assert_allclose(g, [fd(f, x, e) for e in np.eye(4)], rtol=1e-6, atol=1e-8)
    jp, jn = jvp_prog(prog)
    v = np.array([0.3, -0.1, 0.2, 0.7])
    np.testing.assert_allclose(run(jp, x, 4, v, fname=jn)[1], fd(f, x, v), rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_hessian_vector_forward_over_reverse(backend):
    run = _run(backend)
    prog = inplace_recurrence(4)
    x = np.array([1.5, 1.2, -1.3, 1.8])
    vp, vn = vjp_prog(prog)
    hp, hn = jvp_prog(vp, vn)
    v = np.array([0.3, -0.2, 0.5, 0.1])
    hv = run(hp, x, 4, 1.0, v, 0.0, fname=hn)[3]
    grad = lambda y: run(vp, y, 4, 1.0, fname=vn)[1]
    np.testing.assert_allclose(hv, fd(grad, x, v, 1e-5), rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("backend", BACKENDS)
def test_recursion_and_reverse_over_reverse(backend):
    run = _run(backend)
    prog = recursive()
    vp, vn = vjp_prog(prog)
    f = lambda y: run(prog, y, 5)[0]
    g = lambda y: run(vp, y, 5, 1.0, fname=vn)[1]
    assert abs(g(0.7) - fd(f, 0.7, 1.0)) < 1e-6
    vp2, vn2 = vjp_prog(vp, vn)
    d2 = run(vp2, 0.7, 5, 1.0, 0.0, 1.0, fname=vn2)[2]
    assert abs(d2 - fd(g, 0.7, 1.0, 1e-5)) < 1e-6


def test_stores_are_empty_after_reverse_pass():
    prog = inplace_recurrence(5)
    vp, vn = vjp_prog(prog)
    m = interp.Meter()
    interp.run(vp, np.linspace(1, 2, 5), 5, 1.0, fname=vn, meter=m)
    assert m.peak > 0 and m.live == 0


@pytest.mark.parametrize("n", [8, 16, 32])
def test_undo_log_stores_elements_written_not_arrays(n):
    """An in-place loop that writes n elements stores O(n) bytes, not O(n^2)."""
    vp, vn = vjp_prog(prefix_writes(n, square_prev=True))
    m = interp.Meter()
    interp.run(vp, np.linspace(0.1, 1, n), 1.0, fname=vn, meter=m)
    # one overwritten f64 element per iteration (the index is the loop index, recomputed)
    assert m.peak == n * 8


def test_undo_log_nothing_reads_is_dropped():
    """a[i-1] enters linearly: the return sweep never reads the old values, so the
    restored array and its undo log are dead (dce of loop-carried values)."""
    vp, vn = vjp_prog(prefix_writes(8))
    m = interp.Meter()
    interp.run(vp, np.linspace(0.1, 1, 8), 1.0, fname=vn, meter=m)
    assert m.peak == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_reverse_over_reverse_through_loops(backend):
    """vjp of a vjp whose forward loop pushes and whose reverse loop pops stores."""
    run = _run(backend)
    prog = inplace_recurrence(4)
    x = np.array([1.5, 1.2, -1.3, 1.8])
    v = np.array([0.3, -0.2, 0.5, 0.1])
    vp, vn = vjp_prog(prog)
    vp2, vn2 = vjp_prog(vp, vn)
    interp.Meter()
    hv = run(vp2, x, 4, 1.0, 0.0, v, fname=vn2)[2]
    grad = lambda y: run(vp, y, 4, 1.0, fname=vn)[1]
    np.testing.assert_allclose(hv, fd(grad, x, v, 1e-5), rtol=1e-5, atol=1e-8)
