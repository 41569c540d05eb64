"""Issue 8, section 3: nothing user-controlled reaches generated code unescaped.
Before the fix a source file whose name contained a newline ran arbitrary
code when its gradient was taken (the provenance comments printed the name
raw), and function and parameter names went into docstrings raw. Here file
paths, source text, function names (`__name__`, `__qualname__`), IR function
and variable names, and pytree dict keys carry payloads that would set an
environment variable if they ever ran; the payload must never run, the code
must parse to nothing but pullback's own statements, and results stay right."""
import ast
import importlib.util
import os

import numpy as np
import pytest

import pullback as pb
from pullback.backends import interp, pysource
from pullback.ir.core import (
    Apply,
    Body,
    ForForm,
    Func,
    Let,
    Loop,
    Prim,
    Prog,
    SrcLoc,
    Var,
)
from pullback.ir.types import TensorType

SENTINEL = "PB_PWNED"
CODE = f'import os; os.environ["{SENTINEL}"] = "1"'
PAYLOADS = [
    f"x\n{CODE}\n#",
    f"x\r{CODE}\r#",
    f'x"""\n{CODE}\n"""',
    f"x'''\n{CODE}\n'''",
    f"x\\\n{CODE}\n",
    f"x\x0c\n{CODE}\x0b\x1c\x1d\x1e\x85\u2028\u2029\n#",
    f"x\u2028{CODE}\u2029#\x00",
]
# file names cannot hold "/" or NUL
FILE_PAYLOADS = [p.replace("/", "_").replace("\x00", "_") for p in PAYLOADS]


@pytest.fixture(autouse=True)
def _no_sentinel():
    os.environ.pop(SENTINEL, None)
    yield
    assert SENTINEL not in os.environ, "a payload ran"


_ALLOWED_IMPORTS = {"numpy", "numba", "numba.typed", "pullback.backends", "pullback.ir.types",
                    "pullback.backends.numba_alloc", "pullback.backends.numba_select",
                    "pullback.backends.numba_bmm", "pullback.backends.numba_bits",
                    "pullback.backends.numba_parfor", "pullback.backends.numba_views"}


def _assert_clean(src: str):
    """The source parses, and holds only pullback's kinds of statements: no
    import but its own, no name or attribute the payload would use."""
    tree = ast.parse(src)
    for node in tree.body:
        assert isinstance(node, (ast.Expr, ast.Import, ast.ImportFrom, ast.Assign, ast.FunctionDef)), ast.dump(node)
        if isinstance(node, ast.Expr):
            assert isinstance(node.value, ast.Constant) and node is tree.body[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            assert {a.name for a in node.names} <= _ALLOWED_IMPORTS, ast.dump(node)
        if isinstance(node, ast.ImportFrom):
            assert node.module in _ALLOWED_IMPORTS, ast.dump(node)
        assert not (isinstance(node, ast.Name) and node.id in ("os", "exec", "eval", "__import__")), ast.dump(node)
        assert not (isinstance(node, ast.Attribute) and node.attr == "environ"), ast.dump(node)
        if isinstance(node, ast.FunctionDef):  # at most a docstring, then no other bare expression
            if node.name.startswith("_st_"):   # the emitter's store helpers have no docstring
                assert not any(isinstance(n, ast.Expr) for n in node.body), ast.dump(node)
                continue
            assert isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
            assert not any(isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) for n in node.body[1:])


# -- hand-built IR: every name and location hostile ------------------------------------

def _hostile_prog(p: str) -> Prog:
    """f(x, idx) = sum over k < 3 of g(x[idx[k]]) with g(y) = sin(y) * y, every
    function, variable and location carrying payload `p`."""
    f64, v3, i3, i64 = TensorType("f64"), TensorType("f64", (5,)), TensorType("i64", (3,)), TensorType("i64")
    loc = SrcLoc(f"/tmp/{p}/{p}.py", 7, p, p)
    y, s, t = Var(p, f64), Var(p + "s", f64), Var(p + "t", f64)
    g = Func(p + "g", (y,), Body((Let((s,), Prim("sin", (y,)), loc),
                                  Let((t,), Prim("mul", (s, y)), loc)), (t,)), (f64,), loc=loc)
    x, idx, k, acc = Var(p + "x", v3), Var(p + "i", i3), Var(p + "k", i64), Var(p + "acc", f64)
    j, xi, gv, acc2, out = Var(p + "j", i64), Var(p + "xi", f64), Var(p + "gv", f64), Var(p + "a2", f64), Var(p, f64)
    from pullback.ir.core import Const

    body = Body((Let((j,), Prim("index", (idx, k), (("spec", (("d",),)),)), loc),
                 Let((xi,), Prim("index", (x, j), (("spec", (("d",),)),)), loc),
                 Let((gv,), Apply(p + "g", (xi,)), loc),
                 Let((acc2,), Prim("add", (acc, gv)), loc)), (acc2,))
    loop = Loop((acc,), (Const(0.0, f64),), ForForm(k, Const(3, i64)), body)
    f = Func(p + "f", (x, idx), Body((Let((out,), loop, loc),), (out,)), (f64,), loc=loc)
    return Prog((g, f), p + "f")


def _want(x, idx):
    return sum(np.sin(x[i]) * x[i] for i in idx)


X = np.array([0.5, -1.0, 2.0, 0.3, 1.5])
IDX = np.array([4, 0, -2])


@pytest.mark.parametrize("p", PAYLOADS, ids=range(len(PAYLOADS)))
def test_hand_built_ir_pysource(p):
    prog = _hostile_prog(p)
    src = pysource.emit_prog(prog)
    _assert_clean(src)
    assert pysource.run(prog, X, IDX)[0] == pytest.approx(_want(X, IDX))
    assert interp.run(prog, X, IDX)[0] == pytest.approx(_want(X, IDX))
    # the check site and the error message carry the hostile location as data only
    from pullback.backends.checks import IndexOutOfBoundsError

    with pytest.raises(IndexOutOfBoundsError):
        pysource.run(prog, X, np.array([0, 9, 1]))


@pytest.mark.parametrize("p", PAYLOADS, ids=range(len(PAYLOADS)))
def test_hand_built_ir_derivatives_and_numba_source(p):
    pytest.importorskip("numba")
    from pullback.backends import numba_backend
    from pullback.passes.jvp import jvp_prog
    from pullback.passes.vjp import vjp_prog

    prog = _hostile_prog(p)
    _assert_clean(numba_backend.emit_prog(prog))
    for make in (vjp_prog, jvp_prog):
        d, name = make(prog)
        d = d.with_funcs(d.funcs, entry=name)
        _assert_clean(pysource.emit_prog(d))
        _assert_clean(numba_backend.emit_prog(d))
    d, name = vjp_prog(prog)
    d = d.with_funcs(d.funcs, entry=name)
    got = pysource.run(d, X, IDX, 1.0)
    want = interp.run(d, X, IDX, 1.0)
    assert got[0] == pytest.approx(want[0])
    np.testing.assert_allclose(got[1], want[1])


def test_hand_built_ir_runs_on_numba(tmp_path, monkeypatch):
    pytest.importorskip("numba")
    from pullback.backends import numba_backend

    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(tmp_path / "cache"))
    from pullback.errors import IRError

    prog = _hostile_prog(PAYLOADS[2] + PAYLOADS[0])
    try:
        got = numba_backend.run(prog, X, IDX)[0]
    except IRError:  # the cache key prints the IR, whose printer refuses non-identifier names
        return
    assert got == pytest.approx(_want(X, IDX))


# -- real files and functions through the public API -------------------------------------

SRC = "\n".join([
    "import numpy as np",
    "",
    "",
    "def helper(v):",
    "    # a comment with \"\"\" and \\\\ and \'\'\' in the source line",
    "    return np.sin(v) * v  # \"\"\" \'\'\' \\\\ \x0c",
    "",
    "",
    "def f(x, n):",
    "    s = 0.0",
    "    for i in range(n):",
    "        s += helper(x[i])",
    "    return s",
    "",
])


def _import(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


XF = np.array([0.5, -1.0, 2.0])
WANT_G = np.cos(XF) * XF + np.sin(XF)


@pytest.mark.parametrize("fp", FILE_PAYLOADS, ids=range(len(FILE_PAYLOADS)))
def test_hostile_file_path(tmp_path, fp):
    d = tmp_path / fp
    d.mkdir()
    path = d / (fp + ".py")
    path.write_text(SRC)
    mod = _import(str(path), "hostile_path_prog")
    for mode in ("rev", "fwd"):
        _assert_clean(pb.derivative_source(mod.f, XF, 3, mode=mode))
    np.testing.assert_allclose(pb.grad(mod.f, backend="pysource")(XF, 3), WANT_G)
    np.testing.assert_allclose(pb.grad(mod.f, backend="interp")(XF, 3), WANT_G)


def test_hostile_file_path_numba(tmp_path, monkeypatch):
    pytest.importorskip("numba")
    from pullback.backends import numba_backend
    from pullback.frontend import stage
    from pullback.passes.vjp import vjp_prog

    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(tmp_path / "cache"))
    fp = FILE_PAYLOADS[0] + FILE_PAYLOADS[2]
    (tmp_path / fp).mkdir()
    path = tmp_path / fp / (fp + ".py")
    path.write_text(SRC)
    mod = _import(str(path), "hostile_path_prog_nb")
    prog = stage(mod.f, (XF, 3)).prog
    d, name = vjp_prog(prog)
    _assert_clean(numba_backend.emit_prog(prog))
    _assert_clean(numba_backend.emit_prog(d.with_funcs(d.funcs, entry=name)))
    np.testing.assert_allclose(pb.grad(mod.f, backend="numba")(XF, 3), WANT_G)


@pytest.mark.parametrize("p", PAYLOADS[:4], ids=range(4))
def test_hostile_function_names_and_dict_keys(p):
    def helper(v):
        return np.sin(v) * v

    def f(params, n):
        s = 0.0
        for i in range(n):
            s += helper(params[p][i]) * params["b"]
        return s

    for fn in (helper, f):
        fn.__name__ = p
        fn.__qualname__ = p + ".<locals>." + p
    params = {p: XF, "b": 2.0}
    for mode in ("rev", "fwd"):
        _assert_clean(pb.derivative_source(f, params, 3, mode=mode))
    for backend in ("pysource", "interp"):
        g = pb.grad(f, backend=backend)(params, 3)
        assert set(g) == {p, "b"}
        np.testing.assert_allclose(g[p], 2.0 * WANT_G)
        assert g["b"] == pytest.approx(np.sum(np.sin(XF) * XF))


def test_unicode_local_names(tmp_path):
    """Identifiers Python accepts but generated code must not use raw (non-ASCII);
    distinct ones stay distinct."""
    path = tmp_path / "unicode_prog.py"
    path.write_text("import numpy as np\n\n\n"
                    "def f(x):\n"
                    "    é = x * 2.0\n"
                    "    e_ = é + 1.0\n"
                    "    ε = np.sin(é) * e_\n"
                    "    return np.sum(ε)\n", encoding="utf-8")
    f = _import(str(path), "unicode_prog").f
    want = 2 * np.cos(2 * XF) * (2 * XF + 1) + 2 * np.sin(2 * XF)
    src = pb.derivative_source(f, XF)
    _assert_clean(src)
    assert src.isascii()
    np.testing.assert_allclose(pb.grad(f, backend="pysource")(XF), want)
