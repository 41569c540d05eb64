"""The numba backend's on-disk cache: where it lives, whether it may be used, and
the verification of every cached file before it is executed or unpickled
(note [numba-cache-safety] in docs/design.md).

Contract:
- `root()`: the cache root, ``$PULLBACK_CACHE_DIR`` or ``~/.cache/pullback``.
  It and its ``numba`` subfolder must be directories owned by the current user
  and writable by no one else. A root that is unsafe (another owner, group- or
  world-writable) or unusable (a regular file, not creatable, not writable) is
  refused with a `CacheWarning` (once per process and reason) and replaced by a
  private temporary directory (mode 0o700, removed at exit). Never
  `NotADirectoryError` or `PermissionError`.
- `module_dir()`: ``root()/numba``, which holds the generated modules
  ``pb_<hash>.py``, their manifests ``pb_<hash>.manifest.json`` and lock files.
  Numba keeps its index (``.nbi``) and data (``.nbc``) files, whose names start
  with ``pb_<hash>.``, in its own cache path (``module_dir()/__pycache__``
  unless ``NUMBA_CACHE_DIR`` is set); `unsafe_reason` vets that path too.
- `Entry(dir, hash, src)`: one cached module. `write_module()` writes the
  module, or compares the file's bytes with `src` and rewrites it when they
  differ (the module is executed from the in-memory source, never from the
  file). `verify(ndir)` checks numba's files of the entry against the manifest
  (sha256 of each file), `discard(ndir)` deletes them and the manifest,
  `record(ndir)` makes numba's new files 0o600 and rewrites the manifest.
  `lock()` serialises these steps between processes (``flock``).
- Every directory made here is 0o700; every file written here is written
  atomically (a temporary file in the same directory, then ``os.replace``),
  mode 0o600 (`atomic_write`).
- `info()` and `clear()` back ``pullback cache info|clear``: location, size
  and number of entries; clearing removes only pullback's files (names starting
  with ``pb_``), never the directory's other contents.

Security boundary: the ownership and permission checks. Hashes in a manifest
catch corruption and tampering by anyone who cannot write the cache directory;
a same-user attacker who rewrites both a file and its manifest is out of scope
(such an attacker can already edit the user's code).
"""
from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import shutil
import stat
import tempfile
import threading
import warnings


class CacheWarning(UserWarning):
    """The cache (or one entry of it) was refused or discarded; pullback went on
    with a fresh compile or a private temporary cache."""


_POSIX = os.name == "posix" and hasattr(os, "getuid")
_STATE_LOCK = threading.Lock()
_PRIVATE: list[str] = []      # the private fallback root, made on first need
_WARNED: set = set()
_NUMBA_EXT = (".nbi", ".nbc")


def warn(msg: str) -> None:
    warnings.warn(msg, CacheWarning, stacklevel=3)


def _warn_once(key, msg: str) -> None:
    with _STATE_LOCK:
        if key in _WARNED:
            return
        _WARNED.add(key)
    warn(msg)


def configured_root() -> str:
    """The root the user asked for (it may be refused by `root()`)."""
    d = os.environ.get("PULLBACK_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "pullback")
    return os.path.abspath(d)


def unsafe_reason(path: str) -> str | None:
    """Why the existing directory `path` may not hold cached code, or None."""
    try:
        st = os.stat(path)
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if _POSIX:
        if st.st_uid != os.getuid():
            return f"is owned by uid {st.st_uid}, not by the current user (uid {os.getuid()})"
        if st.st_mode & 0o022:
            who = " and ".join(w for w, bit in (("group", 0o020), ("others", 0o002)) if st.st_mode & bit)
            return f"is writable by {who} (mode {stat.S_IMODE(st.st_mode):o})"
    if not os.access(path, os.W_OK | os.X_OK):
        return "is not writable"
    return None


def _ensure_dir(path: str) -> str | None:
    """Make `path` (0o700) if missing; why it cannot hold the cache, or None."""
    if os.path.lexists(path) and not os.path.isdir(path):
        return "is not a directory"
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError as e:
        return f"cannot be created ({e.strerror or e})"
    return unsafe_reason(path)


def _private_root() -> str:
    with _STATE_LOCK:
        if not _PRIVATE:
            d = tempfile.mkdtemp(prefix="pullback-cache-")   # mode 0o700
            os.makedirs(os.path.join(d, "numba"), mode=0o700)
            atexit.register(shutil.rmtree, d, True)
            _PRIVATE.append(d)
        return _PRIVATE[0]


def root() -> str:
    """The cache root to use now (see the module docstring)."""
    want = configured_root()
    for d in (want, os.path.join(want, "numba")):
        why = _ensure_dir(d)
        if why:
            alt = _private_root()
            _warn_once((d, why), f"pullback cache directory {d} {why}; using a private temporary cache "
                                 f"{alt} for this process instead (fix the directory, e.g. `chmod 700`, "
                                 "or set PULLBACK_CACHE_DIR to a directory only you can write)")
            return alt
    return want


def module_dir() -> str:
    return os.path.join(root(), "numba")


def private_module_dir() -> str:
    """``numba`` in the private temporary root (made on first use)."""
    return os.path.join(_private_root(), "numba")


def atomic_write(path: str, data: bytes) -> None:
    """Write `data` to `path` atomically with mode 0o600."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _sha(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return None


def _describe(data: bytes, want: bytes) -> str:
    if not data:
        return "is empty"
    if want.startswith(data):
        return "is truncated"
    if data.startswith(want):
        return "has text appended"
    return "differs from the generated source"


class Entry:
    """One cached module ``pb_<hash>.py`` in `directory` and numba's files for it."""

    def __init__(self, directory: str, h: str, src: str):
        self.dir = directory
        self.base = f"pb_{h}"
        self.path = os.path.join(directory, self.base + ".py")
        self.manifest = os.path.join(directory, self.base + ".manifest.json")
        self.src = src.encode()

    @contextlib.contextmanager
    def lock(self):
        """Hold an exclusive lock on this entry against other processes."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            yield
            return
        try:
            fd = os.open(os.path.join(self.dir, self.base + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:   # the directory went away (e.g. removed by hand): go on unlocked
            yield
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)   # releases the lock

    def write_module(self) -> str | None:
        """Make the module file hold exactly the source; what was wrong, or None."""
        try:
            with open(self.path, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            atomic_write(self.path, self.src)
            return None
        except OSError as e:
            data, why = None, f"cannot be read ({e.strerror})"
        if data == self.src:
            return None
        if data is not None:
            why = _describe(data, self.src)
        atomic_write(self.path, self.src)   # a new file: numba's source stamp changes with it
        return f"module {self.path} {why}"

    def numba_files(self, ndir: str) -> list[str]:
        """Numba's index and data files of this entry in its cache path `ndir`."""
        try:
            names = os.listdir(ndir)
        except OSError:
            return []
        pre = self.base + "."
        return sorted(os.path.join(ndir, n) for n in names if n.startswith(pre) and n.endswith(_NUMBA_EXT))

    def _read_manifest(self) -> dict | None:
        try:
            with open(self.manifest, "rb") as fh:
                m = json.loads(fh.read().decode())
            files = m["files"]
            if m.get("module") != hashlib.sha256(self.src).hexdigest() or not all(
                    isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
                return None
            return files
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def verify(self, ndir: str) -> str | None:
        """Check numba's files of this entry against the manifest; what is wrong, or None."""
        files = self.numba_files(ndir)
        if not files:
            return None
        known = self._read_manifest()
        if known is None:
            return f"numba's cache files for {self.base} have no valid manifest ({self.manifest})"
        for p in files:
            if p not in known:
                return f"numba's cache file {p} is not in the manifest"
            if _sha(p) != known[p]:
                return f"numba's cache file {p} does not match the hash in the manifest"
        return None

    def discard(self, ndir: str | None) -> None:
        """Delete numba's files of this entry (in `ndir` and wherever the manifest
        lists them) and the manifest."""
        files = set(self.numba_files(ndir)) if ndir else set()
        known = self._read_manifest() or {}
        files |= {p for p in known if os.path.basename(p).startswith(self.base + ".")}
        for p in sorted(files) + [self.manifest]:
            with contextlib.suppress(OSError):
                os.unlink(p)

    def record(self, ndir: str) -> None:
        """After a compile: numba's files become 0o600 and the manifest lists their hashes."""
        files = self.numba_files(ndir)
        if not files:
            return
        known = {p: h for p, h in (self._read_manifest() or {}).items()
                 if os.path.dirname(p) != ndir and os.path.exists(p)}
        for p in files:
            with contextlib.suppress(OSError):
                os.chmod(p, 0o600)
            h = _sha(p)
            if h is not None:
                known[p] = h
        data = {"version": 1, "module": hashlib.sha256(self.src).hexdigest(), "files": known}
        atomic_write(self.manifest, json.dumps(data, indent=1, sort_keys=True).encode())


# ---------------------------------------------------------------------------
# pullback cache info | clear
# ---------------------------------------------------------------------------

def _own_files(base: str) -> list[str]:
    """Pullback's files under the cache root `base`: ``numba/pb_*`` and
    ``numba/__pycache__/pb_*``, plus numba files its manifests list elsewhere."""
    out: set[str] = set()
    mdir = os.path.join(base, "numba")
    for d in (mdir, os.path.join(mdir, "__pycache__")):
        with contextlib.suppress(OSError):
            out |= {os.path.join(d, n) for n in os.listdir(d)
                    if n.startswith("pb_") and os.path.isfile(os.path.join(d, n))}
    for m in [p for p in out if p.endswith(".manifest.json")]:
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError, AttributeError):
            with open(m, "rb") as fh:
                listed = json.loads(fh.read().decode())["files"]
            out |= {p for p in listed if isinstance(p, str) and os.path.basename(p).startswith("pb_")
                    and p.endswith(_NUMBA_EXT) and os.path.isfile(p)}
    return sorted(out)


def info() -> dict:
    """Location, entries (generated modules), files and bytes of the configured cache;
    `problem` says why it would be refused (None if usable or not made yet)."""
    base = configured_root()
    problem = None
    if os.path.lexists(base):
        problem = unsafe_reason(base)
        sub = os.path.join(base, "numba")
        if problem is None and os.path.lexists(sub):
            problem = unsafe_reason(sub)
            problem = problem and f"its numba folder {problem}"
    files = _own_files(base) if os.path.isdir(base) else []
    size = 0
    for p in files:
        with contextlib.suppress(OSError):
            size += os.stat(p).st_size
    entries = sum(1 for p in files if os.path.dirname(p) == os.path.join(base, "numba")
                  and p.endswith(".py"))
    return {"location": base, "entries": entries, "files": len(files), "bytes": size, "problem": problem}


def clear() -> dict:
    """Delete pullback's files from the configured cache. Returns `info()` as it was
    before, with `removed` (files deleted), `failed` (files that could not be) and
    `refused` (why nothing was touched, or None)."""
    before = dict(info(), removed=0, failed=[], refused=None)
    base = before["location"]
    if not os.path.isdir(base):
        return before
    if _POSIX and os.stat(base).st_uid != os.getuid():
        before["refused"] = f"{base} is owned by uid {os.stat(base).st_uid}, not by the current user"
        return before
    for p in _own_files(base):
        try:
            os.unlink(p)
            before["removed"] += 1
        except FileNotFoundError:
            pass
        except OSError as e:
            before["failed"].append(f"{p}: {e.strerror}")
    with contextlib.suppress(OSError):   # only if now empty
        os.rmdir(os.path.join(base, "numba", "__pycache__"))
    return before
