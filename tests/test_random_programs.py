"""Differential testing on random numeric Python programs (see tests/_progen.py).

Property, for each generated program and random inputs:
- plain Python == pb.jit(backend="interp") == pb.jit(backend="pysource");
- reverse-mode gradients (pb.grad), forward-mode gradients (pb.jacobian with
  mode="fwd"), pb.jvp along a random direction, on both backends, agree with
  each other and with central finite differences.

The generator itself is tested without pullback (valid, deterministic, no
mutation of arguments). The larger runs are marked ``slow``.
"""
from __future__ import annotations

import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, currently_in_test_context, given, settings
from hypothesis import strategies as st

from _progen import GenProgram, HypothesisSource, ProgGen, random_program
from pullback.testing import numerical_jvp

BACKENDS = ("interp", "pysource")
_TMP = tempfile.mkdtemp(prefix="pb_progen_")


@st.composite
def programs(draw, max_stmts=5, max_depth=2):
    return ProgGen(HypothesisSource(draw), max_stmts=max_stmts, max_depth=max_depth).program()


def _copy(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def _plain(gp: GenProgram, args):
    f = gp.load(_TMP)
    with np.errstate(all="ignore"):
        r = f(*_copy(args))
    return f, r


def _close(a, b, rtol, atol, what, gp, args):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, f"{what}: shape {a.shape} != {b.shape}\n{gp.source}\nargs={args!r}"
    ok = np.all(np.abs(a - b) <= atol + rtol * np.abs(b))
    assert ok, (f"{what}: {a!r} != {b!r} (max abs err {np.max(np.abs(a - b)):.3g})\n"
                f"--- program ---\n{gp.source}--- args ---\n{args!r}")


def fd_grad(f, args, eps=1e-6):
    """Central-difference gradient of scalar f w.r.t. every argument."""
    grads = []
    zeros = [np.zeros_like(a) if isinstance(a, np.ndarray) else 0.0 for a in args]
    for k, a in enumerate(args):
        g = np.zeros(np.shape(a))
        for idx in np.ndindex(np.shape(a)):
            t = list(zeros)
            if isinstance(a, np.ndarray):
                e = np.zeros_like(a)
                e[idx] = 1.0
                t[k] = e
            else:
                t[k] = 1.0
            g[idx] = numerical_jvp(f, _copy(args), t, eps)
        grads.append(g)
    return grads


def check_program(gp: GenProgram, seed: int, order2: bool = False):
    import pullback as pb

    rng = np.random.default_rng(seed)
    args = gp.make_args(rng)
    f, expected = _plain(gp, args)
    usable = bool(np.isfinite(expected) and abs(expected) < 1e6)
    if currently_in_test_context():
        assume(usable)
    else:
        assert usable, f"fixed program gives {expected!r}; pick another seed\n{gp.source}"

    # values: every backend agrees with Python
    for b in BACKENDS:
        got = pb.jit(f, backend=b)(*_copy(args))
        _close(got, expected, 1e-9, 1e-12, f"pb.jit(backend={b!r}) vs Python", gp, args)

    # gradients: reverse, forward, finite differences
    fd = fd_grad(f, args)
    scale = 1.0 + max(float(np.max(np.abs(g))) for g in fd)
    rtol, atol = 1e-5, 1e-6 * scale
    argnums = tuple(range(len(args)))
    for b in BACKENDS:
        g_rev = pb.grad(f, argnums=argnums, backend=b)(*_copy(args))
        assert isinstance(g_rev, tuple) and len(g_rev) == len(args), f"grad with argnums tuple: {g_rev!r}"
        for k in argnums:
            _close(g_rev[k], fd[k], rtol, atol, f"reverse gradient d/dx{k} (backend={b}) vs FD", gp, args)
            g_fwd = pb.jacobian(f, argnums=k, mode="fwd", backend=b)(*_copy(args))
            _close(g_fwd, g_rev[k], 1e-9, 1e-9 * scale, f"forward vs reverse d/dx{k} (backend={b})", gp, args)
        v = tuple(rng.normal(size=np.shape(a)) if isinstance(a, np.ndarray) else float(rng.normal())
                  for a in args)
        out, tan = pb.jvp(f, _copy(args), v, backend=b)
        _close(out, expected, 1e-9, 1e-12, f"pb.jvp primal (backend={b})", gp, args)
        want = sum(float(np.sum(np.asarray(g) * np.asarray(t))) for g, t in zip(g_rev, v))
        _close(tan, want, 1e-8, 1e-8 * scale, f"pb.jvp tangent vs <grad, v> (backend={b})", gp, args)

    if order2:
        check_second_order(f, args, scale, seed)


def check_second_order(f, args, scale, seed):
    """forward-over-reverse and reverse-over-forward (DESIGN.md, testing principles)."""
    from pullback import testing

    rng = np.random.default_rng(seed)
    tol = dict(rtol=1e-4, atol=1e-5 * scale, backend="interp", rng=rng)
    u = testing.random_cotangent(f(*_copy(args)), rng)
    f_vjp = testing._vjp_derivative(f, u, len(args), "interp")
    testing.check_grads(f_vjp, args, modes=("fwd",), order=1, err_msg="VJP", **tol)
    v = testing.random_tangents(args, rng)
    f_jvp = testing._jvp_derivative(f, v, len(args), "interp")
    testing.check_grads(f_jvp, args, modes=("rev",), order=1, err_msg="JVP", **tol)


# -- the generator itself ---------------------------------------------------------------

@pytest.mark.parametrize("seed", range(40))
def test_generated_programs_are_valid_python(seed):
    gp = random_program(seed)
    assert gp.source == random_program(seed).source  # deterministic
    args = gp.make_args(np.random.default_rng(seed))
    before = _copy(args)
    compile(gp.source, "<gen>", "exec")
    _, r = _plain(gp, args)
    assert np.ndim(r) == 0
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)  # arguments are never mutated


@settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs())
def test_generator_covers_the_grammar(gp):
    # runs in plain Python only; fast
    _plain(gp, gp.make_args(np.random.default_rng(0)))


def test_generator_produces_every_construct():
    srcs = "\n".join(random_program(s).source for s in range(200))
    for needle in ("if ", "else:", "for ", "while ", "np.sum(", "np.dot(", "np.copy(", ".copy()",
                   "] = ", "] += ", "np.log(1.0 + ", "np.sqrt(1.0 + ", "/ (1.0 + ", "np.exp(np.tanh("):
        assert needle in srcs, needle


# -- the differential property ---------------------------------------------------------------

@pytest.mark.parametrize("seed", range(8))
def test_fixed_random_programs(seed):
    """A few fixed programs: quick to rerun and to debug (python tests/_progen.py N prints them)."""
    check_program(random_program(seed), seed)


@pytest.mark.parametrize("seed", range(4))
def test_fixed_random_programs_second_order(seed):
    check_program(random_program(seed, max_stmts=4), seed, order2=True)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(programs(), st.integers(0, 2**31 - 1))
def test_random_programs(gp, seed):
    check_program(gp, seed)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(programs(max_stmts=8, max_depth=3), st.integers(0, 2**31 - 1))
def test_random_programs_many(gp, seed):
    check_program(gp, seed)


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(programs(max_stmts=4), st.integers(0, 2**31 - 1))
def test_random_programs_second_order(gp, seed):
    check_program(gp, seed, order2=True)


# -- programs with pb.map / pb.vmap (issue 12; tests/_progen.py MapProgGen) ------------------------------

from _progen import MapProgGen, random_map_program  # noqa: E402


@st.composite
def map_programs(draw, max_stmts=5, max_depth=2, read_mapped=True):
    return MapProgGen(HypothesisSource(draw), max_stmts=max_stmts, max_depth=max_depth,
                      read_mapped=read_mapped).program()


def _has_map(gp):
    body = gp.source.split("def f(", 1)[1]
    return "pb.map(" in body or "pb.vmap(" in body


@pytest.mark.parametrize("seed", range(40))
def test_generated_map_programs_are_valid_python(seed):
    gp = random_map_program(seed)
    assert gp.source == random_map_program(seed).source  # deterministic
    args = gp.make_args(np.random.default_rng(seed))
    before = _copy(args)
    _, r = _plain(gp, args)   # pb.map and pb.vmap run eagerly in plain Python
    assert np.ndim(r) == 0
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)


def test_map_generator_produces_every_construct():
    srcs = "\n".join(random_map_program(s).source for s in range(200))
    for needle in ("pb.map(", "pb.vmap(", "np.arange(", "    def m", "        if ", "        for ",
                   "return 0.5 * e", ", t"):
        assert needle in srcs, needle
    # maps inside loops and branches (a def indented twice or more)
    assert any(line.startswith("        def m") for line in srcs.splitlines())


def _map_seeds(n, read_mapped):
    """The first n seeds whose program has a map."""
    seeds, s = [], 0
    while len(seeds) < n:
        if _has_map(random_map_program(s, read_mapped=read_mapped)):
            seeds.append(s)
        s += 1
    return seeds


@pytest.mark.parametrize("seed", _map_seeds(8, read_mapped=False))
def test_fixed_random_map_programs(seed):
    """Mapped vectors are not read whole by the lambda (the grammar without that overlap)."""
    check_program(random_map_program(seed, read_mapped=False), seed)


@pytest.mark.parametrize("seed", _map_seeds(6, read_mapped=True))
def test_fixed_random_map_programs_reading_mapped_vectors(seed):
    """The whole grammar: a lambda may read a vector it also maps over (x[i] and x)."""
    check_program(random_map_program(seed), seed)


@pytest.mark.parametrize("seed", _map_seeds(3, read_mapped=False))
def test_fixed_random_map_programs_second_order(seed):
    check_program(random_map_program(seed, max_stmts=4, read_mapped=False), seed, order2=True)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(map_programs(), st.integers(0, 2**31 - 1))
def test_random_map_programs(gp, seed):
    check_program(gp, seed)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(map_programs(max_stmts=8, max_depth=3), st.integers(0, 2**31 - 1))
def test_random_map_programs_many(gp, seed):
    check_program(gp, seed)


@pytest.mark.slow
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(map_programs(max_stmts=4), st.integers(0, 2**31 - 1))
def test_random_map_programs_second_order(gp, seed):
    check_program(gp, seed, order2=True)


@pytest.mark.slow
@pytest.mark.parametrize("seed", _map_seeds(4, read_mapped=False))
def test_random_map_programs_numba(seed):
    """The compiled backend against the interpreter: value and gradient."""
    import pullback as pb

    gp = random_map_program(seed, read_mapped=False)
    f = gp.load(_TMP)
    args = gp.make_args(np.random.default_rng(seed))
    argnums = tuple(range(len(args)))
    want = pb.jit(f, backend="interp")(*_copy(args))
    _close(pb.jit(f, backend="numba")(*_copy(args)), want, 1e-9, 1e-12, "numba vs interp", gp, args)
    g_ref = pb.grad(f, argnums=argnums, backend="interp")(*_copy(args))
    g = pb.grad(f, argnums=argnums, backend="numba")(*_copy(args))
    for k in argnums:
        _close(g[k], g_ref[k], 1e-9, 1e-9, f"numba vs interp d/dx{k}", gp, args)
