"""The numba backend's vectorisable exp/log/log1p/expm1/tanh/logistic
(backends/libcalls/vecmath.py, note [vecmath]): accuracy against mpmath over
the whole double range, special values exactly as NumPy, the loop over an
array vectorised by LLVM (no libm call left), the generated code switched by
PULLBACK_VECMATH, and pullback programs agreeing with the interpreter."""
import os
import re
import warnings

import numpy as np
import pytest

pytest.importorskip("numba")
mp = pytest.importorskip("mpmath")

import pullback as pb  # noqa: E402
from pullback.backends import interp  # noqa: E402
from pullback.backends import numba_backend as nb  # noqa: E402
from pullback.backends.libcalls import vecmath as vm  # noqa: E402
from pullback.passes.inline import inline_small  # noqa: E402

warnings.simplefilter("ignore", RuntimeWarning)

MPREF = {"exp": mp.exp, "log": mp.log, "log1p": mp.log1p, "expm1": mp.expm1, "tanh": mp.tanh}
NPREF = {"exp": np.exp, "log": np.log, "log1p": np.log1p, "expm1": np.expm1, "tanh": np.tanh,
         "logistic": lambda x: 0.5 * (np.tanh(0.5 * x) + 1.0)}   # pysource's form of logistic
# the documented bounds (module docstring, note [vecmath]), in ulp of the exact result
BOUND = {"exp": 1.0, "log": 1.0, "log1p": 1.0, "expm1": 1.0, "tanh": 1.5}

TINY, MIN, MAX = 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308
SPECIAL = np.array([
    0.0, -0.0, np.inf, -np.inf, np.nan, TINY, -TINY, MIN, -MIN, MIN / 2, -MIN / 3, MAX, -MAX, 1.0, -1.0,
    709.782712893384, 709.7827128933841, 710.0, -708.3964185322641, -708.4, -745.1332191019411,
    -745.1332191019412, -744.44, -746.0, 1e-300, 1e-20, -1e-20, 1.0 + 2.0 ** -52, 1.0 - 2.0 ** -53,
    -1.0 + 2.0 ** -53, -1.0 - 2.0 ** -52, 1.5 * 2.0 ** -1022, 36.0, -36.0, -37.5, -38.0, -40.0, -41.0, 19.0,
    22.0, 0.5493061443340549, 0.2554128118829953, 2.0 ** 53, 2.0 ** 54 + 4.0, 1e300, 0.6931471805599453,
    -0.3465735902799726, 0.3465735902799727])

_FNS: dict = {}


def fn(op):
    if op not in _FNS:
        _FNS[op] = vm.compiled(op, array=True)
    return _FNS[op]


def ulp_errors(op, x, y):
    """|y - f(x)| in ulp of the exact f(x) (mpmath, 40 digits); outside the
    domain (NumPy's result nan), 0 where y is nan too."""
    out = np.empty(len(x))
    nan = np.isnan(NPREF[op](x))
    with mp.workdps(40):
        for i, (a, b) in enumerate(zip(x.tolist(), y.tolist())):
            if nan[i]:
                out[i] = 0.0 if b != b else np.inf
                continue
            t = MPREF[op](mp.mpf(a))
            tf = float(t)
            if not np.isfinite(tf) or tf == 0.0:
                out[i] = 0.0 if b == tf else np.inf
                continue
            # the ulp of the exact value: the spacing of the binade it lies in
            e = max(mp.floor(mp.log(abs(t), 2)), -1022)
            out[i] = float(abs(mp.mpf(b) - t) / mp.mpf(2) ** (e - 52))
    return out


def sample(op, n, seed):
    """Doubles over the whole range (random bit patterns, so every binade is as
    likely) plus the regions where each method changes (range reduction and
    branch boundaries, overflow and underflow, near 1 and -1)."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 0x7FF0000000000000, n, dtype=np.int64).view(np.float64)
    sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    x = [bits * sign, rng.uniform(-1, 1, n // 4) * 2.0 ** rng.integers(-60, 3, n // 4)]
    if op in ("exp", "expm1"):
        x += [rng.uniform(-746, 710, n // 2), rng.uniform(-40, 40, n // 4)]
    if op in ("log", "log1p"):
        x += [1.0 + rng.uniform(-0.5, 0.5, n // 4), rng.uniform(-1, 0, n // 4)]
    if op == "tanh":
        x += [rng.uniform(-1, 1, n // 2), rng.uniform(-25, 25, n // 4)]
    return np.concatenate(x)


def test_coefficients_are_the_documented_fits():
    assert vm.fit_coefficients() == (vm.EXP_P, vm.LOG_Q, vm.TANH_T)


@pytest.mark.parametrize("op", vm.OPS)
def test_special_values_as_numpy(op):
    got, want = fn(op)(SPECIAL), NPREF[op](SPECIAL)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    assert np.array_equal(np.isinf(got[ok]), np.isinf(want[ok]))
    # results that are exact whichever way one rounds: infinities, zeros, the
    # values at zero, infinite and tiny inputs (mpmath checks the rest)
    exact = ok & (np.isinf(want) | (want == 0) | np.isinf(SPECIAL) | (np.abs(SPECIAL) < 1e-300))
    if op == "logistic":   # 1 + tanh cancels: compare on the scale of 1
        exact &= np.abs(SPECIAL) < 30
    assert np.array_equal(got[exact], want[exact]), SPECIAL[exact][got[exact] != want[exact]]
    assert np.array_equal(np.signbit(got[exact]), np.signbit(want[exact]))   # -0.0 stays -0.0
    fin = ok & ~exact & np.isfinite(want)
    scale = 1.0 if op == "logistic" else np.abs(want[fin])
    assert np.all(np.abs(got[fin] - want[fin]) <= 2 * np.spacing(scale))


@pytest.mark.parametrize("op", sorted(BOUND))
def test_accuracy_against_mpmath(op):
    x = sample(op, 1200, seed=len(op))
    x = np.concatenate([x, SPECIAL])
    err = ulp_errors(op, x, fn(op)(x))
    assert err.max() <= BOUND[op], (x[np.argmax(err)], err.max())


def test_logistic_is_pysources_formula():
    x = np.concatenate([sample("tanh", 2000, 5) * 2.0, SPECIAL])
    got, want = fn("logistic")(x), NPREF["logistic"](x)
    fin = np.isfinite(x)
    assert np.all(np.abs(got[fin] - want[fin]) <= 2 * np.spacing(1.0))
    assert np.array_equal(np.isnan(got), np.isnan(want))


@pytest.mark.slow
@pytest.mark.parametrize("op", sorted(BOUND))
def test_accuracy_sweep(op):
    """A larger sweep (about 10^5 points per function against mpmath)."""
    x = sample(op, 40000, seed=100 + len(op))
    err = ulp_errors(op, x, fn(op)(x))
    assert err.max() <= BOUND[op], (x[np.argmax(err)], err.max())


def test_float32_rounds_once():
    x = np.random.default_rng(3).uniform(-20, 20, 2000).astype(np.float32)
    got = fn("exp")(x)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, np.exp(x.astype(np.float64)).astype(np.float32))


@pytest.mark.parametrize("op", ["exp", "log1p", "tanh"])
def test_loop_is_vectorised(op):
    # the array helper's loop over the helper has vector arithmetic and no libm call
    f = fn(op)
    f(np.linspace(0.1, 0.9, 16))   # compiled here: the test may run first in its worker (pytest-xdist)
    ir = "\n".join(f.inspect_llvm().values())
    assert re.search(r"<\d+ x double>", ir), "the loop was not vectorised"
    assert not re.search(rf"call [^\n]*@(llvm\.)?{op}(\.f64)?\(", ir)


# -- in generated code -------------------------------------------------------

def lse(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def mixed(x):
    return np.sum(np.tanh(x) * np.log1p(x * x) + np.expm1(-x * x)) + np.log(np.sum(np.exp(x)))


def source(f, *args):
    """The numba module's code, comments (which quote the user's lines) removed."""
    src = nb.emit_prog(inline_small(pb.jit(f).staged(*args).prog), parallel=False)
    return "\n".join(line.split("#")[0] for line in src.splitlines())


def test_numba_prints_vecmath_and_the_switch(monkeypatch):
    x = np.linspace(-2, 2, 50)
    src = source(mixed, x)
    for op in ("exp", "log", "log1p", "expm1", "tanh"):
        assert f"_pb_vm_{op}(" in src, op
    assert "np.exp(" not in src and "np.tanh(" not in src
    monkeypatch.setenv("PULLBACK_VECMATH", "0")
    src0 = source(mixed, x)
    assert "_pb_vm_" not in src0 and "np.tanh(" in src0


@pytest.mark.parametrize("switch", ["1", "0"])
def test_programs_agree_with_the_interpreter(monkeypatch, switch):
    # compile_prog itself: pb.jit's caches are per process, not per setting
    monkeypatch.setenv("PULLBACK_VECMATH", switch)
    x = np.random.default_rng(0).standard_normal(300)
    for f in (pb.grad(lse), pb.grad(mixed)):
        prog = pb.jit(f).staged(x).prog
        entry = nb.compile_prog(prog, parallel=False)
        assert ("_pb_vm_exp(" in entry.source) == (switch == "1")
        np.testing.assert_allclose(entry(x)[0], interp.run(prog, x)[0], rtol=1e-13, atol=1e-15)
