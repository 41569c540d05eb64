"""The examples a newcomer runs first, and the command-line tool, keep working."""
import pathlib
import runpy
import subprocess
import sys

import numpy as np
import pytest

import pullback as pb

ROOT = pathlib.Path(__file__).resolve().parents[1]
# examples that take a command line are run with their own arguments elsewhere
# (tests/test_treelstm.py runs examples/treelstm.py with its QUICK arguments)
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.py") if p.stem != "treelstm")


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(path, capsys):
    runpy.run_path(str(path), run_name="__main__")  # each example asserts its own comparisons
    assert capsys.readouterr().out


@pytest.mark.parametrize("command", [[], ["source"]], ids=["file-first", "source"])
def test_cli_prints_derivative_source(tmp_path, command):
    src = tmp_path / "user.py"
    src.write_text("import numpy as np\n\ndef f(x):\n    y = np.sin(x) * x\n    return np.sum(y)\n")
    env_path = str(ROOT / "src")
    for mode, marker in (("rev", "x_adj"), ("fwd", "x_tan")):
        out = subprocess.run([sys.executable, "-m", "pullback", *command, str(src), "f", "--args", "np.ones(3)",
                              "--mode", mode],
                             capture_output=True, text=True, env={"PYTHONPATH": env_path, "PATH": ""}, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        assert marker in out.stdout and "user.py:4" in out.stdout


def test_cli_reports_user_errors(tmp_path):
    src = tmp_path / "bad.py"
    src.write_text("def f(x):\n    try:\n        return x\n    except Exception:\n        return x\n")
    out = subprocess.run([sys.executable, "-m", "pullback", str(src), "f", "--args", "1.0"],
                         capture_output=True, text=True, env={"PYTHONPATH": str(ROOT / "src"), "PATH": ""})
    assert out.returncode == 1
    assert "bad.py:2" in out.stderr and "Traceback" not in out.stderr


def test_derived_functions_are_shared_within_a_program():
    from pullback.frontend import stage

    st = stage(_twice_grad, (0.3,))
    names = [f.name for f in st.prog.funcs]
    assert sum(1 for n in names if "vjp" in n) == 1, names
    assert np.isclose(pb.jit(_twice_grad)(0.3), np.cos(0.3) + np.cos(0.6))


def _inner(x):
    return np.sin(x)


def _twice_grad(x):
    return pb.grad(_inner)(x) + pb.grad(_inner)(2.0 * x)
