"""Short loops in the numba backend (note [short-loops]): small fused results
that die inside a loop body are written into scratch arrays allocated once
per call (`numba_scratch`), and fused loops too short for LLVM to vectorise
print libm's exp/log/tanh instead of the vectorisable helpers. The numbers
stay the interpreter's; arrays that outlive their iteration are never
scratch."""
import re

import numpy as np
import pytest

import pullback as pb
from pullback.backends import numba_backend as nb
from pullback.backends import numba_scratch
from pullback.ir.core import Loop
from pullback.ir.traverse import iter_lets


def source(f, *args):
    jf = pb.jit(f, backend="numba", parallel=False)
    return nb.emit_prog(nb.lower(jf.staged(*args).prog), parallel=False)


def check(f, *args, exact=False):
    got = pb.jit(f, backend="numba", parallel=False)(*args)
    want = pb.jit(f, backend="interp")(*args)
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)


SCRATCH_ARRAYS = re.compile(r"(?m)^    scratch\w* = (_pb_empty|np\.empty)\(")   # at the function's top
SCRATCH_ALIAS = re.compile(r"(?m)^\s+\w+ = scratch\w*(  # pb:\w+)?$")


def in_loop_allocs(src, fname):
    """The allocation lines of function `fname` below its top level."""
    body = src.split(f"\ndef {fname}(")[1].split("\n@njit")[0]
    return [ln.strip() for ln in body.split("\n") if ln.startswith("        ") and "np.empty(" in ln]


# -- scratch: the array dies in its iteration ---------------------------------

def dies_in_body(x, w):
    out = np.zeros((5, 3))
    for t in range(5):
        y = x * w + t
        out[t] = y[::-1][:3]   # read through views, copied into out
    return out


def test_dying_result_is_scratch_and_exact():
    x, w = np.linspace(0.5, 2.0, 6), np.linspace(-1.0, 1.0, 6)
    src = source(dies_in_body, x, w)
    assert re.search(r"\bscratch\[i0\w*\] = ", src), src   # y is the scratch array (no alias)
    assert "scratch = _pb_empty(6, np.float64)" in src   # once, at the function's top
    assert not in_loop_allocs(src, "dies_in_body")
    check(dies_in_body, x, w, exact=True)   # only the storage changed


def lanes_in_body(x):
    s = 0.0
    for t in range(4):
        s = s + np.sum(x * x + t)
    return s


def libm_lanes_in_body(x):
    s = 0.0
    for t in range(4):
        s = s + np.sum(np.tanh(x) + t)
    return s


def test_full_sum_lanes_are_scratch():
    x = np.linspace(0.0, 1.0, 40)
    src = source(libm_lanes_in_body, x)   # tanh: the lanes form (note [strip-sums], "Unrolled lanes")
    assert "[:] = 0" in src and "np.zeros(8" not in src
    check(libm_lanes_in_body, x, exact=True)   # the same lanes, the same additions


def test_unrolled_lanes_in_a_body_are_locals():
    x = np.linspace(0.0, 1.0, 40)
    src = source(lanes_in_body, x)
    assert "_l7 +=" in src and "[:] = 0" not in src and "np.zeros(8" not in src
    check(lanes_in_body, x, exact=True)


def top_level(x, w):
    y = x * w + 1.0
    return y[::-1] * 2.0


def test_not_in_a_loop_no_scratch():
    x = np.ones(6)
    assert "= scratch" not in source(top_level, x, x)


# -- not scratch: the array outlives its iteration -----------------------------

def carried(x, w):
    for t in range(5):
        x = x * w + t
    return x


def view_carried(x, w):
    z = x[:8]   # (more than scalarize's small arrays: a view is carried)
    for t in range(5):
        y = x * w + t
        z = y[1:9]
    return z


def updated_carried(x, w):
    z = x
    for t in range(5):
        y = x * w + t
        y[0] = 1.0
        z = y
    return z


def branch_carried(x, w):
    z = x
    for t in range(5):
        y = x * w + t
        if np.sum(z) > 0.0:
            z = y
        else:
            z = y + 1.0
    return z


def large_dies(x, w):
    s = 0.0
    for t in range(3):
        y = x * w + t
        s = s + y[::-1][0]
    return s


@pytest.mark.parametrize("f, n", [(carried, 6), (view_carried, 12), (updated_carried, 6),
                                  (branch_carried, 6), (large_dies, 600)])
def test_escaping_or_large_result_is_not_scratch(f, n):
    x, w = np.linspace(0.5, 2.0, n), np.linspace(-1.0, 1.0, n)
    src = source(f, x, w)
    # no loop writes a scratch array, by its name or through an alias (a value a loop carries is named)
    assert not re.search(r"\bscratch\w*\[i0\w*\] = ", src) and not SCRATCH_ALIAS.search(src), src
    check(f, x, w, exact=True)


def test_repeated_bodies_skip_parallel_maps():
    x = np.ones(6)
    prog = pb.jit(carried, backend="numba").staged(x, x).prog
    f = prog.funcs[-1] if prog.funcs[-1].name == "carried" else next(g for g in prog.funcs if g.name == "carried")
    loop = next(st for st in iter_lets(f.body) if isinstance(st.exp, Loop))
    assert id(loop.exp.body) in numba_scratch.repeated_bodies(prog, set())
    assert id(f.body) not in numba_scratch.repeated_bodies(prog, set())


# -- libm in loops too short to vectorise --------------------------------------

def activations(x, w):
    s = 0.0
    for t in range(3):
        a = 1.0 / (1.0 + np.exp(-(x * w + t)))
        s = s + np.sum(np.tanh(a) * x)
    return s


def test_short_loops_print_libm_long_ones_the_helpers():
    short, long_ = np.linspace(0.1, 2.0, 14), np.linspace(0.1, 2.0, 64)
    src = source(activations, short, short)
    assert "np.exp(" in src and "np.tanh(" in src and "_pb_vm_exp(" not in src
    src = source(activations, long_, long_)
    assert "_pb_vm_exp(" in src and "_pb_vm_tanh(" in src
    check(activations, short, short)
    check(activations, long_, long_)


def lstm_loss(main_params, extra_params, state, sequence):
    from pullback.gradbench.modules.lstm import lstm_objective

    return lstm_objective(main_params, extra_params, state, sequence)


@pytest.mark.slow
def test_lstm_gradient_scratch_and_libm():
    from pullback.gradbench.modules import lstm as gb

    rng = np.random.default_rng(0)
    l, c, b = 2, 6, 14
    args = (0.5 * rng.standard_normal((2 * l, 4 * b)), 0.5 * rng.standard_normal((3, b)),
            0.5 * rng.standard_normal((2 * l, b)), rng.uniform(0.0, 1.0, (c, b)))
    g = pb.grad(gb.lstm_objective, argnums=(0, 1))
    src = source(g, *args)
    assert len(SCRATCH_ARRAYS.findall(src)) >= 20 and "_pb_vm_exp(" not in src.split("def lstm_objective_vjp")[1]
    got = pb.jit(g, backend="numba", parallel=False)(*args)
    want = pb.jit(g, backend="interp")(*args)
    for a, b_ in zip(got, want):
        np.testing.assert_allclose(a, b_, rtol=1e-12, atol=1e-15)


# -- slice copies (an updated array's slices) into scratch arrays ---------------

def row_copy(A):
    A = A.copy()
    s = 0.0
    for t in range(4):
        r = A[t]                # a copy: A is updated in the loop
        A[t] = r * 2.0 + 1.0
        s = s + np.sum(r * r)
    return s + np.sum(A)


LOOP_IR = """entry def f(a: f64[4,6]) -> (f64[4,6], f64[6]) {{
  let z: f64[6] = full(0.0:f64) {{shape=(6,)}}
  let (r: f64[4,6], s: f64[6]) = loop (p: f64[4,6] = a, q: f64[6] = z) for k: i64 < 3:i64 {{
    let row: f64[6] = index(p, k) {{spec=(('d',),)}}
    let t: f64[6] = mul(row, 2.0:f64)
    let p2: f64[4,6] = index_update(p, z, k) {{mode='set', spec=(('d',),)}}
    yield (p2, {out})
  }}
  return (r, s)
}}"""


@pytest.mark.parametrize("out, scratch", [("t", True), ("row", False)])
def test_slice_copy_scratch_only_when_local(out, scratch):
    """A copied slice (its array is updated after the read) goes into a scratch
    array only if nothing that leaves the iteration can share it (here: the
    loop's result)."""
    from pullback.ir.parser import parse_prog
    from pullback.backends import interp

    prog = parse_prog(LOOP_IR.format(out=out))
    src = nb.emit_prog(nb.lower(prog), parallel=False)
    assert ("row_view = " in src) == scratch and ("].copy()" in src) != scratch
    a = np.arange(24.0).reshape(4, 6) - 5.0
    for x, y in zip(nb.run(prog, a.copy()), interp.run(prog, a.copy())):
        np.testing.assert_array_equal(x, y)


def test_lstm_gradient_slice_copies_scratch():
    """The adjoint rows read and then zeroed in lstm's reverse sweep, and the
    forward sweep's h and cell rows, are copied into scratch arrays."""
    from pullback.gradbench.modules import lstm

    r = np.random.default_rng(0)
    args = (r.standard_normal((4, 8)), r.standard_normal((3, 2)), r.standard_normal((4, 2)),
            r.standard_normal((5, 2)))
    g = pb.grad(lstm.lstm_objective, argnums=(0, 1), backend="numba")
    src = nb.emit_prog(nb.lower(g._jit.staged(*args).prog), parallel=False)
    vjp = src.split("def lstm_objective_vjp")[1]
    assert "].copy()" not in vjp and vjp.count("_view = ") >= 5
    for a, b in zip(g(*args), pb.grad(lstm.lstm_objective, argnums=(0, 1), backend="interp")(*args)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


# -- fills: small `full` arrays in a loop body (scalarize's packs) ---------------

def _code(src):
    """`src` without its comments (provenance comments quote the user's source)."""
    return "\n".join(ln.split("#")[0] for ln in src.splitlines())


def fill_dies(x):
    acc = 0.0
    for t in range(6):
        y = np.full(6, 0.5 * t)
        y[t] = 1.0
        acc = acc + np.sum(y * x)
    return acc


def fill_carried(x):
    z = x
    for t in range(6):
        y = np.full(6, 0.5 * t)
        y[t] = 1.0
        z = y * 1.0 if t % 2 == 0 else y
    return z


def test_dying_fill_is_scratch_carried_fill_is_not():
    x = np.linspace(0.5, 2.0, 6)
    src = source(fill_dies, x)
    assert re.search(r"\bscratch\w*\[j0\w*\] = ", src) and "np.full(" not in _code(src.split("def fill_dies(")[1]), src
    check(fill_dies, x, exact=True)
    src = source(fill_carried, x)
    assert not re.search(r"\bscratch\w*\[j0\w*\] = ", src) and not SCRATCH_ALIAS.search(src), src
    check(fill_carried, x, exact=True)


def fall(w):
    """A point in the plane falling through a while loop: the gradient's forward sweep pushes
    the packed point and velocity at every step."""
    x, v = np.array([0.0, 1.0]), np.array([1.0, 0.0])
    i = 0
    while x[1] > 0.0 and i < 1000:
        v = v - 0.1 * np.array([0.0, 1.0 + w * x[0]])
        x = x + 0.1 * v
        i += 1
    return x[0] * x[1]


def test_packs_for_the_tape_are_scratch():
    src = source(pb.grad(fall), 0.3)
    assert "while " in src and SCRATCH_ARRAYS.search(src)
    nested = [ln for ln in _code(src).splitlines() if ln.startswith("        ")]   # below top level
    assert not [ln for ln in nested if "np.full(" in ln], src
    got = pb.grad(fall, backend="numba")(0.3)
    np.testing.assert_allclose(got, pb.grad(fall, backend="interp")(0.3), rtol=1e-13)
