"""Fixtures shared by the backend tests."""
import os

import pytest


@pytest.fixture(scope="module")
def private_cache(tmp_path_factory):
    """A module's own numba cache directory (PULLBACK_CACHE_DIR), restored after it."""
    old = os.environ.get("PULLBACK_CACHE_DIR")
    os.environ["PULLBACK_CACHE_DIR"] = str(tmp_path_factory.mktemp("pbcache"))
    yield
    if old is None:
        os.environ.pop("PULLBACK_CACHE_DIR", None)
    else:
        os.environ["PULLBACK_CACHE_DIR"] = old


@pytest.fixture
def numba_compiles():
    """The functions numba starts compiling while the test runs: a list of (module name,
    qualified name), filled by a listener on numba's ``numba:compile`` event."""
    from numba.core import event

    compiled = []

    class Listener(event.Listener):
        def on_start(self, e):
            fn = getattr(e.data["dispatcher"], "py_func", None)
            compiled.append((str(getattr(fn, "__module__", "")), getattr(fn, "__qualname__", "")))

        def on_end(self, e):
            return None

    lis = Listener()
    event.register("numba:compile", lis)
    try:
        yield compiled
    finally:
        event.unregister("numba:compile", lis)
