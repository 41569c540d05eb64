"""Compile-time measures of the numba backend (note [compile-time]): an entry
that only forwards to another function is not compiled itself (numba would
optimise the callee's whole module a second time inside it); numba optimises
pullback's modules at `numba_opt.opt_level()`, restored afterwards, and the
level is part of the module's cache name."""
import os
import pathlib
import sys
import threading

import numpy as np
import pytest

pytest.importorskip("numba")

_SRC = str(pathlib.Path(__file__).resolve().parent.parent.parent / "src")
if _SRC not in sys.path:
    sys.path.insert(0, _SRC)

import pullback as pb
from pullback.backends import interp, numba_backend, numba_opt
from pullback.backends import pysource as ps


pytestmark = pytest.mark.usefixtures("private_cache")   # conftest.py


def _unset(var):
    """Run a test with `var` unset, then restore it (a fixture's body)."""
    old = os.environ.pop(var, None)
    yield
    if old is None:
        os.environ.pop(var, None)
    else:
        os.environ[var] = old


@pytest.fixture
def _opt_env():
    yield from _unset("PULLBACK_NUMBA_OPT")


def big(x):
    """More statements than `passes.inline` inlines: its vjp stays a function."""
    y = np.sin(x) * x
    for _ in range(3):
        y = np.cos(y) + x * y
    return np.sum(y * y)


def _grad_prog(fun, *args, **kw):
    return pb.grad(fun, **kw)._jit.staged(*args).prog


def test_forwarding_entry_is_not_compiled():
    x = np.linspace(0.1, 0.9, 7)
    prog = _grad_prog(big, x)
    low = numba_backend.lower(prog)
    g = numba_opt.forwarded(low, low.main)
    assert g.name != low.entry          # the grad entry only calls big's vjp
    fn = numba_backend.compile_prog(prog)
    names = ps._Module(low, True).fnames
    assert fn.spec.dname == names[g.name] != names[low.entry]
    assert fn.spec.name == low.entry    # messages still name the entry
    np.testing.assert_allclose(fn(x)[0], interp.run(prog, x)[0], rtol=1e-12)
    # the entry's own dispatcher was never compiled
    unit = sys.modules[f"pullback_numba_{fn.spec.h}"]
    assert not getattr(unit, names[low.entry]).signatures
    assert getattr(unit, names[g.name]).signatures


def test_only_exact_forwards_are_followed():
    import dataclasses

    x, y = np.linspace(0.1, 0.9, 7), np.linspace(1.0, 2.0, 7)
    prog = numba_backend.lower(_grad_prog(lambda a, b: big(a * b), x, y, argnums=(0, 1)))
    f = prog.main
    assert numba_opt.forwarded(prog, f) is not f
    st = f.body.stmts[0]

    def entry(stmt, result):
        f2 = dataclasses.replace(f, body=dataclasses.replace(f.body, stmts=(stmt,), result=result))
        return prog.with_funcs([f2 if h.name == f.name else h for h in prog.funcs])

    swapped = entry(dataclasses.replace(st, exp=dataclasses.replace(st.exp, args=st.exp.args[::-1])), f.body.result)
    assert numba_opt.forwarded(swapped, swapped.main) is swapped.main     # arguments in another order
    reordered = entry(st, f.body.result[::-1])
    assert numba_opt.forwarded(reordered, reordered.main) is reordered.main  # results in another order


def test_forwarding_stops_at_a_donating_callee():
    import dataclasses

    x = np.linspace(0.1, 0.9, 7)
    prog = numba_backend.lower(_grad_prog(big, x))
    g = numba_opt.forwarded(prog, prog.main)
    donating = dataclasses.replace(g, donated=((0, 0),))
    prog2 = prog.with_funcs([donating if h.name == g.name else h for h in prog.funcs])
    assert numba_opt.forwarded(prog2, prog2.main) is prog2.main


def test_opt_level_setting(_opt_env, monkeypatch):
    import numba

    monkeypatch.setattr(numba.config, "OPT", type(numba.config.OPT)(3))
    assert numba_opt.opt_level() == numba_opt._DEFAULT_OPT
    monkeypatch.setattr(numba.config, "OPT", type(numba.config.OPT)(1))
    assert numba_opt.opt_level() == 1   # never above numba's own level
    os.environ["PULLBACK_NUMBA_OPT"] = "3"
    assert numba_opt.opt_level() == 3
    os.environ["PULLBACK_NUMBA_OPT"] = "fast"   # not a level: the default rule
    assert numba_opt.opt_level() == 1


def test_numba_opt_context_restores_and_locks():
    from numba.core import config

    old = config.OPT
    seen = []

    def other():
        with numba_opt.numba_opt(1):
            seen.append(int(config.OPT))

    with numba_opt.numba_opt(0):
        assert int(config.OPT) == 0
        t = threading.Thread(target=other)
        t.start()
        t.join(0.2)
        assert t.is_alive() and not seen   # numba's compiler lock is held: another compile waits
    t.join(10)
    assert seen == [1]
    assert config.OPT is old
    with pytest.raises(ValueError), numba_opt.numba_opt(2):
        raise ValueError("x")
    assert config.OPT is old


def _names_under(var: str, values) -> set:
    """The module's hash and source hash of one program under each value of `var`."""
    x = np.linspace(0.1, 0.9, 7)
    prog = numba_backend.lower(_grad_prog(big, x))
    src = numba_backend.emit_prog(prog, parallel=False)
    names = set()
    for v in values:
        os.environ[var] = v
        names.add(numba_backend._module_hash(prog, prog.main, src))
        names.add(numba_backend._src_hash(src))
    return names


def test_module_name_covers_the_level(_opt_env):
    assert len(_names_under("PULLBACK_NUMBA_OPT", ("2", "3"))) == 4


def test_values_equal_across_levels(_opt_env):
    x = np.linspace(0.1, 0.9, 7)
    prog = _grad_prog(big, x)
    outs = []
    for lv in ("1", "3"):
        os.environ["PULLBACK_NUMBA_OPT"] = lv
        fn = numba_backend.compile_prog(prog)
        outs.append(fn(x)[0])
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-13)
    np.testing.assert_allclose(outs[0], interp.run(prog, x)[0], rtol=1e-12)


@pytest.fixture
def _memchecks_env():
    yield from _unset("PULLBACK_NUMBA_MEMCHECKS")


def _wide_loop(nin=16, nout=8):
    """A numba loop reading `nin` arrays and writing `nout`: LLVM's default
    threshold (128) refuses the runtime alias checks it needs to vectorise."""
    import numba

    ins = [f"a{k}" for k in range(nin)]
    outs = [f"o{k}" for k in range(nout)]
    lines = [f"def f({', '.join(ins + outs)}):", "    for i in range(a0.shape[0]):"]
    for k in range(nout):
        terms = (f"{ins[(k + j) % nin]}[i] * {ins[(k + 2 * j + 1) % nin]}[i]" for j in range(3))
        lines.append(f"        {outs[k]}[i] = " + " + ".join(terms))
    ns = {}
    exec("\n".join(lines), ns)  # noqa: S102 - test source
    return numba.njit(cache=False)(ns["f"]), nin + nout


def _vectorised(inside: bool) -> bool:
    f, nargs = _wide_loop()
    args = [np.linspace(0.5, 1.5, 64) for _ in range(nargs)]
    if inside:
        with numba_opt.numba_opt(3):
            f(*args)
    else:
        f(*args)
    return " x double>" in "".join(f.inspect_llvm().values())


def test_memory_checks_setting(_memchecks_env):
    assert numba_opt.memory_checks() == numba_opt._MEMCHECKS
    os.environ["PULLBACK_NUMBA_MEMCHECKS"] = "128"
    assert numba_opt.memory_checks() == 128
    os.environ["PULLBACK_NUMBA_MEMCHECKS"] = "many"   # not a number: the default
    assert numba_opt.memory_checks() == numba_opt._MEMCHECKS


def test_wide_loops_vectorise_under_numba_opt_only(_memchecks_env):
    """note [vectorize-memchecks]: pullback's compiles allow the checks; the
    setting is LLVM's default again for everyone else's numba code afterwards."""
    assert not _vectorised(False)
    assert _vectorised(True)
    assert not _vectorised(False)
    os.environ["PULLBACK_NUMBA_MEMCHECKS"] = str(numba_opt._LLVM_DEFAULT_MEMCHECKS)
    assert not _vectorised(True)


def test_nested_numba_opt_keeps_the_setting_until_the_outermost_exits(_memchecks_env):
    with numba_opt.numba_opt(3):
        with numba_opt.numba_opt(3):
            pass  # an inner context entered and left: it must not restore LLVM's default
        assert _vectorised(False)   # still inside the outer context
    assert not _vectorised(False)


def test_module_name_covers_memory_checks(_memchecks_env):
    assert len(_names_under("PULLBACK_NUMBA_MEMCHECKS", ("128", "4096"))) == 4


def _values_under(var: str, values, x):
    """`big`'s gradient program and its numba results, compiled under each value of `var`."""
    prog = _grad_prog(big, x)
    outs = []
    for v in values:
        os.environ[var] = v
        outs.append(numba_backend.compile_prog(prog)(x)[0])
    return prog, outs


def test_values_equal_across_memory_checks(_memchecks_env):
    """Vectorising keeps every operation and its order (no fast-math): equal bit for bit."""
    _, outs = _values_under("PULLBACK_NUMBA_MEMCHECKS", ("128", "4096"), np.linspace(0.1, 0.9, 4099))
    np.testing.assert_array_equal(outs[0], outs[1])


@pytest.fixture
def _hoist_env():
    yield from _unset("PULLBACK_NUMBA_HOISTCHECKS")


def elimination(A):               # det_lu's loops: triangular, in place
    A = A.copy()
    d = 1.0
    for i in range(A.shape[0]):
        p = A[i, i]
        d = d * p
        for j in range(i + 1, A.shape[0]):
            f = A[j, i] / p
            for k in range(i + 1, A.shape[0]):
                A[j, k] -= f * A[i, k]
    return d


def elimination_row_sum(A):     # as elimination, with a sum over the rows: their sweep counts down
    A = A.copy()
    d = 1.0
    for i in range(A.shape[0]):
        p = A[i, i]
        d = d * p
        s = 0.0
        for j in range(i + 1, A.shape[0]):
            f = A[j, i] / p
            s = s + f
            for k in range(i + 1, A.shape[0]):
                A[j, k] -= f * A[i, k]
        d = d + 1e-3 * s
    return d


def _adjoint_sum_vectorised(A, fun=elimination) -> bool:
    """Does the gradient's innermost adjoint loop (f's adjoint summed over k while
    A_adj[i, k] is updated from A_adj[j, k]) become a vector reduction?"""
    prog = _grad_prog(fun, A)
    fn = numba_backend.compile_prog(prog)
    np.testing.assert_allclose(fn(A)[0], interp.run(prog, A)[0], rtol=1e-10)
    g = numba_opt.forwarded(numba_backend.lower(prog), numba_backend.lower(prog).main)
    unit = sys.modules[f"pullback_numba_{fn.spec.h}"]
    disp = getattr(unit, ps._Module(numba_backend.lower(prog), True).fnames[g.name])
    import re
    return re.search(r"fadd reassoc <\d+ x double>", "".join(disp.inspect_llvm().values())) is not None


def test_hoist_checks_setting(_hoist_env):
    assert numba_opt.hoist_checks() is numba_opt._HOIST_CHECKS is False
    os.environ["PULLBACK_NUMBA_HOISTCHECKS"] = "1"
    assert numba_opt.hoist_checks() is True
    assert len(_names_under("PULLBACK_NUMBA_HOISTCHECKS", ("0", "1"))) == 4


@pytest.mark.skipif(__import__("llvmlite.binding").binding.llvm_version_info < (18,),
                    reason="LLVM before 18 has no -hoist-runtime-checks")
def test_adjoint_rows_vectorise_without_hoisted_checks(_hoist_env):
    """note [hoisted-alias-checks]: with static trip counts LLVM's hoisted alias
    check of the adjoint rows folds to "always overlaps" and the loop stays
    scalar; checked per inner loop, it vectorises (values: rounding only)."""
    A = np.random.default_rng(3).uniform(-1, 1, (24, 24)) + 24 * np.eye(24)
    assert _adjoint_sum_vectorised(A, elimination_row_sum)
    assert _adjoint_sum_vectorised(A)
    os.environ["PULLBACK_NUMBA_HOISTCHECKS"] = "1"
    # the row loop's return sweep counts down (s is carried): hoisted checks keep it scalar
    assert not _adjoint_sum_vectorised(A, elimination_row_sum)
    # det_lu's row and column sweeps run forward (note [independent-loops]): vectorised either way
    assert _adjoint_sum_vectorised(A)


@pytest.fixture
def _fopt_env():
    old = os.environ.pop("PULLBACK_NUMBA_OPT", None)
    yield from _unset("PULLBACK_NUMBA_FOPT")
    os.environ.pop("PULLBACK_NUMBA_OPT", None)
    if old is not None:
        os.environ["PULLBACK_NUMBA_OPT"] = old


def test_function_opt_level_setting(_fopt_env):
    assert numba_opt.function_opt_level() == numba_opt._DEFAULT_FOPT == 1
    os.environ["PULLBACK_NUMBA_FOPT"] = "3"
    assert numba_opt.function_opt_level() == 3
    os.environ["PULLBACK_NUMBA_FOPT"] = "cheap"   # not a level: the default
    assert numba_opt.function_opt_level() == numba_opt._DEFAULT_FOPT
    os.environ["PULLBACK_NUMBA_FOPT"] = "3"
    os.environ["PULLBACK_NUMBA_OPT"] = "2"        # never above the module passes' level
    assert numba_opt.function_opt_level() == 2


def _function_pass_level(monkeypatch) -> int:
    """The level numba builds its function-level pass manager at, now."""
    from numba.core import codegen
    from numba.core.registry import cpu_target

    seen = []
    real = codegen.create_pass_builder

    def spy(tm, opt, **kw):
        seen.append(opt)
        return real(tm, opt=opt, **kw)

    monkeypatch.setattr(codegen, "create_pass_builder", spy)
    cpu_target.target_context.codegen()._function_pass_manager()
    monkeypatch.setattr(codegen, "create_pass_builder", real)
    return seen[-1]


def test_function_passes_at_the_level_inside_numba_opt_only(_fopt_env, monkeypatch):
    """note [compile-time], "Function passes": pullback's compiles build numba's function
    pass managers at `function_opt_level()`; everyone else's numba code gets numba's own."""
    from numba.core import config

    own = int(config.OPT)
    assert _function_pass_level(monkeypatch) == own
    with numba_opt.numba_opt(3):
        assert _function_pass_level(monkeypatch) == 1
        with numba_opt.numba_opt(3):
            pass                                   # an inner context must not restore numba's method
        assert _function_pass_level(monkeypatch) == 1
    assert _function_pass_level(monkeypatch) == own
    os.environ["PULLBACK_NUMBA_FOPT"] = "2"
    with numba_opt.numba_opt(3):
        assert _function_pass_level(monkeypatch) == 2
    with pytest.raises(ValueError), numba_opt.numba_opt(3):
        raise ValueError("x")
    assert _function_pass_level(monkeypatch) == own


def test_module_name_covers_function_passes(_fopt_env):
    assert len(_names_under("PULLBACK_NUMBA_FOPT", ("1", "3"))) == 4


def test_values_equal_across_function_pass_levels(_fopt_env):
    """The function passes only prepare the IR for the module's: the same bits."""
    x = np.linspace(0.1, 0.9, 7)
    prog, outs = _values_under("PULLBACK_NUMBA_FOPT", ("1", "3"), x)
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_allclose(outs[0], interp.run(prog, x)[0], rtol=1e-12)


# -- the collector (note [compile-time], "The collector") -------------------------------------

@pytest.fixture
def _gc_env():
    import gc

    was = gc.isenabled()
    yield from _unset("PULLBACK_COMPILE_GC")
    (gc.enable if was else gc.disable)()


def test_collector_paused_inside_numba_opt_only(_gc_env):
    import gc

    gc.enable()
    assert numba_opt.collector_paused()
    with numba_opt.numba_opt(3):
        assert not gc.isenabled()
        with numba_opt.numba_opt(3):
            assert not gc.isenabled()
        assert not gc.isenabled()                  # an inner exit must not resume it
    assert gc.isenabled()
    with pytest.raises(ValueError), numba_opt.numba_opt(3):
        raise ValueError("x")
    assert gc.isenabled()


def test_collector_setting_and_a_user_who_disabled_it(_gc_env):
    import gc

    gc.enable()
    os.environ["PULLBACK_COMPILE_GC"] = "1"        # keep collecting during compiles
    assert not numba_opt.collector_paused()
    with numba_opt.numba_opt(3):
        assert gc.isenabled()
    del os.environ["PULLBACK_COMPILE_GC"]
    gc.disable()                                   # the user's choice survives a compile
    with numba_opt.numba_opt(3):
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_collector_paused_during_a_compile(_gc_env, monkeypatch):
    """numba's compile runs inside the paused context, and the collector runs again after."""
    import gc

    from pullback.backends import numba_units

    seen, real = [], numba_units._Unit._compile

    def spy(self, name, sig):
        seen.append(gc.isenabled())
        return real(self, name, sig)

    monkeypatch.setattr(numba_units._Unit, "_compile", spy)
    gc.enable()
    x = np.linspace(0.1, 0.9, 5)
    np.testing.assert_allclose(pb.grad(big, backend="numba")(x), pb.grad(big, backend="interp")(x), rtol=1e-12)
    assert seen and not any(seen)
    assert gc.isenabled()


def test_uncalled_functions_are_not_printed():
    """Inlining and scalarising leave copies nothing calls (det's 3 x 3 and smaller minors):
    `lower` keeps only what the entry reaches, so every printed function but the entry is called."""
    import re

    from pullback.gradbench.modules import det as gb

    A = np.random.default_rng(0).standard_normal((6, 6)) + 6 * np.eye(6)
    prog = _grad_prog(gb.det, A)
    src = numba_backend.emit_prog(numba_backend.lower(prog), parallel=False)
    names = re.findall(r"^def (\w+)\(", src, re.M)
    body = [ln.split("#")[0] for ln in src.splitlines()                 # code: no defs, docstrings, comments
            if not ln.startswith("def ") and not ln.strip().startswith('"""')]
    uncalled = [n for n in names if n != prog.entry and not any(re.search(rf"\b{n}\(", ln) for ln in body)]
    assert names and not uncalled
    np.testing.assert_allclose(pb.grad(gb.det, backend="numba")(A), pb.grad(gb.det, backend="interp")(A), rtol=1e-12)
