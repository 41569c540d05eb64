"""Test-session setup for pullback.

- Puts ``src`` on ``sys.path`` when pullback is not installed.
- Sets ``PULLBACK_CHECKS=1`` so the IR type checker runs after every pass.
- Sets ``PULLBACK_BACKEND=pysource`` unless it is set: tests that do not name
  a backend test semantics, and pysource runs them without compiling. The
  numba backend (the default for users) has its own tests, which name it:
  tests/backends/test_numba.py, the corpus agreement tests in
  tests/test_corpus.py and the default-backend tests in tests/test_api.py.
  ``PULLBACK_BACKEND=numba make test-all`` runs everything on numba.
- Sets ``PULLBACK_TIERED=0`` unless it is set: numba's tests compile in the
  test's process, so that what they check is numba's code; tiered compilation
  (note [tiered-compile]) has its own tests, tests/backends/test_tiered.py.
- Registers the ``slow`` marker (deselect with ``-m 'not slow'``).
- Registers Hypothesis profiles: ``default`` (deadline off) and ``ci``
  (derandomized); pick one with ``HYPOTHESIS_PROFILE=ci``.
"""
from __future__ import annotations

import importlib.util
import os
import sys

_SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
if importlib.util.find_spec("pullback") is None and os.path.isdir(_SRC):
    sys.path.insert(0, _SRC)

os.environ["PULLBACK_CHECKS"] = "1"
os.environ.setdefault("PULLBACK_BACKEND", "pysource")
os.environ.setdefault("PULLBACK_TIERED", "0")

if importlib.util.find_spec("hypothesis") is not None:   # a dev dependency: no profiles without it
    from hypothesis import HealthCheck, settings

    settings.register_profile("default", deadline=None)
    settings.register_profile("ci", deadline=None, derandomize=True, print_blob=True,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long-running tests (deselect with -m 'not slow')")
