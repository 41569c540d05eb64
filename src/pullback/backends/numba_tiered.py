"""Tiered compilation: a first result without waiting for numba (note
[tiered-compile] in docs/design.md).

numba takes seconds to minutes for a large generated module (note
[compile-time]); the pysource backend runs the same program as NumPy code
after a few hundred milliseconds. So a cold compile of a large module is a
job for one of this process's compile workers (`numba_worker` processes,
each compiling jobs one after another into numba's verified disk cache; a job
that arrives while every worker is busy gets a new one, up to
`max_workers()`: ``PULLBACK_COMPILE_WORKERS``, by default one per core, at
most `MAX_WORKERS`), while calls run on
pysource; the first call after the job finishes loads the machine code from
the cache and every later call runs it.

Contract:
- `tiered(prog, fname, attempts, ptypes, sigs, source_prog) -> Tiered |
  None`: a tiered entry when tiering applies, else None (the caller compiles
  as before); `prog` is the module's program, `source_prog` the one pysource
  runs (before the numba-only passes). Tiering applies when
  ``PULLBACK_TIERED`` is not ``0`` (default on), the module is cached on
  disk (no mutual recursion), runs no map in parallel, the program has no
  recursion (pysource's recursion limit differs from numba's stack) and
  calls no user Python code (`pb.pure_callback`: pysource runs on a helper
  thread that may be abandoned), the module has at least ``PULLBACK_TIER_LINES`` lines (default `TIER_LINES`),
  pysource's run is not expected to take longer than numba's compile
  (`interpreted_steps` at most `STEPS_PER_LINE` per line), numba's files for
  it are not on disk yet (a cold compile), the cache directory is the one
  configured (not a private fallback the worker would not share), the
  process is not a frozen application (whose executable would start the
  application again) and a worker process starts.
  `attempts`: `[(Spec, on_fail)]` in order of preference (a shape-generic
  module, then the specialised one; `on_fail()` records a failed attempt),
  `sigs[i]`: numba's signature for attempt i, `ptypes`: the parameters'
  numba types.
- `Tiered(*leaves) -> list`: the numba entry's convention. While the job
  runs, each call runs pysource on copies of its arguments in a helper
  thread and returns that result, unless the job finishes first: then the
  pysource run is abandoned (an asynchronous exception in its thread) and
  the call runs numba's code. A pysource run that raises a `PullbackError`
  (the program's own located errors, which numba's code raises alike)
  raises it; any other exception is pysource's limit, and the call waits for
  numba's code. A job that failed (numba cannot compile the
  module, or the worker died) makes the next call compile in this process,
  which raises the same errors as an untiered compile. `tier` says which
  code runs now ("pysource" or "numba"); `spec` is None until then (the warm
  cache stores only compiled entries: `when_compiled(fn)` defers its write).
- `pending()`: whether some entry still runs pysource;
  `worker_cpu_seconds()`: the CPU time of this process's workers.
- `wait_for_compiles(timeout=None) -> bool`: wait for this process's jobs
  and switch their entries to numba's code; False on timeout. A compile
  error surfaces here or at the next call.
- A worker's process starts with a job and stops after `IDLE_SECONDS`
  without one. When this process exits, a job in progress goes on and fills
  the cache for the next process (its reply goes nowhere; the worker then
  reads the end of its input and exits); numba's files of a compile that did
  not finish have no manifest entry, so they are never loaded. A forked
  child compiles its pending entries itself.
- Thread safety: the switch takes the entry's lock; pysource runs are
  independent; jobs and the workers are guarded by one module lock.
"""
from __future__ import annotations

import ctypes
import json
import os
import pickle
import queue
import subprocess
import sys
import threading
import weakref

TIER_LINES = 30
STEPS_PER_LINE = 5000   # pysource runs ~0.2-1 us per statement, numba compiles ~5-25 ms per line
UNKNOWN_TRIPS = 1000
IDLE_SECONDS = 60.0
MAX_WORKERS = 2   # a primal and its gradient side by side; each worker compiles numba's library code again
_ENV_PREFIXES = ("PULLBACK_", "NUMBA_")
_LOCK = threading.Lock()
_JOBS: set = set()      # jobs not finished yet
_POOL = None
_PENDING: "weakref.WeakSet[Tiered]" = weakref.WeakSet()


def enabled() -> bool:
    return os.environ.get("PULLBACK_TIERED", "1") != "0"


def min_lines() -> int:
    raw = os.environ.get("PULLBACK_TIER_LINES")
    if raw is None:
        return TIER_LINES
    try:
        return max(0, int(raw))
    except ValueError:
        from ..errors import PullbackError

        raise PullbackError(f"PULLBACK_TIER_LINES must be a whole number of lines, got {raw!r}",
                            hint="unset it for the default of %d lines" % TIER_LINES) from None


class _Abandoned(BaseException):
    """Raised asynchronously in a pysource run whose result is no longer wanted."""


class _Job:
    """One background compile: its payload and, once `done`, `ok` (the index of
    the attempt compiled, None if it failed) and `error`."""

    def __init__(self, payload: bytes):
        self.payload = payload
        # the worker compiles under the submitting call's settings (cache directory, LLVM level, ...)
        self.env = {k: v for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES)}
        self.done = threading.Event()
        self.ok = None
        self.error = None
        self.worker = None   # the pid of the worker process that answered
        self._waiters: set = set()
        with _LOCK:
            _JOBS.add(self)

    def finish(self, ok, error) -> None:
        with _LOCK:
            self.ok, self.error = ok, error
            _JOBS.discard(self)
            self.done.set()
            for w in self._waiters:
                w.set()

    def notify(self, wake: threading.Event, on: bool) -> None:
        """Set `wake` when the job finishes (at once if it has)."""
        with _LOCK:
            if on:
                self._waiters.add(wake)
                if self.done.is_set():
                    wake.set()
            else:
                self._waiters.discard(wake)


class _Worker:
    """One compile worker: a `numba_worker` process and the thread that feeds it
    jobs from the pool's queue one after another (numba's library code compiled
    for one job is reused by the next). The process starts with a job and stops
    after `IDLE_SECONDS` without one, or when this process exits (its stdin
    closes)."""

    def __init__(self, pool: "_Pool"):
        self.pool = pool
        self.proc = None
        self.env = None   # the PULLBACK_/NUMBA_ variables the process runs with
        self.busy = False
        self.cpu_past = self.cpu_now = 0.0   # CPU seconds of stopped processes, of the current one
        threading.Thread(target=self._loop, daemon=True, name="pullback-compile").start()

    def spawn(self, job_env: dict) -> None:
        """Start the process under `job_env` (call with `_LOCK` held); raises
        OSError when it cannot start."""
        import pullback

        env = {k: v for k, v in os.environ.items() if not k.startswith(_ENV_PREFIXES)}
        env.update(job_env)
        env["PULLBACK_TIERED"] = "0"
        src_root = os.path.dirname(os.path.dirname(os.path.abspath(pullback.__file__)))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (src_root, env.get("PYTHONPATH")) if p)
        # stderr is not a pipe: a worker that outlives this process must not die writing a warning
        self.proc = subprocess.Popen([sys.executable, "-m", "pullback.backends.numba_worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env)
        self.env = job_env

    def live(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _loop(self):
        while True:
            try:
                job = self.pool.jobs.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                self.stop()
                continue
            self.busy = True
            try:
                if self.env != job.env:
                    self.stop()
                with _LOCK:
                    if not self.live():
                        self.spawn(job.env)
                    proc = self.proc
                proc.stdin.write(len(job.payload).to_bytes(8, "little") + job.payload)
                proc.stdin.flush()
                line = proc.stdout.readline()
                if not line:
                    raise EOFError(f"the compile worker exited with status {proc.wait()} without a reply")
                reply = json.loads(line)
                self.cpu_now = float(reply.get("cpu") or 0.0)
                job.worker = proc.pid
                job.finish(reply.get("ok"), reply.get("error"))
            except Exception as e:  # noqa: BLE001 - any failure means: compile in the calling process
                self.stop(kill=True)
                job.finish(None, f"{type(e).__name__}: {e}")
            finally:
                self.busy = False

    def stop(self, kill: bool = False) -> None:
        with _LOCK:
            proc, self.proc = self.proc, None
            self.cpu_past, self.cpu_now = self.cpu_past + self.cpu_now, 0.0
        if proc is None:
            return
        try:
            proc.stdin.close()   # the worker exits at the end of its input
            if kill:
                proc.kill()
            proc.wait(5)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass


class _Pool:
    """This process's compile workers, at most `max_workers()`, sharing one
    queue of jobs: a job that arrives while every worker is busy gets a new
    worker, so a primal and its gradient compile side by side on two cores."""

    def __init__(self):
        self.jobs: queue.Queue = queue.Queue()
        self.workers: list[_Worker] = []

    def submit(self, job: _Job, limit: int) -> None:
        """Queue `job`; raises OSError when no worker process can be started."""
        with _LOCK:
            free = [w for w in self.workers if not w.busy]
            if len(free) <= self.jobs.qsize() and len(self.workers) < limit:
                free = [_Worker(self)]
                self.workers.append(free[0])
            if free and not free[0].live():
                free[0].spawn(job.env)   # now: a process that cannot start means no tiering
        self.jobs.put(job)


def _pool() -> _Pool:
    global _POOL
    with _LOCK:
        if _POOL is None:
            _POOL = _Pool()
        return _POOL


def max_workers() -> int:
    """How many compile workers run at once: ``PULLBACK_COMPILE_WORKERS``, by
    default one per core this process may run on, at most `MAX_WORKERS`."""
    raw = os.environ.get("PULLBACK_COMPILE_WORKERS")
    if raw is None:
        try:
            cores = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cores = os.cpu_count() or 1
        return max(1, min(MAX_WORKERS, cores))
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        from ..errors import PullbackError

        raise PullbackError(f"PULLBACK_COMPILE_WORKERS must be a whole number of processes >= 1, got {raw!r}",
                            hint="unset it for one per core, at most %d" % MAX_WORKERS)
    return n


def worker_cpu_seconds() -> float:
    """CPU seconds this process's compile workers spent, as of their last
    finished jobs (benchmarks count them with the process's own)."""
    pool = _POOL
    return 0.0 if pool is None else sum(w.cpu_past + w.cpu_now for w in list(pool.workers))


def _shutdown() -> None:
    """Stop this process's workers (tests; a later job starts new ones)."""
    if _POOL is not None:
        for w in list(_POOL.workers):
            w.stop()


def _forget_workers():
    """In a forked child: the parent's workers are not this process's children,
    so its pending entries compile in this process at their next call."""
    global _LOCK, _POOL
    _LOCK = threading.Lock()
    _POOL = None
    for job in list(_JOBS):
        job.ok, job.error = None, "the process forked while the worker ran"
        job.done.set()
    _JOBS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_workers)


def _abandon(thread: threading.Thread) -> None:
    if thread.is_alive() and thread.ident is not None:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(_Abandoned))


def _copy(a):
    import numpy as np

    return a.copy() if isinstance(a, np.ndarray) else a


class Tiered:
    """A compiled entry that runs pysource until numba's code is ready (see the module docstring)."""

    parallel = False

    def __init__(self, prog, fname, attempts, ptypes, job):
        self._prog, self._fname = prog, fname
        self._attempts, self._ptypes = attempts, ptypes
        self._job = job
        self._numba = None
        self._pysource = None
        self._lock = threading.RLock()
        self.source = attempts[-1][0].src
        self.__name__ = attempts[-1][0].name
        self.compile_seconds = None
        self.cache_hit = False
        self._then = []
        _PENDING.add(self)

    @property
    def spec(self):
        """numba's `Spec` once switched (the warm cache stores it), else None."""
        return None if self._numba is None else self._numba.spec

    def when_compiled(self, fn) -> None:
        """Call `fn()` once numba's code runs (now, if it does)."""
        with self._lock:
            if self._numba is None:
                self._then.append(fn)
                return
        fn()

    @property
    def tier(self) -> str:
        return "numba" if self._numba is not None else "pysource"

    def __call__(self, *args):
        fn = self._numba
        if fn is None:
            if not self._job.done.is_set():
                return self._race(args)
            fn = self.switch()
        return fn(*args)

    def precompile(self, param_types):
        self.switch().precompile(param_types)

    def direct(self, leaves):
        """numba's entry's `direct` caller once it runs; None before (ask again later)."""
        fn = self._numba
        return None if fn is None else fn.direct(leaves)

    def _tier0(self):
        fn = self._pysource
        if fn is None:
            with self._lock:
                if self._pysource is None:
                    from .pysource import compile_prog

                    self._pysource = compile_prog(self._prog, self._fname)
                fn = self._pysource
        return fn

    def _race(self, args):
        wake = threading.Event()
        box = {}

        def attempt():
            try:
                box["out"] = self._tier0()(*[_copy(a) for a in args])
            except _Abandoned:
                return
            except BaseException as e:  # noqa: BLE001 - re-raised in the calling thread
                box["err"] = e
            finally:
                wake.set()

        def run():
            try:
                attempt()
            except _Abandoned:   # arrived while `attempt` was finishing: nothing to report
                pass

        t = threading.Thread(target=run, daemon=True, name="pullback-pysource")
        self._job.notify(wake, True)
        t.start()
        try:
            wake.wait()
        except BaseException:   # e.g. KeyboardInterrupt: the pysource run is not wanted either
            _abandon(t)
            raise
        finally:
            self._job.notify(wake, False)
        if "out" in box:
            return box["out"]
        err = box.get("err")
        if err is not None:
            from ..errors import PullbackError

            if isinstance(err, PullbackError):   # the program's own located error: numba's code raises it too
                raise err
            # anything else is pysource's limit, not the program's: numba's code decides
        else:
            _abandon(t)
        return self.switch()(*args)

    def switch(self):
        """numba's entry, once the worker has finished (call only then, or it
        waits): loaded from the disk cache the worker filled, or, if the worker
        failed, compiled here."""
        from . import numba_backend as nb

        self._job.done.wait()
        with self._lock:
            if self._numba is not None:
                return self._numba
            ok = self._job.ok
            if isinstance(ok, int) and 0 <= ok < len(self._attempts):
                for _spec, on_fail in self._attempts[:ok]:
                    if on_fail is not None:
                        on_fail()
                fn = nb.build(self._attempts[ok:ok + 1], self._ptypes, precompile=True)
            else:   # the worker failed: the same compile (and errors) as without tiering
                fn = nb.build(self._attempts, self._ptypes, precompile=True)
            self.compile_seconds, self.cache_hit = fn.compile_seconds, fn.cache_hit
            self.source = fn.source
            self._numba = fn
            _PENDING.discard(self)
            then, self._then = self._then, []
        for cb in then:
            cb()
        return fn


def interpreted_steps(prog) -> float:
    """A static estimate of the statements pysource would execute for one call of
    `prog`'s entry: each statement counts 1, a loop its trip count (a constant
    bound, else `UNKNOWN_TRIPS`) times its body, a map its width times its body,
    a branch its larger side, a call the callee's estimate. Maps that pysource
    vectorises count as loops, so the estimate errs high (towards not tiering)."""
    from ..ir.core import Apply, Const, ForForm, If, Loop, Map
    from ..ir.traverse import exp_scopes

    def trips(a):
        if isinstance(a, Const):
            try:
                return max(0, int(a.value))
            except (TypeError, ValueError):
                pass
        return UNKNOWN_TRIPS

    funcs, memo = {f.name: f for f in prog.funcs}, {}

    def body(b):
        return sum(exp(st.exp) for st in b.stmts)

    def exp(e):
        if isinstance(e, If):
            return 1 + max(body(e.then), body(e.else_))
        if isinstance(e, Loop):
            n = trips(e.form.bound) if isinstance(e.form, ForForm) else UNKNOWN_TRIPS
            return 1 + n * (1 + body(e.body))
        if isinstance(e, Map):
            return 1 + trips(e.width) * (1 + body(e.lam.body))
        if isinstance(e, Apply):
            return 1 + func(e.func)
        scopes = exp_scopes(e)   # a combinator of `pullback.reducers` (scan, hist, ...): width unknown here
        return 1 + UNKNOWN_TRIPS * sum(body(b) for _, b in scopes) if scopes else 1

    def func(name):
        if name not in memo:
            memo[name] = UNKNOWN_TRIPS   # a cycle (excluded by the caller) counts as unknown
            if name in funcs:
                memo[name] = body(funcs[name].body)
        return memo[name]

    return func(prog.entry)


def _calls_back(prog) -> bool:
    """Whether `prog` calls user Python code (`pb.pure_callback`), which must
    not run on a helper thread that may be abandoned."""
    from ..ir.core import Prim
    from ..ir.traverse import iter_lets

    return any(isinstance(st.exp, Prim) and st.exp.op == "callback" for f in prog.funcs for st in iter_lets(f.body))


def _start(prog, attempts, sigs, source_prog):
    """The job compiling this module, queued for the worker, or None when
    tiering does not apply."""
    if not enabled() or getattr(sys, "frozen", False) or not sys.executable:
        return None   # a frozen application's executable is not a Python that runs the worker
    specs = [s for s, _ in attempts]
    lines = specs[-1].src.count("\n")
    if any(not s.cache or s.par for s in specs) or lines < min_lines():
        return None
    limit = max_workers()   # a bad PULLBACK_COMPILE_WORKERS is the user's error, raised before any job exists
    from .numba_cache import Entry, module_dir
    from .numba_dialect import cycle_edges

    try:
        if (cycle_edges(prog) or _calls_back(source_prog)
                or interpreted_steps(source_prog) > STEPS_PER_LINE * max(lines, 1)):
            return None
    except Exception:  # noqa: BLE001 - tiering is only a speed-up: a program these analyses miss compiles here
        return None
    from .numba_cache import configured_root, root

    if root() != configured_root():
        return None   # the cache directory was refused: the worker would compile into its own private one
    d = module_dir()
    if any(os.path.exists(Entry(d, s.h, s.src).manifest) for s in specs):
        return None   # compiled before: numba loads it from its cache
    job = _Job(pickle.dumps({"attempts": [(s.src, s.h, s.cache, s.dname, sig) for s, sig in zip(specs, sigs)]}))
    try:
        _pool().submit(job, limit)
    except (OSError, ValueError, TypeError, subprocess.SubprocessError):
        job.finish(None, "no compile worker")
        return None
    return job


def tiered(prog, fname, attempts, ptypes, sigs, source_prog):
    """A `Tiered` entry, or None when tiering does not apply (module docstring)."""
    job = _start(prog, attempts, sigs, source_prog)
    if job is None:
        return None
    return Tiered(source_prog, fname, attempts, ptypes, job)


def pending() -> bool:
    """Whether some entry of this process still runs pysource (its worker
    running, or finished and not switched to yet)."""
    return bool(len(_PENDING))


def wait_for_compiles(timeout: float | None = None) -> bool:
    """Wait for every background compile of this process and switch its entry
    to numba's code; False if `timeout` seconds passed first."""
    import time

    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not timeout >= 0):
        from ..errors import PullbackError

        raise PullbackError(f"wait_for_compiles: timeout must be None or a number of seconds >= 0, got {timeout!r}",
                            hint="pass e.g. timeout=60, or nothing to wait until every compile is done")
    end = None if timeout is None else time.monotonic() + timeout
    while True:
        with _LOCK:
            live = list(_JOBS)
        for w in live:
            left = None if end is None else max(0.0, end - time.monotonic())
            if not w.done.wait(left):
                return False
        with _LOCK:
            if not _JOBS:
                break
    for t in list(_PENDING):
        t.switch()
    return True
