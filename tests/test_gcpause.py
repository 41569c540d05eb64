"""The collector paused while pullback stages, transforms and compiles (`pullback.gcpause`,
note [compile-time], "The collector"): pauses nest and overlap across threads (the collector
stays off until the last holder exits), a user's own `gc.disable()` survives, the policy
variable keeps it running, and staging and the backend's passes run paused."""
import gc
import threading

import numpy as np
import pytest

import pullback as pb
from pullback import gcpause


@pytest.fixture
def _gc_restored(monkeypatch):
    was = gc.isenabled()
    monkeypatch.delenv("PULLBACK_COMPILE_GC", raising=False)
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def test_pauses_nest_and_an_exception_resumes(_gc_restored):
    with gcpause.paused():
        assert not gc.isenabled()
        with gcpause.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()           # an inner exit does not resume it
    assert gc.isenabled()
    with pytest.raises(ValueError), gcpause.paused():
        raise ValueError("x")
    assert gc.isenabled()


def test_overlapping_pauses_on_two_threads(_gc_restored):
    entered, leave_a, a_left = threading.Event(), threading.Event(), threading.Event()

    def a():
        with gcpause.paused():
            entered.set()
            leave_a.wait(10)
        a_left.set()

    t = threading.Thread(target=a)
    t.start()
    entered.wait(10)
    with gcpause.paused():
        leave_a.set()
        a_left.wait(10)
        assert not gc.isenabled()           # the other thread's exit left this pause in force
    t.join(10)
    assert gc.isenabled()


def test_the_policy_and_a_user_who_disabled_it(_gc_restored, monkeypatch):
    monkeypatch.setenv("PULLBACK_COMPILE_GC", "1")
    assert not gcpause.collector_paused()
    with gcpause.paused():
        assert gc.isenabled()
    monkeypatch.delenv("PULLBACK_COMPILE_GC")
    gc.disable()
    with gcpause.paused():
        assert not gc.isenabled()
    assert not gc.isenabled()               # the user's choice survives


def test_staging_and_the_passes_run_paused(_gc_restored, monkeypatch):
    from pullback import api, frontend

    seen, stage, runner = [], frontend.stage, api._runner

    def spy_stage(*a, **k):
        seen.append(("stage", gc.isenabled()))
        return stage(*a, **k)

    def spy_runner(*a, **k):
        seen.append(("runner", gc.isenabled()))
        return runner(*a, **k)

    monkeypatch.setattr(frontend, "stage", spy_stage)
    monkeypatch.setattr(api, "_runner", spy_runner)

    def f(x):
        return np.sum(np.sin(x) * x)

    x = np.linspace(0.0, 1.0, 5)
    assert pb.grad(f, backend="pysource")(x) == pytest.approx(np.sin(x) + x * np.cos(x))
    assert seen == [("stage", False), ("runner", False)]
    assert gc.isenabled()
