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
