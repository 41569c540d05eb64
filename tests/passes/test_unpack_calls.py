"""`passes.unpack_calls` (note [unpack-calls]): a small static array that a
function reads element by element, or builds element by element and returns,
crosses the call as its elements, so neither side allocates it. Values are
bit for bit those of the program before the pass."""
import numpy as np
import pytest

import pullback as pb
from pullback.backends import interp
from pullback.backends import numba_backend as nb
from pullback.ir.core import Apply, Prim
from pullback.ir.traverse import iter_lets
from pullback.passes.scalarize import scalarize
from pullback.passes.unpack_calls import unpack_calls


def force(x, w):                    # f64[2] in (read by element), f64[2] out (built by element)
    d = x - np.array([1.0, w])
    return -d / np.sqrt(np.sum(d * d)) ** 3


def orbit(w):
    x = np.array([0.5, 0.25])
    v = np.array([0.0, 0.1])
    i = 0
    while i < 30 and x[0] < 100.0:  # a traced loop: one call site
        v = v + 0.01 * force(x, w)
        x = x + 0.01 * v
        i += 1
    return x[0] * x[1] + v[1]


def spread(A, x):                   # x is used whole (a product with an 8 x 3 matrix): kept an array
    return np.tanh(A @ x)


def uses_whole(A, x):
    return np.sum(spread(A, x)) + np.sum(spread(A, 2.0 * x))


def turn(M, x):                     # a small result a product computes: kept an array
    return M @ x


def uses_turn(M, x):
    return np.sum(turn(M, x) * turn(M.T, x))


def walk(x, n):                     # recursion: the calls inside the callee change too
    if n <= 0:
        return x
    return walk(np.array([x[1], 0.5 * x[0] + 1.0]), n - 1)


def walker(x, n):
    return np.sum(walk(x, n) * np.array([1.0, 3.0]))


def sig(prog, name):
    f = prog.func(name)
    return [tuple(p.type.shape) for p in f.params], [tuple(t.shape) for t in f.ret_types]


def run_both(prog, args):
    out = unpack_calls(prog)
    a, b, c = interp.run(prog, *args), interp.run(out, *args), interp.run(scalarize(out), *args)
    for x, y, z in zip(a, b, c):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
        np.testing.assert_array_equal(np.asarray(x), np.asarray(z))
    return out


def test_points_cross_as_elements():
    prog = pb.jit(orbit, backend="interp").staged(0.3).prog
    out = run_both(prog, (0.3,))
    assert sig(prog, "force_2") == ([(2,), ()], [(2,)])
    assert sig(out, "force_2") == ([(), (), ()], [(), ()])
    assert sig(out, prog.entry) == sig(prog, prog.entry)      # the entry keeps its signature


@pytest.mark.parametrize("fun, args, name", [
    (uses_whole, (np.arange(24.0).reshape(8, 3) / 10.0, np.array([0.5, -1.0, 2.0])), "spread"),
    (uses_turn, (np.array([[1.0, 2.0], [-0.5, 0.25]]), np.array([0.5, -1.0])), "turn"),
])
def test_arrays_used_whole_stay_arrays(fun, args, name):
    prog = pb.jit(fun, backend="interp").staged(*args).prog
    out = unpack_calls(prog)
    assert sig(out, name) == sig(prog, name)
    assert out is prog


def test_recursive_calls_are_rewritten():
    prog = pb.jit(walker, backend="interp").staged(np.array([0.25, 2.0]), 5).prog
    out = run_both(prog, (np.array([0.25, 2.0]), 5))
    assert sig(out, "walk") == ([(), (), ()], [(), ()])
    for f in out.funcs:
        for st in iter_lets(f.body):
            if isinstance(st.exp, Apply) and st.exp.func == "walk":
                assert all(not a.type.shape for a in st.exp.args)


def test_custom_rule_functions_keep_their_signature():
    @pb.custom_vjp
    def clip(x):
        return np.minimum(x, 1.0)

    def clip_fwd(x):
        return clip(x), x

    def clip_bwd(x, g):
        return (np.where(x < 1.0, g, 0.5 * g),)

    clip.defvjp(clip_fwd, clip_bwd)

    def loss(w):
        return np.sum(clip(np.array([w, 2.0 * w])) ** 2)

    f = pb.grad(loss)
    prog = pb.jit(f, backend="interp").staged(0.75).prog
    out = unpack_calls(prog)
    ruled = {g for fn in prog.funcs for _, g in fn.rules} | {fn.name for fn in prog.funcs if fn.rules}
    for name in ruled:
        assert sig(out, name) == sig(prog, name)
    want = pb.jit(f, backend="interp")(0.75)
    np.testing.assert_allclose(pb.jit(f, backend="numba")(0.75), want, rtol=1e-14)


@pytest.mark.parametrize("fun, args", [(orbit, (0.3,)), (walker, (np.array([0.25, 2.0]), 5))])
def test_numba_matches_interp(fun, args):
    for f in (fun, pb.grad(fun)):
        want = pb.jit(f, backend="interp")(*args)
        np.testing.assert_allclose(pb.jit(f, backend="numba")(*args), want, rtol=1e-14, atol=0)


def test_particle_force_vjps_take_and_return_scalars():
    """GradBench's particle, outer and inner reverse: the potential's vjp at each
    Euler step and its vjp in the reverse sweep (too many sites to inline) take
    the point's elements and return the force's, with no array made per call."""
    from pullback.gradbench.modules import particle

    jitted = particle.FUNCTIONS["rr"].__closure__[0].cell_contents
    prog = nb.lower(jitted.staged(0.0).prog)
    called = {st.exp.func for f in prog.funcs for st in iter_lets(f.body) if isinstance(st.exp, Apply)}
    vjps = [f for f in prog.funcs if f.name in called and f.name.startswith("potential_vjp")]
    assert vjps
    for f in vjps:
        assert all(not p.type.shape for p in f.params) and all(not t.shape for t in f.ret_types), f.name
        assert not any(isinstance(st.exp, Prim) and st.exp.op == "full" for st in iter_lets(f.body)), f.name


def test_a_compiled_non_entry_function_keeps_its_signature():
    """`compiled(prog, fname)` compiles a function other than the program's entry
    (a vjp the caller built): that function is called from outside and keeps
    its parameters."""
    from pullback.passes.vjp import vjp_prog

    vp, name = vjp_prog(pb.jit(force, backend="interp").staged(np.array([0.5, 0.25]), 0.3).prog)
    assert name != vp.entry
    out = unpack_calls(vp, name)
    assert sig(out, name) == sig(vp, name)
    got = nb.compiled(vp, name)(np.array([0.5, 0.25]), 0.3, np.array([1.0, -2.0]))
    want = interp.run(vp, np.array([0.5, 0.25]), 0.3, np.array([1.0, -2.0]), fname=name)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-14)
