"""Calls and tuples of more than 30 items in numba code (`numba_wide`, note [wide-tuples]):
CPython 3.11 compiles them with LIST_TO_TUPLE, which numba cannot read. A parallel map
whose body reads more than 30 values printed such calls (GradBench ht's Jacobian failed to
compile with the parallel setting left automatic on a multi-core machine)."""
import ast
import dis

import numpy as np
import pytest

pytest.importorskip("numba")

import pullback as pb  # noqa: E402
from pullback.backends import numba_backend as nb  # noqa: E402
from pullback.backends.numba_wide import WIDE, widen  # noqa: E402

pytestmark = pytest.mark.usefixtures("private_cache")   # conftest.py

NAMES = [f"a{i}" for i in range(WIDE + 7)]


def opcodes(src):
    out = set()

    def walk(code):
        out.update(i.opname for i in dis.get_instructions(code))
        for c in code.co_consts:
            if hasattr(c, "co_code"):
                walk(c)
    walk(compile(src, "<generated>", "exec"))
    return out


def run(src, **env):
    ns = dict(env)
    exec(compile(src, "<generated>", "exec"), ns)
    return ns


WIDE_LINES = {
    "call": f"r = g({', '.join(NAMES)})",
    "return": f"def h({', '.join(NAMES)}):\n    return {', '.join(NAMES)}  # the results",
    "assign": f"def h(x):\n    {', '.join('b' + n for n in NAMES)} = {', '.join(f'x + {i}' for i in range(len(NAMES)))}\n"
              f"    return b{NAMES[-1]}",
    "nested": f"r = g(1, g({', '.join(NAMES)}), ({', '.join(NAMES)}))",
}


@pytest.mark.parametrize("case", sorted(WIDE_LINES))
def test_widened_text_has_no_list_to_tuple_and_same_meaning(case):
    src = WIDE_LINES[case]
    assert "LIST_TO_TUPLE" in opcodes(src)   # the form numba cannot read
    out = widen(src)
    assert "LIST_TO_TUPLE" not in opcodes(out), out
    env = {"g": lambda *a: sum(x if isinstance(x, int) else sum(x) for x in a)} | {n: i for i, n in enumerate(NAMES)}
    if case in ("call", "nested"):
        assert run(out, **env)["r"] == run(src, **env)["r"]
    elif case == "return":
        assert run(out)["h"](*range(len(NAMES))) == tuple(range(len(NAMES)))
        assert out.endswith("  # the results")   # trailing comments are kept
    else:
        assert run(out)["h"](1.0) == run(src)["h"](1.0)


def test_narrow_and_unparsable_lines_are_left_alone():
    narrow = "r = g(" + ", ".join(NAMES[:WIDE]) + ")  # keep (me)"
    assert widen(narrow) == narrow and "LIST_TO_TUPLE" not in opcodes(narrow)
    header = f"for i in range({', '.join(NAMES)}):"   # not a statement on its own
    assert widen(header) == header
    text = "x = '" + ", " * 40 + "'"                     # commas in a string
    assert widen(text) == text


def test_widened_calls_compile_in_numba():
    from numba import njit

    src = widen(f"def g({', '.join(NAMES)}):\n    return {' + '.join(NAMES)}\n"
                f"def f(x):\n    return g({', '.join(f'x[{i}]' for i in range(len(NAMES)))})\n")
    ast.parse(src)
    ns = run(src)
    g = njit(ns["g"])
    ns["g"] = g
    f = njit(ns["f"])
    x = np.arange(float(len(NAMES)))
    assert f(x) == x.sum()


def _many(x):
    ws = [np.sin(x * (k + 1)) for k in range(WIDE // 2 + 2)]   # the map body reads each of them

    def row(r):
        acc = r * 0.0
        for w in ws:
            acc = acc + w[0] * r
        return acc
    return pb.vmap(row)(x.reshape(-1, 4)).sum()


def test_parallel_map_reading_many_values_compiles():
    x = np.linspace(0.1, 1.0, 400 * 4)
    staged = pb.jit(pb.grad(_many), backend="numba").staged(x)   # the adjoint's map reads more
    src = nb.emit_prog(nb.lower(staged.prog), parallel=True)
    assert "_pb_parallel_for(" in src and "LIST_TO_TUPLE" not in opcodes(src)
    assert max(ln.count(",") for ln in src.splitlines() if "def _pb_map" in ln) > WIDE
    want = pb.jit(_many, backend="interp")(x)
    np.testing.assert_allclose(pb.jit(_many, backend="numba", parallel=True)(x), want, rtol=1e-12)
    g = pb.grad(_many, backend="numba", parallel=True)(x)
    np.testing.assert_allclose(g, pb.grad(_many, backend="interp")(x), rtol=1e-10, atol=1e-12)
