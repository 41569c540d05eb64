"""Multi-core execution of maps on the numba backend (issue 12 §3, note [numba-parallel]).

Contract:
- `setting(parallel) -> bool | None`: the effective setting of one
  compilation: the user's ``parallel=`` (True, False or None for automatic),
  turned off (False) by ``PULLBACK_PARALLEL=0`` (also ``false``, ``off``,
  ``no``). Any other value of the variable than those and ``1``/``true``/
  ``on``/``yes``/empty is a `PullbackError`. `check_parallel(value, what)`
  validates the keyword.
- `plan(prog, setting) -> Plan`: which `Map` statements run in parallel
  (`Plan.maps`, by ``id`` of the `Let`) and which functions contain one
  (`Plan.funcs`). Each such map becomes a helper running a chunk of its
  iterations (`pysource.maps`, `NumbaDialect.map_helper`), which the caller
  launches on numba's threads (`numba_parfor._pb_parallel_for`; nothing is
  compiled with numba's ``parallel`` option). A map is parallel when the setting is not False,
  it is the outermost map of its function (a map inside it stays sequential),
  its function is neither recursive nor called, directly or not, from inside
  any map's body (numba's threading layers are not all safe for nested
  parallel regions), the map does not call back into Python
  (`pure_callback`) nor a recursive function (its stack checks are the
  calling thread's) and, when the setting is None, the process may run on
  more than one CPU (`usable_cpus`) and its estimated work
  (`work`: width times the cost of its body, the primitives' cost rules with
  loop bounds that are constants multiplied in) is at least `min_work()` and
  at least the cost of its accumulators' private partial sums (`chunks`
  times their elements: zeroing and adding them up).
- `chunks(n, accs=True) -> int`: how many chunks of consecutive iterations a
  parallel map of width `n` is cut into: with accumulators
  ``min(n, numba.config.NUMBA_NUM_THREADS)`` (each chunk has a copy of them),
  without ``min(n, 4 * NUMBA_NUM_THREADS)`` (for load balance). A constant of
  the generated code, not the number of threads active at run time, so
  results do not depend on `numba.set_num_threads` (the partial sums of the
  chunks are added in chunk order).
- `ensure_threading_layer() -> bool`: called before the first parallel
  compile in a process (under the backend's lock). Picks numba's threading
  layer unless the user already chose one (``NUMBA_THREADING_LAYER``) or
  numba already started its threads: ``tbb`` when it loads (thread- and
  fork-safe) and the process may use more than one CPU (`usable_cpus`),
  else ``workqueue``: oneTBB 2022.3 and later hang at interpreter exit when
  a process limited to one CPU first ran TBB from a thread other than the
  main one (numba issue #10556; note [numba-parallel], "One CPU"). Returns whether parallel calls must be
  serialised: the ``workqueue`` layer aborts the process when two threads
  run parallel regions at once, so every call of a module with a parallel
  function then takes `CALL_LOCK`.
"""
from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass, field

from ..errors import PullbackError, short_repr
from ..ir.core import Apply, Const, ForForm, If, Loop, Map, Prim
from ..ir.traverse import exp_scopes, iter_lets

ENV = "PULLBACK_PARALLEL"
_OFF = ("0", "false", "off", "no")
_ON = ("", "1", "true", "on", "yes")

# A map below this estimated work (cost-rule units: about one arithmetic
# operation or element written each, some 1-3 ns) stays sequential under
# parallel=None. Measured on 2 idle cores (note [numba-parallel]): tbb starts and
# joins a parallel region in about 2 us, and a map of estimated work 2.5e4
# already ran 1.8x faster; workqueue (and omp, which spins and slows down badly
# when another process holds a core) takes 50-100 us, a map of work 1e5 ran
# 0.7x as fast and one of 4e5 1.5x.
MIN_WORK = {"tbb": 20_000, "other": 400_000}


def min_work() -> int:
    """`MIN_WORK` for the threading layer parallel maps run on (it is chosen here)."""
    ensure_threading_layer()
    return MIN_WORK["tbb" if _LAYER["name"] == "tbb" else "other"]

CALL_LOCK = threading.Lock()   # serialises parallel calls on a thread-unsafe layer (workqueue)
_LAYER: dict = {"name": None, "serialise": None}
_LAYER_LOCK = threading.Lock()   # plans run outside the backend's lock: choose the layer once


def check_parallel(value, what: str = "parallel"):
    """`value` if it is True, False or None; else a PullbackError."""
    if value is None or value is True or value is False:
        return value
    raise PullbackError(f"{what}: parallel must be True, False or None, got {short_repr(value)}",
                        hint="parallel=None (the default) runs large maps on all cores, parallel=False never, "
                             "parallel=True every outermost map")


def setting(parallel) -> bool | None:
    """The user's `parallel` as the environment leaves it (``PULLBACK_PARALLEL=0``: off)."""
    env = os.environ.get(ENV)
    if env is not None:
        v = env.strip().lower()
        if v in _OFF:
            return False
        if v not in _ON:
            raise PullbackError(f"{ENV}={env!r} is not understood",
                                hint=f"set {ENV}=0 to turn parallel execution off, or unset it")
    return parallel


# ---------------------------------------------------------------------------------------
# which maps run in parallel
# ---------------------------------------------------------------------------------------

@dataclass
class Plan:
    maps: dict = field(default_factory=dict)    # id(Let) -> the Let (kept alive, so ids stay unique)
    funcs: set = field(default_factory=set)      # names of functions holding a parallel map

    def __bool__(self):
        return bool(self.maps)


def chunks(n: int, accs: bool = True) -> int:
    """Chunks of a parallel map of width `n` (see the docstring)."""
    import numba

    return max(1, min(int(n), int(numba.config.NUMBA_NUM_THREADS) * (1 if accs else 4)))


def _acc_elems(e: Map) -> int:
    return sum(max(1, getattr(p.type, "size", 1)) for p in e.acc_params)


def _row_cost(e: Prim, pat) -> int:
    from ..ir.prims import TABLE

    row = TABLE.rows.get(e.op)
    if row is None or row.cost is None:
        return 1
    try:
        return max(1, int(row.cost([a.type for a in e.args], [v.type for v in pat], **dict(e.params))))
    except Exception:  # noqa: BLE001 - an estimate: a cost rule that cannot be evaluated here counts 1
        return 1


def work(body, prog, memo=None, active=None, cost=None) -> int:
    """Estimated work of running `body` once: primitives by their cost rules
    (or `cost(prim, pat)`), loops with a constant bound times their body (other
    loops once), the costlier branch of an `If`, callees' bodies (recursion
    counted once) and maps their width times their body."""
    memo = {} if memo is None else memo
    active = set() if active is None else active
    cost = cost or _row_cost
    total = 0
    for st in body.stmts:
        e = st.exp
        if isinstance(e, Prim):
            total += cost(e, st.pat)
        elif isinstance(e, Loop):
            n = int(e.form.bound.value) if isinstance(e.form, ForForm) and isinstance(e.form.bound, Const) else 1
            total += 1 + max(n, 0) * work(e.body, prog, memo, active, cost)
        elif isinstance(e, If):
            total += 1 + max(work(e.then, prog, memo, active, cost), work(e.else_, prog, memo, active, cost))
        elif isinstance(e, Map):
            total += 1 + int(e.width.value) * work(e.lam.body, prog, memo, active, cost)
        elif isinstance(e, Apply):
            if e.func not in memo:
                if e.func in active:
                    total += 1
                    continue
                active.add(e.func)
                try:
                    memo[e.func] = work(prog.func(e.func).body, prog, memo, active, cost)
                finally:
                    active.discard(e.func)
            total += 1 + memo[e.func]
        else:
            total += 1
    return total


def _called_in_maps(prog) -> set:
    """Functions called, directly or not, from inside some map's body."""
    from ..ir.traverse import call_graph

    graph = call_graph(prog)
    todo = []
    for f in prog.funcs:
        for st in iter_lets(f.body):
            if isinstance(st.exp, Map):
                todo += [s.exp.func for s in iter_lets(st.exp.lam.body) if isinstance(s.exp, Apply)]
    seen: set = set()
    while todo:
        g = todo.pop()
        if g not in seen:
            seen.add(g)
            todo.extend(graph.get(g, ()))
    return seen


def _unsafe_in_threads(body, prog, recursive, seen=None) -> bool:
    """Does `body` (or a function it calls) call back into Python (objmode), or
    call a recursive function (whose stack checks compare against the calling
    thread's stack, note [numba-recursion-depth])?"""
    seen = set() if seen is None else seen
    for st in iter_lets(body):
        e = st.exp
        if isinstance(e, Prim) and e.op == "callback":
            return True
        if isinstance(e, Apply) and e.func not in seen:
            seen.add(e.func)
            if e.func in recursive or _unsafe_in_threads(prog.func(e.func).body, prog, recursive, seen):
                return True
    return False


def _outer_maps(body):
    """The map statements of `body` not inside another map."""
    for st in body.stmts:
        if isinstance(st.exp, Map):
            yield st
            continue
        for _, b in exp_scopes(st.exp):
            yield from _outer_maps(b)


def plan(prog, parallel, cycles=frozenset()) -> Plan:
    """The maps of `prog` that run in parallel under the effective setting
    `parallel` (see `setting`); `cycles`: (caller, callee) calls along
    call-graph cycles (recursive functions stay sequential)."""
    out = Plan()
    if parallel is False or (parallel is None and usable_cpus() < 2):   # one CPU: nothing to gain
        return out
    recursive = {f for edge in cycles for f in edge}
    nested = _called_in_maps(prog)
    memo: dict = {}
    least = None
    for f in prog.funcs:
        if f.name in recursive or f.name in nested:
            continue
        for st in _outer_maps(f.body):
            e: Map = st.exp
            if int(e.width.value) < 2 or _unsafe_in_threads(e.lam.body, prog, recursive):
                continue
            if parallel is None:
                w = 1 + int(e.width.value) * work(e.lam.body, prog, memo)
                if w < MIN_WORK["tbb"] or chunks(int(e.width.value)) * _acc_elems(e) > w:
                    continue
                least = min_work() if least is None else least
                if w < least:
                    continue
            out.maps[id(st)] = st
            out.funcs.add(f.name)
    return out


# ---------------------------------------------------------------------------------------
# threading layer
# ---------------------------------------------------------------------------------------

def _preload_tbb() -> None:
    """pip's `tbb` wheel puts libtbb.so.12 in `sys.prefix`/lib, where the dynamic
    loader does not look; numba opens it by name. Loaded once by its path, the
    name resolves to it."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    for d in {sys.prefix, sys.base_prefix}:
        p = os.path.join(d, "lib", "libtbb.so.12")
        if os.path.exists(p):
            try:
                ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL)
                return
            except OSError:
                pass


def _tbb_loads() -> bool:
    try:
        from numba.np.ufunc import parallel as nbp

        _preload_tbb()
        nbp._check_tbb_version_compatible()
        from numba.np.ufunc import tbbpool  # noqa: F401
        return True
    except Exception:  # noqa: BLE001 - any failure: tbb is not usable here
        return False


def _cgroup_quota() -> float | None:
    """CPUs allowed by a cgroup CPU quota (v2 ``cpu.max``, v1 CFS quota), None without one."""
    for path, period_path in (("/sys/fs/cgroup/cpu.max", None),
                              ("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cpu/cpu.cfs_period_us")):
        try:
            with open(path) as f:
                fields = f.read().split()
            if period_path is not None:
                with open(period_path) as f:
                    fields.append(f.read().strip())
            quota, period = fields[0], float(fields[1])
            if quota == "max" or float(quota) <= 0 or period <= 0:
                return None
            return float(quota) / period
        except (OSError, ValueError, IndexError):
            continue
    return None


def usable_cpus() -> int:
    """CPUs this process can run on at once: its CPU affinity, capped by a
    cgroup CPU quota (rounded down, at least 1)."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    q = _cgroup_quota()
    if q is not None:
        n = min(n, int(q))
    return max(1, n)


def ensure_threading_layer() -> bool:
    """Start numba's threads on a layer chosen as the module docstring says;
    returns whether parallel calls must be serialised (cached per process)."""
    if _LAYER["serialise"] is not None:
        return _LAYER["serialise"]
    with _LAYER_LOCK:
        if _LAYER["serialise"] is None:
            _choose_layer()
    return _LAYER["serialise"]


def _choose_layer() -> None:
    import numba
    from numba.np.ufunc import parallel as nbp

    if not nbp._is_initialized and str(numba.config.THREADING_LAYER).lower() == "default" \
            and not os.environ.get("NUMBA_THREADING_LAYER"):
        numba.config.THREADING_LAYER = "tbb" if usable_cpus() > 1 and _tbb_loads() else "workqueue"
    try:
        nbp._launch_threads()
    except ValueError:   # the layer the user named does not load: numba's own fallback
        numba.config.THREADING_LAYER = "workqueue"
        nbp._launch_threads()
    name = numba.threading_layer()
    _LAYER["name"], _LAYER["serialise"] = name, name == "workqueue"


def threading_layer() -> str | None:
    """The threading layer parallel maps run on (None before the first parallel compile)."""
    return _LAYER["name"]
