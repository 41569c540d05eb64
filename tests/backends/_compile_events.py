"""Shared check of the compile-time tests: which functions numba compiles in a
fresh process (its `numba:compile` events), when a module of the test's source
is compiled there from an empty cache. Library functions that numba compiles
once per process (string formatting of error messages) show only this way."""
import os
import subprocess
import sys

_SCRIPT = """
import numpy as np, pullback as pb
from numba.core import event
names = []
class L(event.Listener):
    def on_start(self, e):
        names.append(str(getattr(e.data["dispatcher"], "__qualname__", "")))
    def on_end(self, e):  # numba's Listener requires both hooks; only starts are counted
        return None
event.register("numba:compile", L())
from events_mod import *
{call}
print("|".join(names))
"""


def compiled_names(tmp_path, module_src: str, call: str) -> list[str]:
    """The qualified names numba compiles while a new process imports `module_src`
    (as `events_mod`, star-imported) and runs the statement `call`."""
    (tmp_path / "events_mod.py").write_text(module_src)
    (tmp_path / "run.py").write_text(_SCRIPT.format(call=call))
    env = dict(os.environ, PULLBACK_CACHE_DIR=str(tmp_path / "cache"), PULLBACK_TIERED="0")
    out = subprocess.run([sys.executable, str(tmp_path / "run.py")], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1].split("|")


def formatting(names: list[str]) -> list[str]:
    """The names among `names` that belong to numba's error-message formatting."""
    return [n for n in names if any(k in n for k in ("raise_with_shape_context", "integer_str", "check_axis_bounds",
                                                      "unicode_concat"))]
