"""Issue 8: `pullback cache info|clear`, the subcommand command line, and user
errors on the command line as one clear line (no traceback)."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from pullback.cli import main

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _main(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def user_file(tmp_path):
    p = tmp_path / "user.py"
    p.write_text("import numpy as np\n\ndef f(x):\n    return np.sum(np.sin(x) * x)\n")
    return p


# -- user errors ----------------------------------------------------------------------

@pytest.mark.parametrize("legacy", [True, False])
def test_missing_file(tmp_path, capsys, legacy):
    missing = str(tmp_path / "nope.py")
    argv = [missing, "f", "--args", "1.0"]
    rc, out, err = _main(capsys, *(argv if legacy else ["source"] + argv))
    assert rc == 2 and err.strip() == f"pullback: no such file: {missing}"


def test_syntax_error_in_the_users_file(tmp_path, capsys):
    p = tmp_path / "syn.py"
    p.write_text("import numpy as np\n\ndef f(x):\n    return x +\n")
    rc, out, err = _main(capsys, str(p), "f", "--args", "1.0")
    assert rc == 2 and err.count("\n") == 1
    assert f"{p}:4: syntax error" in err and "Traceback" not in err


def test_exception_while_the_users_file_runs(tmp_path, capsys):
    p = tmp_path / "boom.py"
    p.write_text("import numpy as np\nX = 1\nraise ValueError('bad config')\n")
    rc, out, err = _main(capsys, str(p), "f", "--args", "1.0")
    assert rc == 2 and err.count("\n") == 1
    assert f"{p}:3" in err and "ValueError: bad config" in err


@pytest.mark.parametrize("expr, what", [("np.ones(", "not a valid Python expression"),
                                        ("undefined_name(3)", "NameError"),
                                        ("np.ones(-1)", "ValueError")])
def test_bad_args_expression(user_file, capsys, expr, what):
    rc, out, err = _main(capsys, "source", str(user_file), "f", "--args", expr)
    assert rc == 2 and err.count("\n") == 1 and what in err and "--args" in err


def test_missing_function(user_file, capsys):
    rc, out, err = _main(capsys, str(user_file), "g", "--args", "1.0")
    assert rc == 2 and err.strip() == f"pullback: {user_file} defines no function 'g' (it defines: f)"


def test_not_a_function(tmp_path, capsys):
    p = tmp_path / "val.py"
    p.write_text("g = 3\n")
    rc, out, err = _main(capsys, str(p), "g", "--args", "1.0")
    assert rc == 2 and "is a int, not a function" in err


def test_both_forms_print_the_same_source(user_file, capsys):
    rc1, out1, _ = _main(capsys, str(user_file), "f", "--args", "np.ones(3)")
    rc2, out2, _ = _main(capsys, "source", str(user_file), "f", "--args", "np.ones(3)")
    assert rc1 == rc2 == 0 and out1 == out2 and "x_adj" in out1


def test_help_names_the_commands(capsys):
    with pytest.raises(SystemExit) as ei:
        main(["--help"])
    out = capsys.readouterr().out
    assert ei.value.code == 0
    assert "source FILE FUNC" in out and "cache info" in out and "cache clear" in out


# -- pullback cache info | clear ------------------------------------------------------------

def _populate(monkeypatch, cache):
    pytest.importorskip("numba")
    import pullback as pb
    from pullback.backends import numba_backend

    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(cache))

    def cli_cached(x):
        return np.sum(np.sqrt(x) * 1.5)

    x = np.ones(2)
    fn = numba_backend.compile_prog(pb.jit(cli_cached).staged(x).prog)
    assert fn(x)[0] == pytest.approx(3.0)
    return fn


def test_cache_info_and_clear(tmp_path, monkeypatch, capsys):
    cache = tmp_path / "cache"
    fn = _populate(monkeypatch, cache)
    other = cache / "numba" / "notes.txt"   # not pullback's: must survive a clear
    other.write_text("mine")
    files = [p for p in (cache / "numba").rglob("pb_*") if p.is_file()]
    size = sum(p.stat().st_size for p in files)

    rc, out, err = _main(capsys, "cache", "info")
    assert rc == 0, err
    assert f"location: {cache}" in out and "entries:  1 compiled modules" in out
    assert f"({len(files)} files)" in out and "status" not in out
    assert len(files) >= 4 and any(p.suffix == ".nbc" for p in files)

    rc, out, err = _main(capsys, "cache", "clear")
    assert rc == 0, err
    assert f"removed 1 entries ({len(files)} files" in out and str(cache) in out
    assert not [p for p in cache.rglob("pb_*")] and other.read_text() == "mine"
    rc, out, err = _main(capsys, "cache", "info")
    assert "entries:  0 compiled modules (0 files)" in out and "size:     0 bytes" in out
    assert size > 0 and fn(np.ones(2))[0] == pytest.approx(3.0)  # the loaded code keeps working


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_cache_info_reports_a_refused_directory(tmp_path, monkeypatch, capsys):
    d = tmp_path / "shared"
    d.mkdir()
    d.chmod(0o777)
    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(d))
    rc, out, err = _main(capsys, "cache", "info")
    assert rc == 0 and "status:   refused" in out and "writable by group and others" in out


def test_cache_info_of_a_cache_not_made_yet(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(tmp_path / "later"))
    rc, out, err = _main(capsys, "cache", "info")
    assert rc == 0 and "(not created yet)" in out and "entries:  0" in out
    assert not (tmp_path / "later").exists()  # info creates nothing


def test_cache_command_from_the_shell(tmp_path):
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "", "PULLBACK_CACHE_DIR": str(tmp_path / "c"),
           "HOME": str(tmp_path)}
    p = subprocess.run([sys.executable, "-m", "pullback", "cache", "info"], capture_output=True, text=True,
                       env=env, timeout=120)
    assert p.returncode == 0 and f"location: {tmp_path / 'c'}" in p.stdout, p.stderr
