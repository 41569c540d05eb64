"""Jacobians with a few basis vectors are staged one row at a time
(`transforms.jacobian`, note [small-jacobians]), so the basis is static and
folds; and a small-array helper with too many call sites to copy everywhere is
still inlined where it is called inside a loop (`inline.inline_scalar_calls`).
GradBench's particle and saddle take such an inner `pb.jacfwd` of a function of
a point in the plane at every step of a while loop."""
import numpy as np
import pytest

import pullback as pb
from pullback.backends import numba_backend as nb
from pullback.ir.core import Apply, Loop, Prim
from pullback.ir.traverse import iter_lets, prune_prog
from pullback.transforms import UNROLL_JACOBIAN


def field(x):                      # R^n -> R^2
    return np.array([np.sum(np.sin(x) * x), np.prod(np.cos(x[:2])) + x[-1] ** 3])


def ref_jacobian(x):
    j = np.zeros((2, x.size))
    j[0] = np.cos(x) * x + np.sin(x)
    j[1, :2] = -np.sin(x[:2]) * (np.cos(x[1::-1]) if x.size > 1 else 1.0)
    j[1, -1] += 3 * x[-1] ** 2
    return j


def loops(prog):
    return sum(isinstance(st.exp, Loop) for f in prog.funcs for st in iter_lets(f.body))


@pytest.mark.parametrize("mode", ["fwd", "rev"])
@pytest.mark.parametrize("n", [1, 3, 5])
def test_few_basis_vectors_are_unrolled(mode, n):
    assert 3 <= UNROLL_JACOBIAN < 5
    x = np.linspace(0.3, 1.7, n)
    f = pb.jit(pb.jacobian(field, mode=mode), backend="interp")
    rows = n if mode == "fwd" else 2
    assert loops(f.staged(x).prog) == (rows > UNROLL_JACOBIAN)
    np.testing.assert_allclose(f(x), ref_jacobian(x), rtol=1e-13, atol=1e-14)
    for be in ("pysource", "numba"):
        np.testing.assert_allclose(pb.jit(pb.jacobian(field, mode=mode), backend=be)(x), f(x),
                                   rtol=1e-13, atol=1e-14)


def test_matrix_argument_and_output_shapes():
    A = np.arange(4.0).reshape(2, 2) / 3.0          # 4 basis vectors: unrolled

    def g(A):
        return A @ A + np.sin(A)

    for mode in ("fwd", "rev"):
        J = pb.jit(pb.jacobian(g, mode=mode), backend="numba")(A)
        want = pb.jit(pb.jacobian(g, mode=mode), backend="interp")(A)
        assert J.shape == (2, 2, 2, 2)
        np.testing.assert_allclose(J, want, rtol=1e-13, atol=1e-14)


def step(x, w):                    # more statements than inline_small's 12; small arrays in and out
    d = x - np.array([1.0, w])
    e = x - np.array([-1.0, 0.5 * w])
    r = np.sqrt(np.sum(d * d))
    q = np.sqrt(np.sum(e * e))
    return x + 0.01 * d / (r * r * r) - 0.02 * np.tanh(e) / (q * q + 1.0)


def many_sites_and_a_loop(w):
    x = np.array([0.5, 0.25])
    for _ in [None] * 60:          # a Python list: unrolled by staging, 60 call sites outside any loop
        x = step(x, w)
    i = 0
    while i < 50 and x[0] < 10.0:  # one call site in a loop
        x = step(x, w)
        i += 1
    return x


def test_loop_sites_are_inlined_when_the_others_are_too_many():
    prog = prune_prog(nb.lower(pb.jit(many_sites_and_a_loop).staged(0.3).prog))
    entry = prog.func(prog.entry)

    def calls(body, looped):
        n = 0
        for st in body.stmts:
            if isinstance(st.exp, Apply) and st.exp.func.startswith("step") and looped:
                n += 1
            for sub in _scopes(st.exp):
                n += calls(sub, looped or isinstance(st.exp, Loop))
        return n

    def outside(body):
        return sum(isinstance(st.exp, Apply) and st.exp.func.startswith("step") for st in body.stmts)

    assert calls(entry.body, False) == 0      # inlined in the loop
    assert outside(entry.body) >= 50           # kept as calls elsewhere (the first, on a constant, is its own function)
    want = pb.jit(many_sites_and_a_loop, backend="interp")(0.3)
    np.testing.assert_allclose(pb.jit(many_sites_and_a_loop, backend="numba")(0.3), want, rtol=1e-14)


def _scopes(e):
    from pullback.ir.traverse import exp_scopes

    return [b for _, b in exp_scopes(e)]


def force_in_a_loop(w):
    """particle's shape: a force by an inner jacfwd at every step of a while loop."""
    def potential(x):
        return 1.0 / np.sqrt(np.sum((x - np.array([1.0, w])) ** 2))

    x, v = np.array([0.0, 2.0]), np.array([0.5, 0.0])
    i = 0
    while x[1] > 0.0 and i < 1000:   # pushed off the charge, pulled down by gravity: ~20 steps
        v = v - 0.1 * (pb.jacfwd(potential)(x) + np.array([0.0, 1.0]))
        x = x + 0.1 * v
        i += 1
    return x[0] + i


def test_inner_jacfwd_in_a_loop_is_scalar_code():
    f = pb.jit(force_in_a_loop, backend="numba")
    want = pb.jit(force_in_a_loop, backend="interp")(0.4)
    np.testing.assert_allclose(f(0.4), want, rtol=1e-13)
    prog = prune_prog(nb.lower(f.staged(0.4).prog))
    assert loops(prog) == 1
    body_ops = [s.exp for fn in prog.funcs for st in iter_lets(fn.body) if isinstance(st.exp, Loop)
                for s in iter_lets(st.exp.body)]
    # no basis vector, Jacobian row or packed point is built in the loop: all scalars
    assert not [e for e in body_ops if isinstance(e, Prim) and e.op in ("full", "zeros", "index_update")], body_ops
    assert not [e for e in body_ops if isinstance(e, (Apply, Loop))]


def _work(jitted, *args):
    from pullback.backends import interp

    ops = interp.OpCount()
    interp.run(prune_prog(nb.lower(jitted.staged(*args).prog)), *args, ops=ops)
    return ops.work


def test_each_row_costs_a_constant_times_the_primal():
    # cheap gradients: unrolled (n <= 4) or looped (n > 4), a forward Jacobian's work is a fixed
    # multiple of the primal's per basis vector; the unrolled rows cost no more than the loop's
    per_row = {}
    for n in (2, 4, 5, 8):
        x = np.linspace(0.3, 1.7, n)
        jac = _work(pb.jit(pb.jacfwd(field)), x)
        per_row[n] = jac / n / _work(pb.jit(field), x)
    assert max(per_row.values()) < 6, per_row
    assert per_row[4] <= per_row[5], per_row


def long_chain(x):                 # ~180 statements once staged (a Python list is unrolled)
    for _ in [None] * 60:
        x = np.sin(x) * 1.01 + 0.1
    return x


def test_a_large_row_function_keeps_its_loop():
    # unrolled, it would be copied once per row into the caller (note [small-jacobians])
    from pullback.transforms import UNROLL_JACOBIAN_STMTS

    x = np.array([0.3, 0.7])
    prog = pb.jit(pb.jacfwd(long_chain), backend="interp").staged(x).prog
    assert sum(1 for f in prog.funcs for _ in iter_lets(f.body)) > 2 * UNROLL_JACOBIAN_STMTS
    assert loops(prog) == 1
    np.testing.assert_allclose(pb.jit(pb.jacfwd(long_chain), backend="numba")(x),
                               pb.jit(pb.jacfwd(long_chain), backend="interp")(x), rtol=1e-13)
