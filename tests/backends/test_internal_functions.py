"""Functions only compiled code calls get no Python or C wrapper (`NumbaDialect.decorator`,
note [compile-time], "Internal functions"): the module's entry keeps numba's wrappers, its
callees and a parallel map's chunks do not, a function compiled as the entry by name keeps
them, and a mutually recursive module keeps them everywhere; results are unchanged."""
import numpy as np
import pytest

pytest.importorskip("numba")

import pullback as pb  # noqa: E402
from pullback.backends import numba_backend as nb  # noqa: E402

pytestmark = pytest.mark.usefixtures("private_cache")   # conftest.py

INTERNAL = "no_cpython_wrapper=True, no_cfunc_wrapper=True)"


def rot(a):                        # a callee large enough not to be inlined
    c, s = np.cos(a), np.sin(a)
    rows = [c * c, -s * c + c * s * a, s * a + c * s * c, s * c, c * c + s * s * a, -c * a + s * s * c,
            -s, c * a, c * c * a]
    return np.stack(rows, axis=1)


def model(x, w):
    return np.sum(rot(x) @ w) + np.sum(rot(x * 2.0))


def _decorators(src):
    """{function name: its decorator line}."""
    lines = src.splitlines()
    return {t[4:].split("(")[0]: lines[k - 1] for k, t in enumerate(lines) if t.startswith("def ")}


def _prog(f, *args):
    return nb.lower(pb.jit(f, backend="numba").staged(*args).prog)


ARGS = (np.linspace(0.1, 1.0, 7), np.linspace(-1.0, 2.0, 9))


def test_only_the_entry_keeps_numbas_wrappers():
    prog = _prog(model, *ARGS)
    assert len(prog.funcs) >= 2, [f.name for f in prog.funcs]
    src, _, _ = nb._emit_par(prog, entry=prog.entry)
    decos = _decorators(src)
    names = nb.ps._Module(prog, True).fnames            # the program's functions' printed names
    entry = names[prog.entry]
    assert INTERNAL not in decos[entry]
    assert all(INTERNAL in decos[names[f.name]] for f in prog.funcs if f.name != prog.entry)
    # without a known entry (emit_prog: any function may be called) every function keeps them
    assert INTERNAL not in nb.emit_prog(prog)
    got = pb.jit(model, backend="numba")(*ARGS)
    assert got == pytest.approx(pb.jit(model, backend="interp")(*ARGS), rel=1e-13)


def test_a_callee_compiled_as_the_entry_keeps_them():
    prog = _prog(model, *ARGS)
    callee = next(f for f in prog.funcs if f.name != prog.entry)
    src, _, _ = nb._emit_par(prog, entry=callee.name)
    assert INTERNAL not in _decorators(src)[nb.ps._Module(prog, True).fnames[callee.name]]
    x = ARGS[0]
    out = nb.run(prog, x, fname=callee.name)
    np.testing.assert_allclose(out[0], rot(x), rtol=1e-13, atol=1e-15)


def _even(x, n):
    if n == 0:
        return x
    return _odd(x * 1.5, n - 1)


def _odd(x, n):
    if n == 0:
        return -x
    return _even(x + 0.5, n - 1)


def mutual(x, n):
    return _even(x, n)


def test_a_mutually_recursive_module_keeps_them():
    n = np.int64(5)
    prog = _prog(mutual, 0.3, n)
    src, _, _ = nb._emit_par(prog, entry=prog.entry)
    assert INTERNAL not in src
    assert pb.jit(mutual, backend="numba")(0.3, n) == pytest.approx(pb.jit(mutual, backend="interp")(0.3, n))


def test_a_parallel_maps_chunks_have_none():
    def f(xs):
        return np.sum(pb.map(lambda x: np.sum(np.tanh(x)), xs))

    xs = np.ones((64, 8))
    src = nb.emit_prog(nb.lower(pb.jit(f).staged(xs).prog, setting=True), parallel=True)
    assert INTERNAL in _decorators(src)["_pb_map0"]
    assert pb.jit(f, parallel=True)(xs) == pytest.approx(64 * 8 * np.tanh(1.0), rel=1e-13)
