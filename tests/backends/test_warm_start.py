"""Issue 13 §2, warm start: a new process with a populated cache runs a
transformed function without staging it (the warm cache, note [warm-start]),
and every change that could change the staged program makes it stage again
with the right result: a helper's source, a global's value, a closure's value,
a version, a new shape. Also: numba's registries load without SciPy's BLAS when
the module calls none, and a module that calls BLAS still runs warm.

Each test runs child processes on one private cache directory; a child counts
calls of `pullback.frontend.stage` (the staging entry point) and reports the
warm cache's counters. No timings here (benchmarks/warm_start.py has them)."""
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("numba")

_SRC = str(pathlib.Path(__file__).resolve().parents[2] / "src")

_PROG = textwrap.dedent("""
    import numpy as np
    import helpers

    SCALE = 2.0


    class Config:
        scale = 4.0


    CFG = Config()


    def f_plain(x):
        return np.sum(np.sin(x) * x)


    def f_helper(x):
        return np.sum(helpers.h(x))


    def f_global(x):
        return np.sum(x * SCALE)


    def make_closure(c):
        def f_closure(x):
            return np.sum(x * c)
        return f_closure


    def f_shape(x):
        return np.sum(x * x)


    def f_static(x, k):
        return np.sum(x ** k)


    def f_refused(x):
        return np.sum(x * CFG.scale)


    def f_matmul(A, x):
        return np.sum(np.tanh(A @ x))


    def f_const(x):
        t = np.arange(5000.0) / 5000.0    # a large constant: a hidden argument stored beside the entry
        return np.sum(x * t)
""")

_HELPERS = textwrap.dedent("""
    import numpy as np


    def h(x):
        return x * {c}
""")

_CHILD = textwrap.dedent("""
    import json, sys
    sys.dont_write_bytecode = True
    cfg = json.loads(sys.argv[1])
    sys.path.insert(0, cfg["src"])
    sys.path.insert(0, cfg["dir"])
    import numpy as np
    import pullback as pb
    import pullback.frontend as fe

    count = [0]
    real = fe.stage

    def stage(*a, **k):
        count[0] += 1
        return real(*a, **k)

    fe.stage = stage
    if cfg.get("version"):
        pb.__version__ = cfg["version"]
    import prog
    prog.SCALE = cfg["scale"]
    x = np.linspace(0.1, 0.9, 5)
    A = np.arange(15.0).reshape(3, 5) / 20
    cases = {
        "plain": lambda: pb.grad(prog.f_plain)(x),
        "helper": lambda: pb.grad(prog.f_helper)(x),
        "global": lambda: pb.jit(prog.f_global)(x),
        "closure": lambda: pb.grad(prog.make_closure(cfg["c"]))(x),
        "shape": lambda: pb.grad(prog.f_shape)(np.linspace(0.1, 0.9, cfg["n"])),
        "jvp": lambda: pb.jvp(prog.f_plain, (x,), (np.ones(5),)),
        "static": lambda: pb.jit(prog.f_static, static_argnums=1)(x, 3),
        "refused": lambda: pb.grad(prog.f_refused)(x),
        "matmul": lambda: pb.grad(prog.f_matmul, argnums=1)(A, x),
        "const": lambda: pb.grad(prog.f_const)(np.linspace(0.1, 0.9, 5000)),
    }
    out = {}
    for name in cfg["cases"]:
        if name == "matmul":
            out["linalg_before_matmul"] = "scipy.linalg" in sys.modules
        n0 = count[0]
        v = cases[name]()
        from pullback.backends.numba_backend import last_cache_hit
        out[name] = {"value": np.asarray(v, dtype=float).tolist(), "staged": count[0] - n0,
                     "numba_hit": bool(last_cache_hit())}
    from pullback.backends import warm_cache
    print(json.dumps({"cases": out, "stats": warm_cache.STATS, "env": warm_cache.environment()}))
""")


def _expected(name, scale=2.0, c=1.5, n=5, h=2.0):
    x = np.linspace(0.1, 0.9, 5)
    if name == "plain":
        return np.sin(x) + x * np.cos(x)
    if name == "helper":
        return np.full(5, h)
    if name == "global":
        return np.sum(x * scale)
    if name == "closure":
        return np.full(5, c)
    if name == "shape":
        return 2 * np.linspace(0.1, 0.9, n)
    if name == "jvp":
        return np.array([np.sum(np.sin(x) * x), np.sum(np.sin(x) + x * np.cos(x))])
    if name == "static":
        return np.sum(x ** 3)
    if name == "refused":
        return np.full(5, 4.0)
    if name == "const":
        return np.arange(5000.0) / 5000.0
    if name == "matmul":
        A = np.arange(15.0).reshape(3, 5) / 20
        return A.T @ (1 - np.tanh(A @ x) ** 2)
    raise KeyError(name)


class _Project:
    """A user's program on disk and a private cache; `run` is one new process."""

    def __init__(self, tmp: pathlib.Path):
        self.dir = tmp / "user"
        self.dir.mkdir()
        (self.dir / "prog.py").write_text(_PROG)
        self.set_helper(2.0)
        (tmp / "child.py").write_text(_CHILD)
        self.child = tmp / "child.py"
        self.env = dict(os.environ, PULLBACK_CACHE_DIR=str(tmp / "cache"), PULLBACK_BACKEND="numba",
                        PYTHONDONTWRITEBYTECODE="1")
        self.env.pop("PULLBACK_WARM_CACHE", None)

    def fresh_cache(self, attempt):
        self.env["PULLBACK_CACHE_DIR"] = str(self.dir.parent / f"cache{attempt}")

    def set_helper(self, c):
        (self.dir / "helpers.py").write_text(_HELPERS.format(c=repr(float(c))))

    def run(self, cases, scale=2.0, c=1.5, n=5, version=None):
        cfg = {"src": _SRC, "dir": str(self.dir), "cases": list(cases), "scale": scale, "c": c, "n": n,
               "version": version}
        p = subprocess.run([sys.executable, str(self.child), json.dumps(cfg)], env=self.env, capture_output=True,
                           text=True, timeout=600)
        assert p.returncode == 0, p.stderr[-3000:]
        return json.loads(p.stdout.strip().splitlines()[-1])

    def pair(self, cases, first=None, **kw):
        """A populating run (`first`: its settings, else `kw`) and a second run;
        run again if pullback's own files changed in between (a concurrent edit
        changes every key, by design)."""
        for attempt in range(3):
            self.fresh_cache(attempt)
            a = self.run(cases, **(first if first is not None else kw))
            b = self.run(cases, **kw)
            if a["env"] == b["env"]:
                return a, b
        pytest.skip("pullback's sources kept changing during the test")


def _check(out, name, **kw):
    np.testing.assert_allclose(out["cases"][name]["value"], _expected(name, **kw), rtol=1e-12, atol=1e-12)


@pytest.mark.slow
def test_second_process_does_not_stage(tmp_path):
    cases = ["plain", "helper", "global", "closure", "shape", "jvp", "static", "const"]
    proj = _Project(tmp_path)
    a, b = proj.pair(cases)
    for name in cases:
        assert a["cases"][name]["staged"] >= 1, name
        assert b["cases"][name]["staged"] == 0, (name, b)
        _check(b, name)
    assert a["stats"]["stored"] == len(cases) and a["stats"]["hit"] == 0
    assert b["stats"]["hit"] == len(cases) and b["stats"]["miss"] == 0 and b["stats"]["stored"] == 0


def test_constants_keep_their_flags(tmp_path):
    """A constant array is read-only when staged; the warm entry restores it read-only,
    so numba finds the signature it compiled and the second process compiles nothing
    (it compiled a second, writable signature before)."""
    proj = _Project(tmp_path)
    a, b = proj.pair(["const"])
    assert not a["cases"]["const"]["numba_hit"]
    assert b["cases"]["const"]["staged"] == 0 and b["cases"]["const"]["numba_hit"], b
    _check(b, "const")


@pytest.mark.slow
def test_warm_start_small_program(tmp_path):
    """The fast suite's check: one small gradient, two processes."""
    proj = _Project(tmp_path)
    a, b = proj.pair(["plain"])
    assert a["cases"]["plain"]["staged"] == 1 and b["cases"]["plain"]["staged"] == 0
    _check(b, "plain")


@pytest.mark.slow
def test_each_change_restages(tmp_path):
    """Helper source, global value, closure value, shape: each restages with the
    new result; an unchanged function in the same process does not."""
    cases = ["plain", "helper", "global", "closure", "shape"]
    proj = _Project(tmp_path)
    for attempt in range(3):
        proj.fresh_cache(attempt)
        proj.set_helper(2.0)
        a = proj.run(cases)
        proj.set_helper(3.0)
        b = proj.run(cases, scale=5.0, c=-0.5, n=7)
        if a["env"] == b["env"]:
            break
    else:
        pytest.skip("pullback's sources kept changing during the test")
    assert b["cases"]["plain"]["staged"] == 0
    for name in ("helper", "global", "closure", "shape"):
        assert b["cases"][name]["staged"] >= 1, name
    _check(b, "plain")
    _check(b, "helper", h=3.0)
    _check(b, "global", scale=5.0)
    _check(b, "closure", c=-0.5)
    _check(b, "shape", n=7)
    # and the old entries are still there: back to the first settings, nothing stages
    proj.set_helper(2.0)
    c = proj.run(cases)
    if c["env"] == a["env"]:
        assert all(c["cases"][n]["staged"] == 0 for n in cases), c


@pytest.mark.slow
def test_version_change_restages(tmp_path):
    """A process that reports another pullback version stages again; a third
    process with the first version finds the first entry."""
    proj = _Project(tmp_path)
    for attempt in range(3):
        proj.fresh_cache(attempt)
        a = proj.run(["plain"])
        b = proj.run(["plain"], version="0.0.0-other")
        c = proj.run(["plain"])
        if a["env"] == c["env"]:
            break
    else:
        pytest.skip("pullback's sources kept changing during the test")
    assert b["env"] != a["env"]
    assert b["cases"]["plain"]["staged"] == 1 and c["cases"]["plain"]["staged"] == 0
    _check(b, "plain")
    _check(c, "plain")


@pytest.mark.slow
def test_unfingerprintable_global_refuses(tmp_path):
    """A global instance of a user class has no fingerprint: the function stages
    in every process, correctly."""
    proj = _Project(tmp_path)
    a, b = proj.pair(["refused"])
    assert a["cases"]["refused"]["staged"] == 1 and b["cases"]["refused"]["staged"] == 1
    assert b["stats"]["refused"] >= 1 and b["stats"]["hit"] == 0
    _check(b, "refused")


@pytest.mark.slow
def test_blas_loaded_only_when_the_module_calls_it(tmp_path):
    proj = _Project(tmp_path)
    a, b = proj.pair(["plain", "matmul"])
    assert b["cases"]["linalg_before_matmul"] is False
    assert b["cases"]["matmul"]["staged"] == 0
    _check(b, "matmul")


# ---------------------------------------------------------------------------
# in-process: fingerprints and entries (fast)
# ---------------------------------------------------------------------------

def _module(tmp_path, name, text):
    """Import `text` as a fresh module `name` from a file in tmp_path."""
    import importlib.util

    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_fingerprint_follows_what_staging_reads(tmp_path):
    from pullback.backends.warm_cache import fingerprint

    src = """
        import numpy as np
        K = 2.0
        T = np.arange(3.0)

        def helper(x):
            return x * K

        def f(x, c=1.0):
            return np.sum(helper(x) + T) * c

        def make(c):
            def g(x):
                return f(x) * c
            return g
    """
    m = _module(tmp_path, "fp_a", src)
    base = fingerprint(m.f)
    assert fingerprint(m.f) == base                       # deterministic
    m.K = 3.0                                             # a global a helper reads
    assert fingerprint(m.f) != base
    m.K = 2.0
    m.T[1] = 7.0                                          # an array's contents
    assert fingerprint(m.f) != base
    m.T[1] = 1.0
    assert fingerprint(m.f) == base
    m.f.__defaults__ = (2.0,)                             # a default value
    assert fingerprint(m.f) != base
    m.f.__defaults__ = (1.0,)
    assert fingerprint(m.make(1.0)) == fingerprint(m.make(1.0))
    assert fingerprint(m.make(1.0)) != fingerprint(m.make(2.0))   # a closure value
    m2 = _module(tmp_path, "fp_b", src.replace("x * K", "x * K + 1.0"))
    assert fingerprint(m2.f) != fingerprint(m.f)          # a helper's code


def test_fingerprint_refuses_what_it_cannot_see(tmp_path):
    from pullback.backends.warm_cache import _Refused, fingerprint

    m = _module(tmp_path, "fp_c", """
        import numpy as np

        class Cfg:
            scale = 2.0

        CFG = Cfg()

        def f(x):
            return np.sum(x) * CFG.scale

        def g(x):
            import math
            return np.sum(x) * math.pi

        def h(x):
            return np.sum(x)
    """)
    with pytest.raises(_Refused):
        fingerprint(m.f)
    with pytest.raises(_Refused):
        fingerprint(m.g)
    fingerprint(m.h)


def test_key_covers_signature_and_transformation(tmp_path):
    import pullback as pb
    from pullback.backends.warm_cache import key_for

    m = _module(tmp_path, "fp_d", """
        import numpy as np

        def f(x, k=2):
            return np.sum(x ** k)
    """)
    j = pb.jit(m.f, backend="numba")
    x = np.ones(3)
    k = key_for(j, (x,), ())
    assert key_for(j, (np.ones(3),), ()) == k
    assert key_for(j, (np.ones(4),), ()) != k                       # shape
    assert key_for(j, (np.ones(3, dtype=np.float32),), ()) != k     # dtype
    assert key_for(j, ((x, x),), ()) != k                           # pytree structure
    js = pb.jit(m.f, backend="numba", static_argnums=1)
    assert key_for(js, (x, 2), (1,)) != key_for(js, (x, 3), (1,))   # a static value
    g1 = pb.grad(m.f, backend="numba")._jit
    g2 = pb.grad(m.f, argnums=(0,), backend="numba")._jit
    keys = {k, key_for(g1, (x,), ()), key_for(g2, (x,), ()), key_for(pb.hessian(m.f, backend="numba")._jit, (x,), ())}
    assert len(keys) == 4                                           # the transformation


def test_damaged_entry_is_a_miss(tmp_path, monkeypatch):
    """An entry whose module does not match its recorded hash, or that is not
    valid JSON, loads nothing."""
    from pullback.backends import warm_cache

    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(tmp_path / "cache"))
    d = tmp_path / "cache" / "numba"
    d.mkdir(parents=True, mode=0o700)
    (tmp_path / "cache").chmod(0o700)
    (d / "pb_0123abcd.py").write_text("print('never run')\n")
    doc = {"format": warm_cache.FORMAT, "key": "k1", "module": "0123abcd", "module_sha256": "0" * 64,
           "cache": True, "dname": "f", "name": "f", "params": [], "rets": [], "par": False, "limit": False,
           "sites": [], "consts": [], "out_tree": ["leaf", [], []], "out_dtypes": []}
    (d / "pb_wk1.warm.json").write_text(json.dumps(doc))
    assert warm_cache._load("k1") is None
    (d / "pb_wk2.warm.json").write_text("{not json")
    assert warm_cache._load("k2") is None
    assert warm_cache._load("k3") is None                          # missing


def test_module_attributes_read_by_a_second_function_count(tmp_path):
    """Two functions read different attributes of one user module: both
    attributes are in the fingerprint of a function that calls both."""
    import sys

    from pullback.backends.warm_cache import fingerprint

    sys.path.insert(0, str(tmp_path))
    try:
        cfg = _module(tmp_path, "fp_cfg", "A = 1.0\nB = 2.0\n")
        sys.modules["fp_cfg"] = cfg
        m = _module(tmp_path, "fp_e", """
            import fp_cfg

            def g(x):
                return x * fp_cfg.B

            def f(x):
                return g(x) + fp_cfg.A
        """)
        base = fingerprint(m.f)
        cfg.B = 3.0
        assert fingerprint(m.f) != base
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("fp_cfg", None)


@pytest.mark.slow
def test_warm_lookups_from_many_threads(tmp_path, monkeypatch):
    """A new jit object whose signature is in the warm cache, first called from
    eight threads at once: every thread gets the right result, nothing stages."""
    import threading

    import pullback as pb
    import pullback.frontend as fe
    from pullback.backends import warm_cache

    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(tmp_path / "cache"))
    m = _module(tmp_path, "fp_threads", """
        import numpy as np

        def f(x):
            return np.sum(np.sin(x) * x)
    """)
    x = np.linspace(0.1, 0.9, 50)
    want = np.sin(x) + x * np.cos(x)
    np.testing.assert_allclose(pb.grad(m.f, backend="numba")(x), want, rtol=1e-13)   # fills the cache
    m.f.__dict__.pop("__pullback_transforms__")            # as in a new process: a new transformation object
    count, real = [0], fe.stage

    def stage(*a, **k):
        count[0] += 1
        return real(*a, **k)

    monkeypatch.setattr(fe, "stage", stage)
    g = pb.grad(m.f, backend="numba")
    hits0 = warm_cache.STATS["hit"]
    out, errs = [None] * 8, []
    barrier = threading.Barrier(8)

    def work(i):
        try:
            barrier.wait()
            out[i] = g(x)
        except Exception as e:  # noqa: BLE001
            errs.append(e)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errs
    for o in out:
        np.testing.assert_allclose(o, want, rtol=1e-13)
    assert count[0] == 0 and warm_cache.STATS["hit"] > hits0
