"""Issue 8, section 2: the numba backend's disk cache verifies every file before it
is executed or unpickled, recovers from any damage with a warning, and refuses
an unsafe or unusable cache directory (note [numba-cache-safety])."""
import hashlib
import json
import os
import pathlib
import stat
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

pytest.importorskip("numba")

from pullback.backends import numba_backend, numba_cache  # noqa: E402
from pullback.backends.numba_cache import CacheWarning  # noqa: E402

_SRC = str(pathlib.Path(__file__).resolve().parents[2] / "src")

# A first process fills the cache with one entry per case; each case damages one
# file of its own entry; a second process must give the right numbers for all of
# them, warn about exactly the damaged ones and never run injected code; a third
# finds the repaired entries clean.
_KINDS = ("module", "nbi", "nbc", "manifest")
_MODES = ("truncate", "empty", "garbage", "append")
_CASES = [f"{k}-{m}" for k in _KINDS for m in _MODES] + ["nbi-and-manifest", "control"]

_CHILD = textwrap.dedent("""
    import json, sys, warnings
    import numpy as np
    sys.path.insert(0, {src!r})
    import pullback as pb
    from pullback.backends import numba_backend
    from pullback.backends.numba_cache import CacheWarning
    N = {n}
    {funcs}
    out = []
    x = np.linspace(0.1, 0.9, 5)
    for k in range(N):
        f = globals()[f"f{{k}}"]
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            fn = numba_backend.compile_prog(pb.jit(f).staged(x).prog)
            val = float(fn(x)[0])
        msgs = [str(w.message) for w in ws if issubclass(w.category, CacheWarning)]
        out.append({{"path": fn.path, "value": val, "hit": fn.cache_hit, "warnings": msgs}})
        for m in msgs:
            print("CacheWarning:", m, file=sys.stderr)
    print(json.dumps(out))
""")

_FUNC = """
    def f{k}(x):
        s = 0.0
        for i in range(x.shape[0]):
            s = s + np.sin(x[i]) * {c}
        return s
"""


def _expected(k):
    return float(np.sum(np.sin(np.linspace(0.1, 0.9, 5))) * (k + 1.5))


def _run(child, env):
    p = subprocess.run([sys.executable, str(child)], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr


def _damage(path: pathlib.Path, mode: str, marker: pathlib.Path):
    data = path.read_bytes()
    assert data, path
    if mode == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif mode == "empty":
        path.write_bytes(b"")
    elif mode == "garbage":
        path.write_bytes(bytes((7 * i + 3) % 256 for i in range(len(data))))
    elif mode == "append":
        path.write_bytes(data + f"\nopen({str(marker)!r}, 'w').write('ran')\n".encode())


def _numba_files(entry: pathlib.Path, kind: str):
    base = entry.stem  # pb_<hash>
    found = sorted((entry.parent / "__pycache__").glob(f"{base}.*.{kind}"))
    assert found, (entry, kind)
    return found


def test_damaged_cache_files_are_discarded_with_a_warning(tmp_path):
    """One kind of damage per kind of file (the full matrix is the slow test below)."""
    _roundtrip(tmp_path, ["module-append", "nbi-garbage", "nbc-truncate", "manifest-empty", "control"])


@pytest.mark.slow
def test_every_damage_to_every_cache_file_is_recovered(tmp_path):
    _roundtrip(tmp_path, _CASES)


def _roundtrip(tmp_path, cases):
    child = tmp_path / "child.py"
    funcs = "".join(textwrap.dedent(_FUNC).format(k=k, c=k + 1.5) for k in range(len(cases)))
    child.write_text(_CHILD.format(src=_SRC, n=len(cases), funcs=funcs))
    env = dict(os.environ, PULLBACK_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("NUMBA_CACHE_DIR", None)
    first, _ = _run(child, env)
    assert all(not r["warnings"] and not r["hit"] for r in first), first
    marker = tmp_path / "INJECTED"
    for case, r in zip(cases, first):
        entry = pathlib.Path(r["path"])
        manifest = entry.with_name(entry.stem + ".manifest.json")
        assert manifest.exists() and json.loads(manifest.read_text())["files"]
        kind, _, mode = case.partition("-")
        if case == "control":
            continue
        if case == "nbi-and-manifest":
            # a load error the manifest cannot see: the file and its hash both rewritten
            nbi = _numba_files(entry, "nbi")[0]
            nbi.write_bytes(b"not a pickle" * 10)
            m = json.loads(manifest.read_text())
            m["files"][str(nbi)] = hashlib.sha256(nbi.read_bytes()).hexdigest()
            manifest.write_text(json.dumps(m))
            continue
        target = {"module": [entry], "manifest": [manifest]}.get(kind) or _numba_files(entry, kind)
        for t in target:
            _damage(t, mode, marker)

    second, stderr = _run(child, env)
    assert not marker.exists(), "code appended to a cached file ran"
    for k, (case, r) in enumerate(zip(cases, second)):
        assert r["value"] == pytest.approx(_expected(k), rel=1e-12), case
        if case == "control":
            assert r["hit"] and not r["warnings"], r
        else:
            assert r["warnings"] and not r["hit"], (case, r)
    assert "CacheWarning" in stderr

    third, _ = _run(child, env)
    for k, (case, r) in enumerate(zip(cases, third)):
        assert r["hit"] and not r["warnings"] and r["value"] == pytest.approx(_expected(k), rel=1e-12), (case, r)
    assert not marker.exists()


def test_files_written_are_owner_only(tmp_path, monkeypatch):
    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    import pullback as pb

    def owner_only(x):
        return np.sum(np.cos(x) * 1.25)

    x = np.ones(3)
    fn = numba_backend.compile_prog(pb.jit(owner_only).staged(x).prog)
    assert fn(x)[0] == pytest.approx(3 * np.cos(1.0) * 1.25)
    mdir = tmp_path / "c" / "numba"
    files = [p for p in mdir.rglob("*") if p.is_file()]
    assert any(p.suffix == ".nbc" for p in files) and any(p.name.endswith(".manifest.json") for p in files)
    for p in [tmp_path / "c", mdir, mdir / "__pycache__"] + files:
        mode = stat.S_IMODE(p.stat().st_mode)
        assert mode & 0o077 == 0, (p, oct(mode))


# -- the cache directory ----------------------------------------------------------------

def _root_with(monkeypatch, value):
    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(value))
    numba_cache._WARNED.clear()
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        got = numba_cache.root()
    return got, [str(w.message) for w in ws if issubclass(w.category, CacheWarning)]


def _is_private(path):
    st = os.stat(path)
    return stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.getuid()


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702])
def test_group_or_world_writable_root_is_refused(tmp_path, monkeypatch, mode):
    d = tmp_path / "shared"
    d.mkdir()
    d.chmod(mode)
    got, msgs = _root_with(monkeypatch, d)
    assert got != str(d) and _is_private(got) and _is_private(os.path.join(got, "numba"))
    assert len(msgs) == 1 and str(d) in msgs[0] and "writable by" in msgs[0]


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_world_writable_numba_subfolder_is_refused(tmp_path, monkeypatch):
    (tmp_path / "c" / "numba").mkdir(parents=True)
    (tmp_path / "c" / "numba").chmod(0o777)
    got, msgs = _root_with(monkeypatch, tmp_path / "c")
    assert got != str(tmp_path / "c") and _is_private(got)
    assert msgs and "numba" in msgs[0]


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to chown")
def test_root_owned_by_someone_else_is_refused(tmp_path, monkeypatch):
    d = tmp_path / "theirs"
    d.mkdir(mode=0o700)
    os.chown(d, 12345, 12345)
    got, msgs = _root_with(monkeypatch, d)
    assert got != str(d) and _is_private(got)
    assert msgs and "owned by uid 12345" in msgs[0]


def test_unusable_root_falls_back_with_a_clear_warning(tmp_path, monkeypatch):
    f = tmp_path / "a_file"
    f.write_text("x")
    for bad in (f, f / "below_a_file"):
        got, msgs = _root_with(monkeypatch, bad)
        assert got != str(bad) and os.path.isdir(got)
        assert len(msgs) == 1 and str(bad) in msgs[0]
        assert "not a directory" in msgs[0] or "cannot be created" in msgs[0]


def test_a_private_root_is_used_silently(tmp_path, monkeypatch):
    got, msgs = _root_with(monkeypatch, tmp_path / "fresh" / "cache")
    assert got == str(tmp_path / "fresh" / "cache") and not msgs
    assert _is_private(got) and _is_private(os.path.join(got, "numba"))


def test_refused_root_still_compiles_and_runs(tmp_path, monkeypatch):
    import pullback as pb

    f = tmp_path / "not_a_dir"
    f.write_text("")
    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(f))
    numba_cache._WARNED.clear()

    def refused_root(x):
        return np.sum(x * x * 0.75)

    x = np.arange(3.0)
    with pytest.warns(CacheWarning, match="not a directory"):
        fn = numba_backend.compile_prog(pb.jit(refused_root).staged(x).prog)
    assert fn(x)[0] == pytest.approx(0.75 * 5.0)
    assert fn.path.startswith(numba_cache._private_root())


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_numba_cache_dir_elsewhere_is_verified_and_vetted(tmp_path):
    """With NUMBA_CACHE_DIR set, numba's files live there: they are under the
    manifest too, and an unsafe NUMBA_CACHE_DIR means no disk cache (a warning)."""
    child = tmp_path / "child.py"
    child.write_text(_CHILD.format(src=_SRC, n=1, funcs=textwrap.dedent(_FUNC).format(k=0, c=1.5)))
    ncache = tmp_path / "ncache"
    env = dict(os.environ, PULLBACK_CACHE_DIR=str(tmp_path / "cache"), NUMBA_CACHE_DIR=str(ncache))
    (first,), _ = _run(child, env)
    assert not first["hit"] and not first["warnings"]
    nbi = sorted(ncache.rglob("pb_*.nbi"))
    assert nbi and not list((tmp_path / "cache" / "numba").rglob("*.nbi"))
    manifest = json.loads(pathlib.Path(first["path"]).with_suffix(".manifest.json").read_text())
    assert str(nbi[0]) in manifest["files"]
    nbi[0].write_bytes(nbi[0].read_bytes() + b"tampered")
    (second,), _ = _run(child, env)
    assert second["value"] == pytest.approx(_expected(0), rel=1e-12)
    assert not second["hit"] and any("does not match" in w for w in second["warnings"])
    ncache.chmod(0o777)
    (third,), _ = _run(child, env)
    assert third["value"] == pytest.approx(_expected(0), rel=1e-12)
    assert not third["hit"] and any("without numba's disk cache" in w for w in third["warnings"])
